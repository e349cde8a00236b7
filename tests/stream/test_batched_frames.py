"""``"batch": true`` on SUBSCRIBE (wire.md §7, added for issue 15): ``EVENTS`` frames carry
consecutive events in order, with the last one's sequence at the end, under the same rules as
``EVENT`` frames (R16-09: replay after ``afterSequence``, no gap, no reordering).

Driven through ``missionweave.asgi.application`` on the in-memory layer against real
PostgreSQL, like ``test_tails``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator

from apps.stream import consumers
from tests.factories import World
from tests.stream.sockets import connected, create_missions, frames, head_of

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def in_memory_layer(settings: Any) -> None:
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}


async def _events_until(socket: WebsocketCommunicator, head: int) -> list[dict]:
    """The EVENTS frames up to the one whose ``last`` is ``head``."""
    received: list[dict] = []
    while not received or received[-1]["last"] < head:
        received.extend(await frames(socket, 1))
    return received


async def test_a_batched_replay_sends_every_event_in_order_in_few_frames(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """R16-09, wire§7: 30 events after 0, frames of at most 7 events here: each frame's
    events are consecutive, ``last`` is its final sequence, together they are 1..head."""
    monkeypatch.setattr(consumers, "BATCH_EVENTS", 7)
    await create_missions(world, 25)
    head = await head_of(world)
    socket = await connected(world.w2.token)
    await socket.send_json_to(
        {"op": "SUBSCRIBE", "group": world.group, "afterSequence": 0, "batch": True}
    )

    received = await _events_until(socket, head)

    sequences = [event["sequence"] for frame in received for event in frame["events"]]
    assert sequences == list(range(1, head + 1))
    assert {frame["op"] for frame in received} == {"EVENTS"}
    assert all(frame["group"] == world.group for frame in received)
    assert all(frame["last"] == frame["events"][-1]["sequence"] for frame in received)
    assert max(len(frame["events"]) for frame in received) == 7
    assert len(received) < head
    await socket.disconnect()


async def test_frames_are_cut_by_size_and_a_large_event_travels_alone(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A frame stays under ``BATCH_BYTES`` unless one event alone is larger."""
    await create_missions(world, 6)
    head = await head_of(world)
    size = len(json.dumps({"sequence": 1}))  # any stored event is larger than this
    monkeypatch.setattr(consumers, "BATCH_BYTES", size)
    socket = await connected(world.w2.token)
    await socket.send_json_to(
        {"op": "SUBSCRIBE", "group": world.group, "afterSequence": 0, "batch": True}
    )

    received = await _events_until(socket, head)

    assert [len(frame["events"]) for frame in received] == [1] * head
    await socket.disconnect()


async def test_live_events_follow_in_events_frames_after_the_replay(world: World) -> None:
    """The hand-over from replay to live keeps the mode: the events appended after the
    replay come as EVENTS frames too, with no gap."""
    head = await head_of(world)
    socket = await connected(world.w2.token)
    await socket.send_json_to(
        {"op": "SUBSCRIBE", "group": world.group, "afterSequence": 0, "batch": True}
    )
    await _events_until(socket, head)

    await create_missions(world, 3)
    live = await _events_until(socket, head + 3)

    sequences = [event["sequence"] for frame in live for event in frame["events"]]
    assert sequences == [head + 1, head + 2, head + 3]
    await socket.disconnect()


async def test_without_batch_nothing_changes_and_a_bad_batch_is_malformed(world: World) -> None:
    """wire§7: the default is one EVENT frame per event; ``"batch": "yes"`` is MALFORMED."""
    head = await head_of(world)
    plain = await connected(world.w2.token)
    await plain.send_json_to({"op": "SUBSCRIBE", "group": world.group, "afterSequence": 0})
    bad = await connected(world.w2.token)
    await bad.send_json_to(
        {"op": "SUBSCRIBE", "group": world.group, "afterSequence": 0, "batch": "yes"}
    )

    received = await frames(plain, head)
    (refusal,) = await frames(bad, 1)

    assert [frame["op"] for frame in received] == ["EVENT"] * head
    assert (refusal["op"], refusal["code"], refusal["group"]) == ("ERROR", "MALFORMED", world.group)
    assert await bad.receive_nothing(timeout=0.2)
    await plain.disconnect()
    await bad.disconnect()
