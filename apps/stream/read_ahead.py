"""Pages of the log read ahead of a replaying socket (wire.md §7).

A socket whose cursor is below its group's tail reads the log itself, a page at a time. Read
one after the other, the page reads and the sending of what they return take turns: while a
frame is built and written, no read is waiting on the database thread, and while a page is
read, nothing is sent. A million-event replay in batched frames spent 2.6–2.9 s of its
3.0–3.4 s in reads the database thread could have started earlier (docs/benchmarks.md §8).

:class:`ReadAhead` keeps up to ``depth`` further reads queued behind the one the socket
waits for, each after the last sequence the one before it will end at if it comes back
full. The reads run in the order they were queued (the consumers' database calls share one
thread), so their membership checks are in time order too: a page is sent only if the
membership was active when *it* was read, the first page that finds it revoked ends the
subscription, and the pages queued behind it are dropped — as when they were read one at a
time, at most ``depth`` pages later than a read would have started otherwise.

Only a full page says there may be more, and only up to the head it was read at: a short
page (the head reached) drops the queue, as does a cursor the queue does not start at, and
the next call reads from the socket's cursor afresh. At most ``depth + 1`` pages of a socket
are held in memory.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable

from apps.ledger.selectors import EventPage

#: reads queued behind the one a replaying socket waits for; two kept the database thread
#: busy through a frame's building and sending in the measurements of docs/benchmarks.md §8
DEPTH = 2

PageRead = Callable[[int], Awaitable[EventPage | None]]


class ReadAhead:
    """The next pages after a cursor, read ``depth`` pages ahead (see the module docstring).

    ``read(after)`` is the page of at most ``page_size`` events after ``after``, or ``None``
    when the reader is no longer a member.
    """

    def __init__(self, read: PageRead, *, page_size: int, depth: int = DEPTH) -> None:
        self._read = read
        self._page_size = page_size
        self._depth = depth
        self._queued: deque[tuple[int, asyncio.Task[EventPage | None]]] = deque()

    async def page_after(self, cursor: int) -> EventPage | None:
        """The page after ``cursor``: from the queue when its first read starts there, else
        read now; then the queue is topped up behind it if it came back full. Raises what
        the read raises (``CURSOR_TOO_OLD``)."""
        if not self._queued or self._queued[0][0] != cursor:
            self.cancel()
            self._queue(cursor)
        _, task = self._queued.popleft()
        try:
            page = await task
        except BaseException:
            self.cancel()
            raise
        if page is None or len(page.documents) < self._page_size:
            self.cancel()
        else:
            self._top_up(page)
        return page

    def cancel(self) -> None:
        """Drop every queued read: cancelled if not yet started, its result let go if done."""
        while self._queued:
            _, task = self._queued.popleft()
            if task.done():
                if not task.cancelled():
                    task.exception()  # retrieved: a dropped read's error is not logged
            else:
                task.cancel()

    @property
    def queued(self) -> list[int]:
        """The cursors of the queued reads, in order (for tests and reports)."""
        return [after for after, _ in self._queued]

    def _top_up(self, page: EventPage) -> None:
        """Queue reads behind ``page`` up to ``depth``, none starting at or past the head it
        was read at (what follows is the live tail's, or the next call's). What is queued
        already starts at ``page``'s end: a full page ends ``page_size`` after its cursor."""
        after = self._queued[-1][0] + self._page_size if self._queued else page.next_after
        while len(self._queued) < self._depth and after < page.head:
            self._queue(after)
            after += self._page_size

    def _queue(self, after: int) -> None:
        self._queued.append((after, asyncio.ensure_future(self._read(after))))
