"""The websocket stream ``/ws/v1/stream`` (wire.md §7): who may connect and subscribe, what
they receive, and how a revoked membership ends a subscription.

Driven through ``missionweave.asgi.application`` with ``WebsocketCommunicator``. The stream
reads the log from the database in its own threads, so the tests are transactional.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.test import Client
from rest_framework.test import APIClient

from apps.ledger import write_path
from apps.ledger.write_path import submit_command
from apps.registry import services
from missionweave.asgi import application
from missionweave.protocol.events import event_hash
from tests import factories
from tests.factories import World, mission_body

PATH = "/ws/v1/stream"
IN_MEMORY = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
REDIS_URL = os.environ.get("REDIS_URL", "")
LAYERS = [
    pytest.param(IN_MEMORY, id="in-memory"),
    pytest.param(
        {
            "default": {
                "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
                "CONFIG": {"hosts": [REDIS_URL], "prefix": "mwp-test-stream"},
            }
        },
        id="redis",
        marks=pytest.mark.skipif(not REDIS_URL, reason="REDIS_URL is not set"),
    ),
]
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def in_memory_layer(settings: Any) -> None:
    settings.CHANNEL_LAYERS = IN_MEMORY


@pytest.fixture
def slow_poll(settings: Any) -> None:
    """Make the head poll too slow to matter, so a prompt delivery proves the hint works."""
    settings.MWP_STREAM_POLL_S = 30


def _socket(*headers: tuple[bytes, bytes]) -> WebsocketCommunicator:
    return WebsocketCommunicator(application, PATH, headers=list(headers))


def _bearer(token: str) -> tuple[bytes, bytes]:
    return (b"authorization", f"Bearer {token}".encode())


async def _connected(token: str) -> WebsocketCommunicator:
    socket = _socket(_bearer(token))
    connected, _ = await socket.connect()
    assert connected
    return socket


async def _frames(socket: WebsocketCommunicator, count: int, within: float = 3) -> list[dict]:
    """The next ``count`` frames, each due within ``within`` seconds."""
    return [json.loads(await socket.receive_from(timeout=within)) for _ in range(count)]


@database_sync_to_async
def _create_mission(world: World, mission_id: str) -> dict[str, Any]:
    document = world.w1.command(world.group, "mission.create", mission_body(mission_id))
    return submit_command(group_id=world.group, document=document, caller=world.w1.caller).body


@database_sync_to_async
def _rest_events(world: World, token: str) -> list[dict[str, Any]]:
    client = APIClient()
    response = client.get(
        f"/api/v1/groups/{world.group}/events?after=0&limit=1000",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 200
    return json.loads(response.content)["events"]


# --- the handshake -----------------------------------------------------------------------


@pytest.mark.usefixtures("in_memory_layer")
@pytest.mark.parametrize(
    "headers",
    [
        pytest.param((), id="no credentials"),
        pytest.param(((b"authorization", b"Bearer mws_unknown"),), id="unknown token"),
        pytest.param(((b"authorization", b"Basic dzE6cHc="),), id="not bearer"),
        pytest.param(((b"origin", b"http://127.0.0.1:8000"),), id="origin without session"),
    ],
)
async def test_a_handshake_without_valid_credentials_is_refused(
    world: World, headers: tuple[tuple[bytes, bytes], ...]
) -> None:
    """wire§7: a handshake with neither a bearer token nor a browser session is refused."""
    socket = _socket(*headers)
    connected, _ = await socket.connect()
    assert not connected
    await socket.disconnect()


@pytest.mark.usefixtures("in_memory_layer")
async def test_the_token_of_a_replaced_session_is_refused(world: World) -> None:
    """wire§4, wire§7, R11.3-10: a stale session token cannot open a stream."""
    stale = world.w1.token
    await database_sync_to_async(world.w1.open_session)()
    socket = _socket(_bearer(stale))
    connected, _ = await socket.connect()
    assert not connected
    fresh = await _connected(world.w1.token)
    await fresh.disconnect()


# --- subscribing -------------------------------------------------------------------------


@pytest.mark.usefixtures("in_memory_layer")
async def test_a_member_receives_every_event_in_order_identical_to_rest(world: World) -> None:
    """wire§7, wire§6: SUBSCRIBE afterSequence 0 replays the whole log in order as EVENT
    frames, each identical to the REST copy and hash-verifiable."""
    for n in range(3):
        await _create_mission(world, f"m-{n}")
    rest = await _rest_events(world, world.w2.token)
    assert len(rest) == 6  # 3 grants, 3 missions
    socket = await _connected(world.w2.token)

    await socket.send_json_to({"op": "SUBSCRIBE", "group": world.group, "afterSequence": 0})
    frames = await _frames(socket, len(rest))

    assert frames == [{"op": "EVENT", "event": event} for event in rest]
    assert [frame["event"]["sequence"] for frame in frames] == [1, 2, 3, 4, 5, 6]
    assert all(frame["event"]["hash"] == event_hash(frame["event"]) for frame in frames)
    assert await socket.receive_nothing(timeout=0.3)
    await socket.disconnect()


@pytest.mark.usefixtures("in_memory_layer")
async def test_subscribing_after_a_sequence_skips_the_earlier_events(world: World) -> None:
    """wire§7: only events with sequence > afterSequence are sent."""
    await _create_mission(world, "m-0")
    socket = await _connected(world.w1.token)

    await socket.send_json_to({"op": "SUBSCRIBE", "group": world.group, "afterSequence": 2})
    frames = await _frames(socket, 2)

    assert [frame["event"]["sequence"] for frame in frames] == [3, 4]
    assert await socket.receive_nothing(timeout=0.3)
    await socket.disconnect()


@pytest.mark.usefixtures("in_memory_layer")
async def test_a_non_member_is_refused_with_not_a_member_and_gets_no_events(
    world: World,
) -> None:
    """wire§7, wire§2: SUBSCRIBE to a group the agent is not in is ERROR NOT_A_MEMBER."""
    outsider = await database_sync_to_async(factories.agent)("w3", world.org)
    await database_sync_to_async(outsider.open_session)()
    socket = await _connected(outsider.token)

    await socket.send_json_to({"op": "SUBSCRIBE", "group": world.group, "afterSequence": 0})
    (frame,) = await _frames(socket, 1)

    assert frame["op"] == "ERROR"
    assert frame["code"] == "NOT_A_MEMBER"
    assert frame["group"] == world.group
    await _create_mission(world, "m-unseen")
    assert await socket.receive_nothing(timeout=0.8)
    await socket.disconnect()


@pytest.mark.usefixtures("in_memory_layer")
@pytest.mark.parametrize(
    "frame",
    [
        pytest.param("not json", id="not json"),
        pytest.param({"op": "DANCE"}, id="unknown op"),
        pytest.param({"op": "SUBSCRIBE", "afterSequence": 0}, id="no group"),
        pytest.param({"op": "SUBSCRIBE", "group": "g-research", "afterSequence": -1}, id="neg"),
        pytest.param({"op": "SUBSCRIBE", "group": "g-research", "afterSequence": "0"}, id="str"),
    ],
)
async def test_malformed_frames_are_answered_with_malformed(world: World, frame: Any) -> None:
    """wire§7, wire§1: a bad frame is ERROR MALFORMED; the socket stays usable."""
    socket = await _connected(world.w1.token)
    if isinstance(frame, str):
        await socket.send_to(text_data=frame)
    else:
        await socket.send_json_to(frame)
    (answer,) = await _frames(socket, 1)
    assert (answer["op"], answer["code"]) == ("ERROR", "MALFORMED")

    await socket.send_json_to({"op": "SUBSCRIBE", "group": world.group, "afterSequence": 3})
    assert await socket.receive_nothing(timeout=0.3)
    await _create_mission(world, "m-after")
    (event,) = await _frames(socket, 1)
    assert event["event"]["sequence"] == 4
    await socket.disconnect()


# --- live events -------------------------------------------------------------------------


@pytest.mark.usefixtures("slow_poll")
@pytest.mark.parametrize("layer", LAYERS)
async def test_a_live_event_arrives_through_the_broadcast_hint(
    world: World, settings: Any, layer: dict[str, Any]
) -> None:
    """wire§7: an event appended after subscribing is sent promptly; with the head poll at
    30 s, only the after-commit hint through the channel layer can have carried it."""
    settings.CHANNEL_LAYERS = layer
    assert layer["default"]["BACKEND"].endswith("." + type(get_channel_layer()).__name__)
    socket = await _connected(world.w2.token)
    await socket.send_json_to({"op": "SUBSCRIBE", "group": world.group, "afterSequence": 3})
    assert await socket.receive_nothing(timeout=0.3)

    started = time.monotonic()
    body = await _create_mission(world, "m-live")
    (frame,) = await _frames(socket, 1, within=2)

    assert time.monotonic() - started < 2
    assert frame["event"]["event_id"] == body["events"][0]["event_id"]
    assert frame["event"]["sequence"] == 4
    await socket.disconnect()


@pytest.mark.usefixtures("in_memory_layer")
async def test_a_lost_hint_only_delays_the_event_until_the_next_poll(
    world: World, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """wire§7 (broadcasts are hints): with every hint dropped, the head poll still
    delivers the event, in order and once."""
    settings.MWP_STREAM_POLL_S = 0.1
    monkeypatch.setattr(write_path, "announce_head", lambda group_id, sequence: None)
    socket = await _connected(world.w2.token)
    await socket.send_json_to({"op": "SUBSCRIBE", "group": world.group, "afterSequence": 3})

    await _create_mission(world, "m-a")
    await _create_mission(world, "m-b")
    frames = await _frames(socket, 2, within=2)

    assert [frame["event"]["sequence"] for frame in frames] == [4, 5]
    assert await socket.receive_nothing(timeout=0.4)
    await socket.disconnect()


# --- revocation --------------------------------------------------------------------------


@pytest.mark.usefixtures("in_memory_layer")
async def test_a_revoked_member_gets_not_a_member_within_a_second_and_no_more_events(
    world: World,
) -> None:
    """wire§7: when a membership is revoked the server sends ERROR NOT_A_MEMBER for that
    group and stops its events within one second."""
    socket = await _connected(world.w2.token)
    await socket.send_json_to({"op": "SUBSCRIBE", "group": world.group, "afterSequence": 0})
    assert len(await _frames(socket, 3)) == 3

    started = time.monotonic()
    revoked = await database_sync_to_async(services.membership_revoke)(
        group_id=world.group, admin=world.alice.caller, principal=world.w2.principal
    )
    frames: list[dict[str, Any]] = []
    while not frames or frames[-1]["op"] != "ERROR":
        frames.extend(await _frames(socket, 1, within=1))

    assert time.monotonic() - started < 1
    error = frames[-1]
    assert (error["code"], error["group"]) == ("NOT_A_MEMBER", world.group)
    revoked_at = revoked.body["events"][0]["sequence"]
    assert all(frame["event"]["sequence"] <= revoked_at for frame in frames[:-1])
    await _create_mission(world, "m-after-revoke")
    assert await socket.receive_nothing(timeout=1.2)
    await socket.disconnect()


@pytest.mark.usefixtures("in_memory_layer")
async def test_revocation_in_one_group_leaves_the_other_subscription_running(
    world: World,
) -> None:
    """wire§7: NOT_A_MEMBER ends the subscription of the revoked group only."""
    other = await database_sync_to_async(factories.group)("g-other", world.org)
    await database_sync_to_async(factories.grant)(world.alice, other, world.w2, "worker")
    await database_sync_to_async(factories.grant)(world.alice, other, world.w1, "coordinator")
    socket = await _connected(world.w2.token)
    await socket.send_json_to({"op": "SUBSCRIBE", "group": world.group, "afterSequence": 3})
    await socket.send_json_to({"op": "SUBSCRIBE", "group": other, "afterSequence": 2})
    assert await socket.receive_nothing(timeout=0.3)

    await database_sync_to_async(services.membership_revoke)(
        group_id=world.group, admin=world.alice.caller, principal=world.w2.principal
    )
    (error,) = await _frames(socket, 1, within=1)
    assert (error["code"], error["group"]) == ("NOT_A_MEMBER", world.group)

    @database_sync_to_async
    def create_in_other() -> None:
        document = world.w1.command(other, "mission.create", mission_body("m-other"))
        submit_command(group_id=other, document=document, caller=world.w1.caller)

    await create_in_other()
    (frame,) = await _frames(socket, 1)
    assert (frame["event"]["group"], frame["event"]["sequence"]) == (other, 3)
    await socket.disconnect()


# --- browsers ----------------------------------------------------------------------------


@database_sync_to_async
def _browser_session(world: World) -> bytes:
    user = get_user_model().objects.get(username=world.olga.username)
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}".encode()


@pytest.mark.usefixtures("in_memory_layer")
@pytest.mark.parametrize("origin", [b"http://evil.example", b"null", None])
async def test_a_browser_session_from_a_foreign_origin_is_refused(
    world: World, origin: bytes | None
) -> None:
    """wire§7: a browser's Django session must pass the origin check."""
    headers = [(b"cookie", await _browser_session(world))]
    if origin is not None:
        headers.append((b"origin", origin))
    socket = _socket(*headers)
    connected, _ = await socket.connect()
    assert not connected
    await socket.disconnect()


@pytest.mark.usefixtures("in_memory_layer")
async def test_a_browser_session_from_an_allowed_origin_streams_as_the_user(
    world: World,
) -> None:
    """wire§7: a logged-in member's browser from an allowed origin subscribes as user:<name>."""
    socket = _socket(
        (b"cookie", await _browser_session(world)), (b"origin", b"http://127.0.0.1:8000")
    )
    connected, _ = await socket.connect()
    assert connected
    await socket.send_json_to({"op": "SUBSCRIBE", "group": world.group, "afterSequence": 0})
    frames = await _frames(socket, 3)
    assert [frame["event"]["type"] for frame in frames] == ["membership.granted"] * 3
    await socket.disconnect()


@pytest.mark.usefixtures("in_memory_layer")
async def test_a_bearer_token_decides_who_is_on_the_socket_even_beside_a_browser_session(
    world: World,
) -> None:
    """wire§7: with ``Authorization`` the socket is the token's agent, whatever session cookie
    comes along: a member's browser session does not let a non-member's token read the group,
    and a stale token is refused although the session is valid."""
    outsider = await database_sync_to_async(factories.agent)("w3", world.org)
    await database_sync_to_async(outsider.open_session)()
    browser = [(b"cookie", await _browser_session(world)), (b"origin", b"http://127.0.0.1:8000")]

    socket = _socket(_bearer(outsider.token), *browser)
    connected, _ = await socket.connect()
    assert connected
    await socket.send_json_to({"op": "SUBSCRIBE", "group": world.group, "afterSequence": 0})
    (frame,) = await _frames(socket, 1)
    assert (frame["op"], frame["code"]) == ("ERROR", "NOT_A_MEMBER")
    await socket.disconnect()

    stale = outsider.token
    await database_sync_to_async(outsider.open_session)()
    socket = _socket(_bearer(stale), *browser)
    connected, _ = await socket.connect()
    assert not connected
    await socket.disconnect()
