"""``ReadAhead`` (apps/stream/read_ahead.py): a replaying socket's next pages are queued
behind the one it waits for, in order, and dropped the moment they cannot be the next ones
(wire.md §7: no gap, no reordering; a revoked member gets nothing read after the revocation).

The reads here are scripted coroutines over a list of sequences, so what is asserted is the
queue itself: which reads start, in what order, and what each call returns. The consumer's
use of it against PostgreSQL is ``test_replay_read_ahead.py``.
"""

from __future__ import annotations

import asyncio

import pytest

from apps.ledger.selectors import EventPage
from apps.stream.read_ahead import ReadAhead
from missionweave.protocol.errors import ErrorCode, ProtocolError

PAGE = 3


class ScriptedLog:
    """A log of ``head`` events whose reads are recorded; ``revoked_from``: the read number
    (1-based) from which the reader is no longer a member; ``too_old``: cursors whose read
    raises ``CURSOR_TOO_OLD``."""

    def __init__(
        self, head: int, *, revoked_from: int | None = None, too_old: frozenset[int] = frozenset()
    ) -> None:
        self.head = head
        self.revoked_from = revoked_from
        self.too_old = too_old
        self.started: list[int] = []

    async def read(self, after: int) -> EventPage | None:
        self.started.append(after)
        number = len(self.started)
        await asyncio.sleep(0)
        if after in self.too_old:
            raise ProtocolError(ErrorCode.CURSOR_TOO_OLD, "archived", requirement="R16-10")
        if self.revoked_from is not None and number >= self.revoked_from:
            return None
        last = min(after + PAGE, self.head)
        documents = [f"e{sequence}" for sequence in range(after + 1, last + 1)]
        return EventPage(documents, self.head, max(last, after))


async def _replay(ahead: ReadAhead, cursor: int = 0) -> list[str]:
    """What a socket would send from ``cursor``, page by page, until a page is empty."""
    sent: list[str] = []
    while True:
        page = await ahead.page_after(cursor)
        if page is None or not page.documents:
            return sent
        sent.extend(page.documents)
        cursor = page.next_after


async def test_a_replay_gets_every_event_in_order_with_two_reads_queued_ahead() -> None:
    """wire§7: pages come back in order with nothing missing or repeated; behind each full
    page two further reads wait, starting where the pages before them end, none at or past
    the head."""
    log = ScriptedLog(head=10)
    ahead = ReadAhead(log.read, page_size=PAGE, depth=2)

    first = await ahead.page_after(0)
    assert first is not None
    assert first.documents == ["e1", "e2", "e3"]
    assert ahead.queued == [3, 6]

    rest = await _replay(ahead, first.next_after)

    assert first.documents + rest == [f"e{sequence}" for sequence in range(1, 11)]
    # each page read once, in order; none queued past the head (9 + 3 > 10); the last read
    # is _replay's own, after the short page, which finds nothing
    assert log.started == [0, 3, 6, 9, 10]
    assert ahead.queued == []


async def test_a_short_page_leaves_nothing_queued() -> None:
    """Only a full page says there may be more: at the head, no read is queued behind."""
    log = ScriptedLog(head=2)
    ahead = ReadAhead(log.read, page_size=PAGE, depth=2)

    page = await ahead.page_after(0)

    assert page is not None
    assert page.documents == ["e1", "e2"]
    assert ahead.queued == []
    assert log.started == [0]


async def test_a_cursor_the_queue_does_not_start_at_is_read_afresh() -> None:
    """A socket whose cursor moved otherwise (the tail served it) does not get a queued
    page: the queue is dropped and the read starts at its cursor."""
    log = ScriptedLog(head=30)
    ahead = ReadAhead(log.read, page_size=PAGE, depth=2)
    await ahead.page_after(0)

    page = await ahead.page_after(20)

    assert page is not None
    assert page.documents == ["e21", "e22", "e23"]
    assert ahead.queued == [23, 26]


async def test_the_first_page_read_after_a_revocation_ends_it_and_drops_the_queue() -> None:
    """wire§7: reads run in queue order, so the first one that finds the membership gone
    answers ``None``; nothing queued behind it is handed out."""
    log = ScriptedLog(head=30, revoked_from=3)
    ahead = ReadAhead(log.read, page_size=PAGE, depth=2)

    sent = await _replay(ahead)

    assert sent == ["e1", "e2", "e3", "e4", "e5", "e6"]  # the two pages read before it
    assert ahead.queued == []


async def test_a_refused_read_is_raised_for_its_own_page_and_drops_the_queue() -> None:
    """R16-10: ``CURSOR_TOO_OLD`` reaches the socket when it asks for that page, not
    before; the pages before it are handed out first."""
    log = ScriptedLog(head=30, too_old=frozenset({6}))
    ahead = ReadAhead(log.read, page_size=PAGE, depth=2)
    assert (await ahead.page_after(0)) is not None
    assert (await ahead.page_after(3)) is not None

    with pytest.raises(ProtocolError) as refused:
        await ahead.page_after(6)

    assert refused.value.code is ErrorCode.CURSOR_TOO_OLD
    assert ahead.queued == []


async def test_cancel_stops_the_reads_not_yet_run() -> None:
    """A socket that leaves or goes live drops its queue: reads not yet started never run."""
    log = ScriptedLog(head=30)
    ahead = ReadAhead(log.read, page_size=PAGE, depth=2)
    await ahead.page_after(0)  # queues 3 and 6, neither started: nothing awaited them yet

    ahead.cancel()
    await asyncio.sleep(0.01)

    assert log.started == [0]
    assert ahead.queued == []
