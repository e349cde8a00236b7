"""``/ws/notifications/``, the bell's live count (issue 36 §2), through the real ASGI
application: a signed-in person's browser gets their unread count on connect and again, within
moments, after a hint that their notifications changed (the producer's after commit, or a
read in another tab) — over the in-memory layer and over Redis pub/sub, with the socket's
poll too slow to matter. Nobody else's count moves it; a socket without a session, from a
foreign origin or with an agent's token is refused."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.test import Client

from apps.notifications import live
from apps.notifications.consumers import BellConsumer
from apps.registry.services import authenticate_bearer
from missionweave.asgi import application
from tests.factories import World
from tests.notifications.inbox_rows import person, told

PATH = "/ws/notifications/"
ORIGIN = (b"origin", b"http://127.0.0.1:8000")
REDIS_URL = os.environ.get("REDIS_URL", "")
LAYERS = [
    pytest.param({"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}, id="memory"),
    pytest.param(
        {
            "default": {
                "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
                "CONFIG": {"hosts": [REDIS_URL], "prefix": "mwp-test-bell"},
            }
        },
        id="redis",
        marks=pytest.mark.skipif(not REDIS_URL, reason="REDIS_URL is not set"),
    ),
]
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def slow_poll(monkeypatch: pytest.MonkeyPatch) -> None:
    """A prompt update then proves the hint, not the poll."""
    monkeypatch.setattr(BellConsumer, "poll_s", 60.0)


@database_sync_to_async
def session_of(username: str) -> tuple[bytes, int]:
    user = person(username)
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}".encode(), user.pk


@database_sync_to_async
def notify(user_id: int, title: str, *, hint: bool = True) -> None:
    told(get_user_model().objects.get(pk=user_id), title)
    if hint:
        live.hint_now(user_id)


async def frame(socket: WebsocketCommunicator, within: float = 3.0) -> dict[str, Any]:
    return json.loads(await socket.receive_from(timeout=within))


@pytest.mark.parametrize("layers", LAYERS)
async def test_the_count_arrives_on_connect_and_after_each_hint(
    settings: Any, layers: dict
) -> None:
    settings.CHANNEL_LAYERS = layers
    cookie, omar = await session_of("omar")
    _, olga = await session_of("olga")
    await notify(omar, "Already there", hint=False)
    socket = WebsocketCommunicator(application, PATH, headers=[(b"cookie", cookie), ORIGIN])
    connected, _ = await socket.connect()
    assert connected
    try:
        assert await frame(socket) == {
            "unread": 1,
            "shown": "1",
            "label": "1 unread notification",
        }
        await notify(omar, "Approve the execution of “x”")
        assert await frame(socket) == {
            "unread": 2,
            "shown": "2",
            "label": "2 unread notifications",
        }
        await notify(olga, "Not omar's")  # another person's hint: nothing for omar
        assert await socket.receive_nothing(timeout=0.5)
    finally:
        await socket.disconnect()


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param("session-foreign-origin", id="foreign origin"),
        pytest.param("no-session", id="no session"),
    ],
)
async def test_a_socket_without_a_person_from_this_site_is_refused(
    settings: Any, headers: str
) -> None:
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    cookie, _ = await session_of("omar")
    sent = (
        [(b"cookie", cookie), (b"origin", b"http://evil.example")]
        if headers == "session-foreign-origin"
        else [ORIGIN]
    )
    socket = WebsocketCommunicator(application, PATH, headers=sent)
    connected, _ = await socket.connect()
    assert not connected
    await socket.disconnect()


async def test_an_agents_token_is_refused(settings: Any, world: World) -> None:
    """The bell is a person's: an agent's valid session token opens the group stream
    (wire.md §7) but not ``/ws/notifications/``, which answers with its own refusal (4401)."""
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    token = world.w1.token
    caller = await database_sync_to_async(lambda: authenticate_bearer(token).caller)()
    assert caller.principal == world.w1.principal  # the token itself is good
    socket = WebsocketCommunicator(
        application, PATH, headers=[(b"authorization", f"Bearer {token}".encode()), ORIGIN]
    )
    connected, code = await socket.connect()
    assert not connected
    assert code == 4401
    await socket.disconnect()
