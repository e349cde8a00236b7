"""A replaying socket reads its pages ahead (apps/stream/read_ahead.py) against PostgreSQL:
every event arrives once and in order across many pages, and a membership revoked while the
pages are being read ends the subscription at the first page read after it (wire.md §7:
R16-09 no gap, no reordering; a revoked member gets ``NOT_A_MEMBER`` and nothing more).

Driven through ``missionweave.asgi.application`` on the in-memory layer, like ``test_tails``.
Pages are four events here, so a replay of thirty-odd events is many pages; the consumer's
page read is wrapped, still reading the database, to see the reads and, in the revocation
test, to revoke the membership just before a chosen read runs.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from channels.db import database_sync_to_async

from apps.ledger.selectors import EventPage
from apps.registry import services
from apps.stream import consumers, tails
from tests.factories import World
from tests.stream.sockets import connected, create_missions, frames, head_of

pytestmark = pytest.mark.django_db(transaction=True)
PAGE = 4


@pytest.fixture(autouse=True)
def small_pages(settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    settings.MWP_STREAM_POLL_S = 30  # only hints and the replay move events here
    monkeypatch.setattr(tails, "PAGE", PAGE)
    monkeypatch.setattr(tails, "CACHED_EVENTS", 2)  # the replay reads the log, not the tail


class RecordedReads:
    """The consumer's page read, called through; ``before(n)`` runs before the n-th read."""

    def __init__(self, before: dict[int, Any] | None = None) -> None:
        self.read = consumers._read
        self.before = before or {}
        self.afters: list[int] = []

    async def __call__(self, group_id: str, principal: str, after: int) -> EventPage | None:
        self.afters.append(after)
        action = self.before.get(len(self.afters))
        if action is not None:
            await action()
        return await self.read(group_id, principal, after)


async def test_a_replay_over_many_pages_sends_every_event_once_in_order(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """R16-09, wire§7: thirty missions after 0 in pages of four, read ahead: the events
    1..head once each, in order; every page read once, in order."""
    await create_missions(world, 30)
    head = await head_of(world)
    reads = RecordedReads()
    monkeypatch.setattr(consumers, "_read", reads)
    socket = await connected(world.w2.token)
    await socket.send_json_to({"op": "SUBSCRIBE", "group": world.group, "afterSequence": 0})

    received = [frame["event"]["sequence"] for frame in await frames(socket, head)]

    assert received == list(range(1, head + 1))
    assert reads.afters == list(range(0, head, PAGE))
    assert await socket.receive_nothing(timeout=0.2)
    await socket.disconnect()


async def test_a_revocation_between_page_reads_ends_the_replay_at_the_next_read(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """wire§7: the membership is revoked just before the third page read runs, while the
    pages before it are still being sent. The socket gets the two pages read before the
    revocation (events 1–8), then ``NOT_A_MEMBER``, then nothing — although reads were
    queued behind the revoked one."""
    await create_missions(world, 30)

    async def revoke() -> None:
        await database_sync_to_async(services.membership_revoke)(
            group_id=world.group, admin=world.alice.caller, principal=world.w2.principal
        )

    reads = RecordedReads(before={3: revoke})
    monkeypatch.setattr(consumers, "_read", reads)
    socket = await connected(world.w2.token)
    await socket.send_json_to(
        {"op": "SUBSCRIBE", "group": world.group, "afterSequence": 0, "batch": True}
    )

    received: list[int] = []
    while True:
        frame = json.loads(await socket.receive_from(timeout=3))
        if frame["op"] != "EVENTS":
            break
        received.extend(event["sequence"] for event in frame["events"])

    assert received == list(range(1, 2 * PAGE + 1))
    assert (frame["op"], frame["code"], frame["group"]) == ("ERROR", "NOT_A_MEMBER", world.group)
    assert await socket.receive_nothing(timeout=0.3)
    assert reads.afters[:3] == [0, PAGE, 2 * PAGE]
    await socket.disconnect()
