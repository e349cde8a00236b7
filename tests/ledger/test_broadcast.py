"""After-commit hints (``apps/ledger/broadcast.py``): with the Redis pub/sub layer a hint is
queued from any thread and published by the process's sender thread, coalesced per group to
the highest head, and a consumer subscribed through the layer gets it (issue 15 §4). Hints
stay hints: the stream reads the log by sequence (wire.md §7)."""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import uuid
from collections.abc import Callable

import pytest
import redis
from asgiref.sync import ThreadSensitiveContext, sync_to_async
from channels.layers import get_channel_layer

from apps.ledger import broadcast
from apps.ledger.broadcast import announce_head, group_channel


@pytest.fixture
def pubsub_layer(settings):
    url = os.environ.get("REDIS_URL")
    if not url:
        pytest.fail("the Redis pub/sub layer needs REDIS_URL (make test sets it)")
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {"hosts": [url], "prefix": f"test-{uuid.uuid4().hex[:8]}"},
        }
    }
    return get_channel_layer()


def test_a_hint_from_a_thread_without_a_loop_reaches_a_layer_subscriber(pubsub_layer) -> None:
    """The hint sent synchronously from a plain thread (a Celery task, a benchmark client)
    is what ``group_send`` would have published: the layer's subscriber receives it."""
    group = f"g-{uuid.uuid4().hex[:8]}"

    async def listen() -> dict:
        channel = await pubsub_layer.new_channel()
        await pubsub_layer.group_add(group_channel(group), channel)
        await asyncio.sleep(0.2)  # the SUBSCRIBE has reached Redis
        sender = threading.Thread(target=announce_head, args=(group, 7))
        sender.start()
        try:
            return await asyncio.wait_for(pubsub_layer.receive(channel), timeout=5)
        finally:
            sender.join()
            await pubsub_layer.group_discard(group_channel(group), channel)

    message = asyncio.run(listen())

    assert message == {"type": "group.head", "group": group, "head": 7}
    assert broadcast._publisher(pubsub_layer) is not None


def test_the_in_memory_layer_keeps_publishing_on_its_consumers_loop(settings) -> None:
    """The embedded default's layer lives in one process's loop: no Redis publisher."""
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    assert broadcast._publisher(get_channel_layer()) is None


def test_a_burst_of_hints_arrives_in_order_and_ends_at_the_highest_head(pubsub_layer) -> None:
    """Coalescing may skip intermediate heads, never reorder them or lose the last one."""
    group = f"g-{uuid.uuid4().hex[:8]}"

    heads = _listen_for(pubsub_layer, group, _announces(group, *range(1, 301)))

    assert heads == sorted(set(heads))
    assert heads[-1] == 300


def test_an_unreachable_redis_costs_the_caller_no_error(settings, caplog) -> None:
    """The command has committed: a hint Redis cannot take is logged by the sender thread,
    never raised to the caller (a lost hint only delays delivery to the next head poll)."""
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {"hosts": ["redis://127.0.0.1:1/0"], "prefix": "unreachable"},
        }
    }
    layer = get_channel_layer()
    caplog.set_level(logging.WARNING, logger="apps.ledger.broadcast")

    announce_head("g-unreachable", 1)
    publisher = broadcast._publisher(layer)

    assert publisher is not None
    assert publisher.drain(timeout=30)
    assert "could not announce" in caplog.text


def _listen_for(layer, group: str, send) -> list[int]:
    """The heads a layer subscriber of ``group`` receives while ``send()`` runs in a thread,
    until the highest it sends (``send`` returns it) has arrived."""

    async def listen() -> list[int]:
        channel = await layer.new_channel()
        await layer.group_add(group_channel(group), channel)
        await asyncio.sleep(0.2)
        highest: list[int] = []
        sender = threading.Thread(target=lambda: highest.append(send()))
        sender.start()
        heads: list[int] = []
        try:
            while not highest or not heads or heads[-1] != highest[0]:
                message = await asyncio.wait_for(layer.receive(channel), timeout=5)
                heads.append(message["head"])
        finally:
            sender.join()
            await layer.group_discard(group_channel(group), channel)
        return heads

    return asyncio.run(listen())


def _announces(group: str, *heads: int) -> Callable[[], int]:
    """A sender for ``_listen_for``: announces ``heads`` in order, returns the last."""

    def send() -> int:
        for head in heads:
            announce_head(group, head)
        return heads[-1]

    return send


def _hint_connections(layer) -> list[dict]:
    """The hint connection of ``layer``'s publisher as Redis lists it (``CLIENT LIST``)."""
    name = broadcast._publisher(layer).client_name
    assert name.startswith(f"{broadcast.HINTS_CLIENT_NAME}-{os.getpid()}-")
    with redis.Redis.from_url(os.environ["REDIS_URL"]) as admin:
        return [client for client in admin.client_list() if client.get("name") == name]


def test_hints_go_over_one_named_connection_that_asks_for_no_answers(pubsub_layer) -> None:
    """The sender writes PUBLISH on a connection of its own told ``CLIENT REPLY OFF``: the
    hints arrive, and Redis has nothing to send back on it (its output buffer stays empty)."""
    group = f"g-{uuid.uuid4().hex[:8]}"

    heads = _listen_for(pubsub_layer, group, _announces(group, *range(1, 51)))

    assert heads[-1] == 50
    (connection,) = _hint_connections(pubsub_layer)
    assert int(connection["omem"]) == 0
    assert int(connection["obl"]) == 0
    assert broadcast._publisher(pubsub_layer)._answers_anyway is False


def test_a_hint_connection_closed_by_redis_is_opened_again_for_the_next_hint(
    pubsub_layer,
) -> None:
    """A restart or Redis's idle ``timeout`` closes the sender's connection: the next hint
    finds it closed and goes over a new one, not lost."""
    group = f"g-{uuid.uuid4().hex[:8]}"
    assert _listen_for(pubsub_layer, group, _announces(group, 1)) == [1]
    (before,) = _hint_connections(pubsub_layer)
    with redis.Redis.from_url(os.environ["REDIS_URL"]) as admin:
        admin.client_kill_filter(_id=before["id"])

    heads = _listen_for(pubsub_layer, group, _announces(group, 2))

    assert heads == [2]
    (after,) = _hint_connections(pubsub_layer)
    assert after["id"] != before["id"]


def test_a_server_that_answers_anyway_turns_the_sender_to_round_trips(pubsub_layer) -> None:
    """Where ``CLIENT REPLY OFF`` does not hold (a proxy, a server without it), answers pile
    up on the connection: the first one seen turns the publisher to round trips, which read
    every answer, and no hint is lost on the way."""
    group = f"g-{uuid.uuid4().hex[:8]}"
    assert _listen_for(pubsub_layer, group, _announces(group, 1)) == [1]
    publisher = broadcast._publisher(pubsub_layer)
    assert publisher.drain(timeout=5)
    publisher._quiet.send_command("CLIENT", "REPLY", "ON")  # Redis answers it: +OK

    heads = _listen_for(pubsub_layer, group, _announces(group, 2))
    more = _listen_for(pubsub_layer, group, _announces(group, 3))

    assert (heads, more) == ([2], [3])
    assert publisher._answers_anyway is True
    assert _hint_connections(pubsub_layer) == []  # the quiet one was closed


IN_MEMORY = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}


def test_an_in_memory_hint_reaches_a_listener_on_its_loop_without_the_caller_waiting(
    settings,
) -> None:
    """The embedded default: a request's thread announces; the hint is started on the loop
    a stream tail listens on and arrives there, while the thread has already returned."""
    settings.CHANNEL_LAYERS = IN_MEMORY
    layer = get_channel_layer()
    group = f"g-{uuid.uuid4().hex[:8]}"

    async def scenario() -> dict:
        channel = await layer.new_channel("test.")
        await layer.group_add(group_channel(group), channel)
        broadcast.listen_on_this_loop()
        returned = await asyncio.to_thread(announce_head, group, 4)
        assert returned is None
        return await asyncio.wait_for(layer.receive(channel), timeout=5)

    assert asyncio.run(scenario()) == {"type": "group.head", "group": group, "head": 4}


def test_a_request_whose_client_left_before_it_announced_leaves_django_a_working_executor(
    settings,
) -> None:
    """Issue 34 §7, the demo's ``RuntimeError: CurrentThreadExecutor already quit or is
    broken`` in ``request_finished``: a sync view's client goes away while the view still
    works; Django's ASGI handler stops awaiting it, and asgiref copies the view thread's
    context into the request's there and then. The view then commits and announces the new
    head on the in-memory layer. Had it entered ``async_to_sync`` for that, the executor it
    made would have been in the request's context too, quit by the time Django sends
    ``request_finished`` through ``sync_to_async`` in the same task."""
    settings.CHANNEL_LAYERS = IN_MEMORY
    group = f"g-{uuid.uuid4().hex[:8]}"
    gone, view_done = threading.Event(), threading.Event()

    def view() -> None:
        try:
            gone.wait(timeout=5)  # still working when the client leaves
            announce_head(group, 1)  # then on_commit announces
        finally:
            view_done.set()

    async def request() -> str:
        async with ThreadSensitiveContext():
            try:
                await sync_to_async(view)()
            except asyncio.CancelledError:
                asyncio.current_task().uncancel()  # RequestAborted, as Django handles it
            await asyncio.to_thread(view_done.wait, 5)
            await asyncio.sleep(0.1)
            # request_finished: a sync receiver, in the request's context
            return await asyncio.wait_for(sync_to_async(lambda: "finished")(), timeout=10)

    async def scenario() -> str:
        broadcast.listen_on_this_loop()
        handling = asyncio.create_task(request())
        await asyncio.sleep(0.05)
        handling.cancel()  # the client went away
        gone.set()
        return await handling

    assert asyncio.run(scenario()) == "finished"
