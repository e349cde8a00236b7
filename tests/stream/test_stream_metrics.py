"""The stream's metrics (issue 15 §7): open sockets, and the delivery latency of live events.

Read from this process's registry (``/metrics`` reports the same objects): other tests count
into it too, so each test compares before with after.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from channels.db import database_sync_to_async
from prometheus_client import REGISTRY

from apps.ledger.head import committed_head
from apps.ledger.write_path import submit_command
from tests.factories import World, mission_body
from tests.stream.sockets import connected, frames

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def in_memory_layer(settings: Any) -> None:
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}


def sample(name: str) -> float:
    return REGISTRY.get_sample_value(name) or 0.0


async def test_an_open_socket_is_a_subscriber_until_it_disconnects(world: World) -> None:
    before = sample("mwp_stream_subscribers")
    socket = await connected(world.w2.token)
    assert sample("mwp_stream_subscribers") == before + 1
    await socket.disconnect()
    assert sample("mwp_stream_subscribers") == before


async def test_a_live_event_observes_its_delivery_latency_and_a_replay_does_not(
    world: World,
) -> None:
    """From ``recorded_at`` to the frame: observed for events sent live from the tail, not
    for the replay of older ones, whose age is not a delivery delay."""
    socket = await connected(world.w2.token)
    head = await database_sync_to_async(committed_head)(world.group)
    before = sample("mwp_stream_delivery_seconds_count")
    waited = sample("mwp_stream_delivery_seconds_sum")
    await socket.send_json_to({"op": "SUBSCRIBE", "group": world.group, "afterSequence": 0})
    replayed = await frames(socket, head)
    assert [frame["event"]["sequence"] for frame in replayed] == list(range(1, head + 1))
    assert sample("mwp_stream_delivery_seconds_count") == before

    document = world.w1.command(world.group, "mission.create", mission_body("m-live"))
    await database_sync_to_async(submit_command)(
        group_id=world.group, document=document, caller=world.w1.caller
    )
    (live,) = await frames(socket, 1)
    assert live["event"]["sequence"] == head + 1
    for _ in range(50):  # observed right after the send, on the consumer's next step
        if sample("mwp_stream_delivery_seconds_count") > before:
            break
        await asyncio.sleep(0.02)
    assert sample("mwp_stream_delivery_seconds_count") == before + 1
    assert 0 <= sample("mwp_stream_delivery_seconds_sum") - waited < 5
    await socket.disconnect()
