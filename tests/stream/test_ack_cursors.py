"""ACK cursors on ``/ws/v1/stream`` (wire.md §7; R16-06, R16-07, R16-08; MWP-WRK-030).

Driven through ``missionweave.asgi.application`` with ``WebsocketCommunicator`` against real
PostgreSQL, like ``test_stream_auth.py``. The stream runs its database work in other threads,
so the tests are transactional. The race between concurrent ACKs is also proved with real
threads on separate database connections, since the consumer's calls share one thread.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.db import connections
from django.test import Client
from rest_framework.test import APIClient

from apps.ledger.write_path import submit_command
from apps.stream.cursors import acknowledge
from apps.stream.models import Cursor
from tests import factories
from tests.factories import World, mission_body
from tests.stream.sockets import connected as _connected
from tests.stream.sockets import frames as _frames

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def in_memory_layer(settings: Any) -> None:
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}


async def _ack(socket: WebsocketCommunicator, cursors: Any, answers: int = 1) -> list[dict]:
    await socket.send_json_to({"op": "ACK", "cursors": cursors})
    return await _frames(socket, answers)


@database_sync_to_async
def _stored(principal: str) -> dict[str, int]:
    return dict(Cursor.objects.filter(principal=principal).values_list("group_id", "sequence"))


@database_sync_to_async
def _create_mission(world: World, mission_id: str) -> None:
    document = world.w1.command(world.group, "mission.create", mission_body(mission_id))
    submit_command(group_id=world.group, document=document, caller=world.w1.caller)


@database_sync_to_async
def _second_group(world: World, group_id: str = "g-ops") -> str:
    """A second group of w1 holding one grant (head 1)."""
    factories.group(group_id, world.org)
    factories.grant(world.alice, group_id, world.w1, "worker")
    return group_id


def _get(path: str, token: str | None) -> tuple[int, dict[str, Any]]:
    client = APIClient()
    extra = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    response = client.get(path, **extra)
    return response.status_code, json.loads(response.content)


# --- storing and answering ---------------------------------------------------------------


async def test_ack_stores_the_cursor_and_answers_acked_with_the_stored_value(
    world: World,
) -> None:
    """wire§7, R16-07 (MWP-WRK-030): an ACK of a group the agent is a member of (not even
    subscribed) is stored and answered with ACKED carrying the stored value."""
    socket = await _connected(world.w2.token)

    assert await _ack(socket, {world.group: 2}) == [{"op": "ACKED", "cursors": {world.group: 2}}]
    assert await _stored(world.w2.principal) == {world.group: 2}
    assert await _ack(socket, {world.group: 3}) == [{"op": "ACKED", "cursors": {world.group: 3}}]
    assert await _stored(world.w2.principal) == {world.group: 3}
    await socket.disconnect()


async def test_an_older_ack_leaves_the_cursor_where_it_was(world: World) -> None:
    """wire§7, R16-06: a cursor never moves backwards; ACKED reports the stored (larger) value."""
    socket = await _connected(world.w1.token)
    await _ack(socket, {world.group: 3})

    assert await _ack(socket, {world.group: 1}) == [{"op": "ACKED", "cursors": {world.group: 3}}]
    assert await _ack(socket, {world.group: 0}) == [{"op": "ACKED", "cursors": {world.group: 3}}]
    assert await _stored(world.w1.principal) == {world.group: 3}
    await socket.disconnect()


async def test_an_ack_beyond_the_head_is_refused_and_the_other_groups_still_apply(
    world: World,
) -> None:
    """wire§7, R16-06: a cursor beyond the group's head is ERROR ACK_BEYOND_HEAD naming the
    group, which keeps its cursor; the other groups of the same frame are judged on their own."""
    other = await _second_group(world)
    socket = await _connected(world.w1.token)
    await _ack(socket, {world.group: 2})

    error, acked = await _ack(socket, {world.group: 4, other: 1}, answers=2)

    assert (error["op"], error["code"], error["group"]) == ("ERROR", "ACK_BEYOND_HEAD", world.group)
    assert acked == {"op": "ACKED", "cursors": {other: 1}}
    assert await _stored(world.w1.principal) == {world.group: 2, other: 1}
    (alone,) = await _ack(socket, {other: 2})
    assert (alone["code"], alone["group"]) == ("ACK_BEYOND_HEAD", other)
    assert await socket.receive_nothing(timeout=0.3)  # no ACKED when nothing was stored
    await socket.disconnect()


async def test_an_ack_for_a_group_the_agent_is_not_in_is_not_a_member(world: World) -> None:
    """wire§7, wire§2: ACK of a non-member group (existing or not) is ERROR NOT_A_MEMBER and
    stores nothing for it."""
    other = await database_sync_to_async(factories.group)("g-closed", world.org)
    socket = await _connected(world.w2.token)

    first, second, acked = await _ack(socket, {other: 0, "g-nowhere": 0, world.group: 1}, 3)

    assert {(first["code"], first["group"]), (second["code"], second["group"])} == {
        ("NOT_A_MEMBER", other),
        ("NOT_A_MEMBER", "g-nowhere"),
    }
    assert acked == {"op": "ACKED", "cursors": {world.group: 1}}
    assert await _stored(world.w2.principal) == {world.group: 1}
    await socket.disconnect()


@pytest.mark.parametrize(
    "cursors",
    [
        pytest.param(None, id="missing"),
        pytest.param([1], id="list"),
        pytest.param({}, id="empty"),
        pytest.param({"g-research": -1}, id="negative"),
        pytest.param({"g-research": "2"}, id="string"),
        pytest.param({"g-research": True}, id="bool"),
        pytest.param({"g-research": 1.5}, id="float"),
        pytest.param({"g-research": None}, id="null"),
        pytest.param({"g-research": 1, "g/bad": 1}, id="bad group id"),
        pytest.param({"": 1}, id="empty group id"),
    ],
)
async def test_a_malformed_ack_is_malformed_and_stores_nothing(world: World, cursors: Any) -> None:
    """wire§7, wire§1: an ACK whose cursors are not an object of group id -> non-negative
    integer is ERROR MALFORMED as a whole (no group of it is stored); the socket stays usable."""
    socket = await _connected(world.w1.token)
    frame: dict[str, Any] = {"op": "ACK"}
    if cursors is not None:
        frame["cursors"] = cursors
    await socket.send_json_to(frame)
    (answer,) = await _frames(socket, 1)

    assert (answer["op"], answer["code"]) == ("ERROR", "MALFORMED")
    assert await _stored(world.w1.principal) == {}
    assert await _ack(socket, {world.group: 1}) == [{"op": "ACKED", "cursors": {world.group: 1}}]
    await socket.disconnect()


# --- concurrency -------------------------------------------------------------------------


async def test_two_sockets_of_the_same_agent_racing_acks_end_at_the_maximum(
    world: World,
) -> None:
    """wire§7, R16-06: two sockets of one agent ACKing in opposite orders end at the largest
    value, and no ACKED ever reports a value below one already reported."""
    for n in range(5):
        await _create_mission(world, f"m-{n}")  # head 8
    up, down = await _connected(world.w1.token), await _connected(world.w1.token)
    for value in range(9):
        await up.send_json_to({"op": "ACK", "cursors": {world.group: value}})
        await down.send_json_to({"op": "ACK", "cursors": {world.group: 8 - value}})
    seen_up = [frame["cursors"][world.group] for frame in await _frames(up, 9)]
    seen_down = [frame["cursors"][world.group] for frame in await _frames(down, 9)]

    assert seen_up == sorted(seen_up)
    assert seen_down == sorted(seen_down)
    assert seen_up[-1] == seen_down[-1] == 8
    assert await _stored(world.w1.principal) == {world.group: 8}
    await up.disconnect()
    await down.disconnect()


def test_concurrent_acks_on_separate_connections_never_move_a_cursor_backwards(
    world: World,
) -> None:
    """R16-06: the conditional upsert is race-free: 8 threads with their own database
    connections ACK shuffled values at once; each stored answer is at least what that thread
    sent and at least its previous answer, and the cursor ends at the maximum."""
    for n in range(3):
        document = world.w1.command(world.group, "mission.create", mission_body(f"m-{n}"))
        submit_command(group_id=world.group, document=document, caller=world.w1.caller)
    head = 6
    barrier = threading.Barrier(8)
    failures: list[str] = []

    def run(offset: int) -> None:
        try:
            barrier.wait()
            previous = 0
            for step in range(30):
                value = (step * 7 + offset) % (head + 1)
                stored = acknowledge(world.w1.principal, {world.group: value}).stored[world.group]
                if stored < value or stored < previous:
                    failures.append(f"sent {value}, had {previous}, stored {stored}")
                previous = stored
        except Exception as error:  # surfaced below, with the thread's failure
            failures.append(repr(error))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(offset,)) for offset in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert failures == []
    assert Cursor.objects.get(principal=world.w1.principal, group_id=world.group).sequence == head


# --- admin visibility and history ---------------------------------------------------------


async def test_the_admin_endpoint_shows_each_cursor_and_its_lag(world: World) -> None:
    """wire§7, R16-06: GET /groups/{g}/cursors (staff API token) shows who is behind and by
    how much; other tokens are 403 FORBIDDEN in the wire§8 shape, none is 401, an unknown
    group 404."""
    for n in range(2):
        await _create_mission(world, f"m-{n}")  # head 5
    w1, w2 = await _connected(world.w1.token), await _connected(world.w2.token)
    await _ack(w1, {world.group: 5})
    await _ack(w2, {world.group: 2})
    path = f"/api/v1/groups/{world.group}/cursors"

    status, body = await database_sync_to_async(_get)(path, world.alice.token)

    assert status == 200
    assert (body["group"], body["head"]) == (world.group, 5)
    assert [(c["principal"], c["sequence"], c["lag"]) for c in body["cursors"]] == [
        ("agent:w1", 5, 0),
        ("agent:w2", 2, 3),
    ]
    assert all(c["updated_at"].endswith("Z") for c in body["cursors"])
    for token in (world.olga.token, world.w1.token):
        status, error = await database_sync_to_async(_get)(path, token)
        assert status == 403
        assert error["error"]["code"] == "FORBIDDEN"
        assert set(error["error"]) == {"code", "message", "requirement", "details"}
    assert (await database_sync_to_async(_get)(path, None))[0] == 401
    missing = "/api/v1/groups/g-nowhere/cursors"
    assert (await database_sync_to_async(_get)(missing, world.alice.token))[0] == 404
    await w1.disconnect()
    await w2.disconnect()


def test_the_django_admin_lists_cursors_with_head_and_lag(world: World) -> None:
    """wire§7, R16-06: the Django admin of cursors shows principal, group, sequence, the
    group's head and the lag, read only."""
    acknowledge(world.w2.principal, {world.group: 1})
    user = get_user_model().objects.create_superuser("root", "root@example.org", "pw")
    client = Client()
    client.force_login(user)

    response = client.get("/admin/stream/cursor/")

    assert response.status_code == 200
    page = response.content.decode()
    assert "agent:w2" in page
    assert '<td class="field-sequence">1</td>' in page
    assert '<td class="field-head">3</td>' in page
    assert '<td class="field-lag">2</td>' in page
    assert client.get("/admin/stream/cursor/add/").status_code == 403


async def test_acknowledging_the_head_keeps_the_whole_history(world: World) -> None:
    """R0-16, R16-08 (MWP-WRK-030): acknowledging never deletes history: after an ACK at the
    head, GET /events and SUBSCRIBE still serve every event from sequence 1."""
    socket = await _connected(world.w1.token)
    await _ack(socket, {world.group: 3})

    status, page = await database_sync_to_async(_get)(
        f"/api/v1/groups/{world.group}/events?after=0", world.w1.token
    )
    assert status == 200
    assert [event["sequence"] for event in page["events"]] == [1, 2, 3]
    await socket.send_json_to({"op": "SUBSCRIBE", "group": world.group, "afterSequence": 0})
    frames = await _frames(socket, 3)
    assert [frame["event"]["sequence"] for frame in frames] == [1, 2, 3]
    await socket.disconnect()
