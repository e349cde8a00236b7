"""The shared tail (apps/stream/tails.py): live events are read once per process and group,
not once per socket, and what the sockets receive does not change (wire.md §7; R16-05).

Driven through ``missionweave.asgi.application`` with ``WebsocketCommunicator`` on the
in-memory layer (the hints reach the consumers in this process) against real PostgreSQL. The
reads are counted by wrapping the two read functions, which still run against the database.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.core.management import call_command

from apps.ledger.broadcast import group_channel
from apps.ledger.models import Event
from apps.registry import services
from apps.stream import consumers, tails
from tests import factories
from tests.factories import World, build_world
from tests.stream.sockets import connected, create_missions, frames, head_of

pytestmark = pytest.mark.django_db(transaction=True)
SOCKETS = 20
EVENTS = 10


@pytest.fixture(autouse=True)
def in_memory_layer(settings: Any) -> None:
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    settings.MWP_STREAM_POLL_S = 30  # only hints move events here


class Counted:
    """A read function, called through, with the number of calls."""

    def __init__(self, function: Callable[..., Any]) -> None:
        self.function = function
        self.calls = 0

    async def __call__(self, *args: Any) -> Any:
        self.calls += 1
        return await self.function(*args)


async def _subscribed(token: str, group: str, after: int) -> WebsocketCommunicator:
    socket = await connected(token)
    await socket.send_json_to({"op": "SUBSCRIBE", "group": group, "afterSequence": after})
    return socket


async def test_live_events_are_read_once_per_process_not_once_per_socket(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """wire§7, R16-05: 20 sockets at the head, 10 events appended one by one: every socket
    gets every event once, in order, and the log was read by the tail, at most twice per
    event (a hint and the burst behind it) instead of 20 times, never by a socket itself."""
    tail_reads, socket_reads = Counted(tails._read_after), Counted(consumers._read)
    monkeypatch.setattr(tails, "_read_after", tail_reads)
    monkeypatch.setattr(consumers, "_read", socket_reads)
    head = await head_of(world)
    sockets = [await _subscribed(world.w2.token, world.group, head) for _ in range(SOCKETS)]
    await asyncio.sleep(0.2)
    tail_reads.calls = 0  # each SUBSCRIBE wakes the tail once; count the live events' reads
    await create_missions(world, EVENTS)
    for socket in sockets:
        received = [frame["event"]["sequence"] for frame in await frames(socket, EVENTS)]
        assert received == list(range(head + 1, head + EVENTS + 1))
        assert await socket.receive_nothing(timeout=0.05)
        await socket.disconnect()
    assert socket_reads.calls == 0
    assert 1 <= tail_reads.calls <= 2 * EVENTS


async def test_a_socket_behind_the_cache_replays_from_the_log_then_joins_the_tail(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """R16-09, wire§7: a socket subscribing from 0 while another follows live reads the old
    events itself (the tail only holds what arrived after it started), then follows from the
    shared tail: both end with the same events, gapless and in order."""
    monkeypatch.setattr(tails, "CACHED_EVENTS", 3)
    live = await _subscribed(world.w2.token, world.group, await head_of(world))
    await asyncio.sleep(0.1)
    await create_missions(world, 6)  # more than the cache keeps
    head = await head_of(world)
    replaying = await _subscribed(world.w1.token, world.group, 0)
    assert [f["event"]["sequence"] for f in await frames(replaying, head)] == list(
        range(1, head + 1)
    )
    await create_missions(world, 2)
    assert [f["event"]["sequence"] for f in await frames(replaying, 2)] == [head + 1, head + 2]
    assert [f["event"]["sequence"] for f in await frames(live, 8)] == list(
        range(head - 5, head + 3)
    )
    for socket in (live, replaying):
        await socket.disconnect()


async def test_a_revocation_read_by_the_tail_ends_the_subscription_before_later_events(
    world: World,
) -> None:
    """wire§7: the tail notes the revocation it reads; the revoked member's socket sends
    nothing from the revocation on and says NOT_A_MEMBER, while another member's socket on
    the same tail goes on."""
    head = await head_of(world)
    revoked = await _subscribed(world.w2.token, world.group, head)
    staying = await _subscribed(world.w1.token, world.group, head)
    await asyncio.sleep(0.1)
    outcome = await database_sync_to_async(services.membership_revoke)(
        group_id=world.group, admin=world.alice.caller, principal=world.w2.principal
    )
    revoked_at = outcome.body["events"][0]["sequence"]
    await create_missions(world, 2)
    error = json.loads(await revoked.receive_from(timeout=3))
    assert (error["op"], error["code"], error["group"]) == ("ERROR", "NOT_A_MEMBER", world.group)
    assert await revoked.receive_nothing(timeout=0.3)
    received = [f["event"]["sequence"] for f in await frames(staying, 3)]
    assert received == [revoked_at, revoked_at + 1, revoked_at + 2]
    for socket in (revoked, staying):
        await socket.disconnect()


def _outsider(world: World) -> factories.AgentPersona:
    outsider = factories.agent(factories.unique("outsider"), world.org)
    outsider.open_session()
    return outsider


async def test_a_process_receives_one_hint_per_event_and_group_not_one_per_socket(
    world: World,
) -> None:
    """wire§7: the group's tail, not each socket, is in the group's hint channel: 20 sockets
    of a group make one member there, and the events still reach every socket on hints
    alone (the poll is 30 s here). When the last socket leaves, the tail leaves it too."""
    layer = get_channel_layer()
    hints = group_channel(world.group)
    head = await head_of(world)
    sockets = [await _subscribed(world.w2.token, world.group, head) for _ in range(SOCKETS)]
    await asyncio.sleep(0.1)
    assert len(layer.groups[hints]) == 1
    await create_missions(world, 2)
    for socket in sockets:
        assert [f["event"]["sequence"] for f in await frames(socket, 2)] == [head + 1, head + 2]
        await socket.disconnect()
    await asyncio.sleep(0.05)
    assert hints not in layer.groups


class _ReceiveFailsOnce:
    """The in-memory layer, whose first ``receive`` raises as a dropped connection would."""

    def __init__(self, layer: Any) -> None:
        self.layer = layer
        self.failed = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.layer, name)

    async def receive(self, channel: str) -> dict[str, Any]:
        if not self.failed:
            self.failed = True
            raise ConnectionError("the layer's connection dropped")
        return await self.layer.receive(channel)


async def test_a_tail_whose_hints_fail_joins_again_and_hints_still_move_events(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """wire§7: a receive that raises does not leave the tail on its poll for good (30 s
    here): it leaves the group with that channel, joins again with a new one, and the next
    events reach the socket on hints."""
    layer = _ReceiveFailsOnce(get_channel_layer())
    monkeypatch.setattr(tails, "get_channel_layer", lambda: layer)
    monkeypatch.setattr(tails, "JOIN_RETRY_S", 0.05)
    head = await head_of(world)
    socket = await _subscribed(world.w2.token, world.group, head)
    await asyncio.sleep(0.3)
    assert layer.failed
    assert len(layer.groups[group_channel(world.group)]) == 1
    await create_missions(world, 2)
    assert [f["event"]["sequence"] for f in await frames(socket, 2)] == [head + 1, head + 2]
    await socket.disconnect()


async def test_the_tail_stops_when_its_last_socket_leaves(world: World) -> None:
    """A tail lives while a socket of its group does in this process: no poll goes on for
    nobody, and a later subscription starts a fresh one at the then head."""
    socket = await _subscribed(world.w2.token, world.group, await head_of(world))
    await asyncio.sleep(0.1)
    loop_tails = tails._tails[asyncio.get_running_loop()]
    assert world.group in loop_tails
    await socket.disconnect()
    await asyncio.sleep(0.05)
    assert world.group not in loop_tails
    outsider = await database_sync_to_async(_outsider)(world)
    refused = await _subscribed(outsider.token, world.group, 0)
    frame = json.loads(await refused.receive_from(timeout=3))
    assert frame["code"] == "NOT_A_MEMBER"
    assert world.group not in loop_tails  # a refused SUBSCRIBE leaves no tail behind
    await refused.disconnect()


async def _replace_the_database(missions: int) -> World:
    """Empty the database and fill it again under the same ids, as a restore from a backup
    (or a test suite's flush) does under a running server: the same group, another log."""
    await database_sync_to_async(call_command)("flush", interactive=False, verbosity=0)
    world = await database_sync_to_async(build_world)()
    await create_missions(world, missions)
    return world


@database_sync_to_async
def _hashes(group: str) -> list[str]:
    return list(
        Event.objects.filter(group_id=group).order_by("sequence").values_list("hash", flat=True)
    )


@pytest.mark.parametrize("missions_after", [2, 8], ids=["shorter", "longer"])
async def test_a_tail_never_serves_a_log_the_database_no_longer_holds(
    world: World, missions_after: int
) -> None:
    """wire§7, R16-05: a socket kept open holds the group's tail (5 missions read live and
    cached) while the database is replaced by another log of the same group id, shorter or
    longer than the cache: a new subscriber from 0 receives exactly the database's events,
    hash for hash, and then the next live one — none of the old log's."""
    holder = await _subscribed(world.w2.token, world.group, await head_of(world))
    await asyncio.sleep(0.1)
    await create_missions(world, 5)
    assert len(await frames(holder, 5)) == 5  # read live: the tail caches the old log's 4..8
    fresh = await _replace_the_database(missions_after)
    expected = await _hashes(fresh.group)
    socket = await _subscribed(fresh.w2.token, fresh.group, 0)
    received = [frame["event"]["hash"] for frame in await frames(socket, len(expected))]
    assert received == expected
    await create_missions(fresh, 1)
    (live,) = await frames(socket, 1)
    assert live["event"]["sequence"] == len(expected) + 1
    assert live["event"]["prev_hash"] == expected[-1]
    assert [live["event"]["hash"]] == (await _hashes(fresh.group))[-1:]
    await socket.disconnect()
    await holder.disconnect()


async def test_a_tail_that_skips_an_archived_stretch_keeps_the_revocations_it_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """wire§7, R16-10: archived under the cache, the tail starts again at the head of the
    same log; a revocation it had read still ends that member's subscription."""
    tail = tails.GroupTail("g-archived", 10, None)
    tail.revocations["agent:gone"] = 8

    async def archived(group_id: str, after: int) -> tuple[int, None]:
        return 50, None

    monkeypatch.setattr(tails, "_read_after", archived)
    assert await tail._read()
    assert (tail.base, tail.head) == (50, 50)
    assert tail.revoked_since("agent:gone", 5)
