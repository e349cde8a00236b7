"""Event pages read ahead for REST readers catching up (``GET …/events``, issue 15).

A reader catching up on a group asks for a page, waits for the whole answer, reads it, and
only then asks for the next. Each page's read in PostgreSQL, the answer's transfer and the
reader's own work came one after another, so a REST replay reached about 0.4× of a raw
keyset read of the same rows (docs/benchmarks.md, section 8). When the edge answers a *full*
page that ends before the head it reports, the reader will almost surely ask next for the
page after it, with the same limit: the edge starts reading that page while the answer is
sent and read, and keeps it here under the request it expects.

What is kept is only ever served after the request's own checks, made when it arrives
(``apps/api/edge.py``): the token, the membership and the session, the head and that the
first event asked for is still in the online log, read in one round trip as for any page.
A *full* page read ahead is then exactly the page a fresh read would return: the log is
append-only and gapless, its head only grows and archiving moves a prefix, so the events
``after + 1 … after + limit`` are the same whenever they are read (R16-05, wire.md §4). A
page that was not full, or whose read failed, is never served: the request reads afresh.

Pages are kept per process, by the token, group, ``after`` and ``limit`` of the request
expected. A keep-alive connection's requests reach the process that read ahead; elsewhere
the next request reads afresh and the page read ahead is dropped when it expires. At most
``in_flight`` reads ahead run at once, so readers catching up cannot take the threads that
answer commands, and no new one starts while the pages kept hold ``max_bytes`` of events
(counted as the characters of their JSON, almost all ASCII), and beyond ``capacity`` pages the
oldest is dropped: a page of large events is bounded by what one request already reads, the
pages kept by these.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field

from apps.ledger.metrics import count_read_ahead
from apps.ledger.selectors import EventPage

#: pages kept per process (one page is at most ``MAX_PAGE`` events, ~650 KB in the benchmark)
CAPACITY = 16
#: reads ahead running at once per process (the edge has ``EDGE_THREADS`` threads)
IN_FLIGHT = 2
#: no read ahead starts while the pages kept hold this many bytes of events
MAX_BYTES = 64 * 1024 * 1024
#: a page not asked for within this many seconds is dropped
TTL_S = 10.0


@dataclass(frozen=True, slots=True)
class PageKey:
    """The request a page read ahead answers."""

    token: str
    group: str
    after: int
    limit: int


@dataclass(slots=True)
class _Kept:
    future: Future[EventPage]
    started_at: float
    size: int | None = field(default=None)  # characters of its events' JSON, once read

    def bytes_held(self) -> int:
        """The size of the events this page holds, as characters of their JSON (almost all
        ASCII, so about their bytes): 0 while it is read or if its read failed."""
        if self.size is None and self.future.done():
            failed = self.future.exception() is not None
            self.size = 0 if failed else sum(map(len, self.future.result().documents))
        return self.size or 0


class NextPages:
    """Pages read ahead, by the request expected. Used on the event loop's thread only; the
    reads themselves run on the edge's threads and are held as their futures."""

    def __init__(
        self,
        *,
        capacity: int = CAPACITY,
        in_flight: int = IN_FLIGHT,
        max_bytes: int = MAX_BYTES,
        ttl_s: float = TTL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.capacity = capacity
        self.in_flight = in_flight
        self.max_bytes = max_bytes
        self.ttl_s = ttl_s
        self._clock = clock
        self._pages: OrderedDict[PageKey, _Kept] = OrderedDict()

    def __len__(self) -> int:
        return len(self._pages)

    def take(self, key: PageKey) -> Future[EventPage] | None:
        """The read ahead for ``key``, removed, unless there is none or it expired."""
        kept = self._pages.pop(key, None)
        if kept is None or self._clock() - kept.started_at > self.ttl_s:
            return None
        return kept.future

    def running(self) -> list[Future[EventPage]]:
        """The reads ahead not finished yet."""
        return [kept.future for kept in self._pages.values() if not kept.future.done()]

    def offer(self, key: PageKey, read: Callable[[], Future[EventPage]]) -> bool:
        """Start ``read`` for ``key`` unless it is already read ahead, too many reads are
        running or the pages kept hold ``max_bytes``; drop expired pages, then the oldest
        beyond ``capacity``."""
        now = self._clock()
        for stale in [k for k, kept in self._pages.items() if now - kept.started_at > self.ttl_s]:
            del self._pages[stale]
        if key in self._pages or len(self.running()) >= self.in_flight:
            return False
        if sum(kept.bytes_held() for kept in self._pages.values()) >= self.max_bytes:
            return False
        self._pages[key] = _Kept(read(), now)
        while len(self._pages) > self.capacity:
            self._pages.popitem(last=False)
        return True


def served_ahead(ahead: Future[EventPage], probe: EventPage, key: PageKey) -> EventPage | None:
    """The page to answer ``key`` with: the one read ahead, under the head just read by the
    request's checks (``probe``), if it is full; else ``None`` (read afresh). ``ahead`` must
    be done. Counted in ``mwp_event_pages_read_ahead_total``."""
    page = ahead.result() if ahead.exception() is None else None
    full = (
        page is not None
        and len(page.documents) == key.limit
        and page.next_after == key.after + key.limit
        and probe.head >= page.next_after
    )
    count_read_ahead(served=full)
    if page is None or not full:
        return None
    return EventPage(page.documents, probe.head, page.next_after)
