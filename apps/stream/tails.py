"""One reader of a group's log per process, shared by every local subscriber (wire.md §7).

A :class:`GroupTail` per (event loop, group) reads each new event once, keeps the most recent
ones, and wakes its local consumers, which send from it. Were every socket to read the log
itself on each hint and poll tick, N sockets of a group in a process would cost N reads per
event, queued one after the other on the process's database thread, and N polls per interval
when nothing happened (docs/benchmarks.md §7).

What a tail guarantees, so that the consumers keep theirs:

* it only ever reads up to the *committed* head, in sequence order, so its cache is always a
  contiguous run ``base+1 .. head`` of visible events (R16-05: nothing is offered past a
  sequence that is not yet visible);
* it is the only thing that reads live events, on a hint (once per burst: hints that name a
  head it has already read are ignored) and on its own poll every ``MWP_STREAM_POLL_S``, so a
  lost hint delays events by at most one interval and idle cost is per group, not per socket;
* it is the only thing that receives the hints: the tail, not each socket, is in the group's
  channel-layer group, so an event's hint is one message per process, not one per socket
  (at 1,000 sockets the per-socket copies were a fifth of the servers' event loop,
  docs/benchmarks.md §7), and it is in that group before :func:`attach` returns, so every
  event committed after a socket attached is hinted to the tail (a join or a receive that
  fails is tried again on a new channel; the poll covers the gap);
* it notes every ``membership.revoked`` it reads, with its sequence: a consumer whose member
  was checked at head H ends its subscription when the tail has read a revocation of that
  principal after H — within one poll interval, before sending anything later (wire.md §7).
  Memberships are projections of this same log, so no revocation can bypass it.

A consumer whose cursor is below the cache (a replay from an old position, or a socket that
fell far behind) reads the log itself, page by page, until it reaches the cache.

A tail never serves a log that is not the database's. The log only grows, but the database
under a running server can be replaced — restored from a backup to an earlier point, or, in
the tests, emptied and filled again under the same group ids — and a cache kept across that
would send events that are no longer in the log, which a follower then ACKs beyond the head.
So the tail keeps the hash of every sequence it holds and starts again at the database's
head when the two disagree: when a SUBSCRIBE's check reads a head whose hash differs from the
cached one (``agrees``), when the committed head is below the cached head, or when an event
read does not chain to the cached head; and a socket is served from the cache only once the
tail has read as far as the head its subscription was checked at (``covers``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import weakref
from collections.abc import Callable
from contextlib import suppress
from typing import Any

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings

from apps.ledger import head as heads
from apps.ledger import selectors
from apps.ledger.broadcast import group_channel, listen_on_this_loop
from missionweave.protocol.errors import ErrorCode, ProtocolError

logger = logging.getLogger(__name__)
#: events read from the log per query, by a tail or by a consumer below its cache
PAGE = selectors.MAX_PAGE
#: events a tail keeps for its consumers; one further behind reads the log itself
CACHED_EVENTS = 4096
#: how long a tail waits before trying again to join its hints' group (Redis away)
JOIN_RETRY_S = 1.0

Wake = Callable[[str], None]


@database_sync_to_async
def _committed_position(group_id: str) -> tuple[int, str | None]:
    return heads.committed_position(group_id) or (0, None)


@database_sync_to_async
def _read_after(group_id: str, after: int) -> tuple[int, list[str] | None]:
    """(committed head, the next page of events after ``after`` up to it); ``None`` instead of
    the page when ``after`` is below the online floor (the tail starts again at the head)."""
    try:
        return selectors.visible_page(group_id, after=after, limit=PAGE)
    except ProtocolError as error:
        if error.code is not ErrorCode.CURSOR_TOO_OLD:
            raise
        return heads.committed_head(group_id) or 0, None


class GroupTail:
    """The recent events of one group in one process (see the module docstring)."""

    def __init__(self, group_id: str, head: int, head_hash: str | None) -> None:
        self.group_id = group_id
        self.consumers: dict[int, Wake] = {}
        self.restart(head, head_hash)
        self._dirty = False
        self._reader: asyncio.Task[None] | None = None
        self._poller: asyncio.Task[None] | None = None
        self._listener: asyncio.Task[None] | None = None
        #: set once the first attempt to join the hints' group is over (see ``_listen``)
        self.joined = asyncio.Event()

    # -- what consumers read -------------------------------------------------------------

    def covers(self, cursor: int, checked_at: int) -> bool:
        """Whether every event after ``cursor`` that this process may send is in the cache,
        and the cache reaches ``checked_at``, the head a subscription's check read: below it,
        the tail has not yet read — and chained to its cache — what that check saw."""
        return cursor >= self.base and self.head >= checked_at

    def after(self, cursor: int) -> list[str]:
        """The cached events after ``cursor``, in order (empty when it is at the head)."""
        return [self.documents[sequence] for sequence in range(cursor + 1, self.head + 1)]

    def revoked_since(self, principal: str, checked_at: int) -> bool:
        """Whether a revocation of ``principal`` after sequence ``checked_at`` was read."""
        return self.revocations.get(principal, 0) > checked_at

    # -- the log it mirrors --------------------------------------------------------------

    def agrees(self, sequence: int, hash_: str) -> bool:
        """Whether the database's event ``sequence`` with ``hash_`` may be the cached one: it
        is, or the cache does not hold that sequence (see the module docstring)."""
        cached = self.hashes.get(sequence)
        return cached is None or cached == hash_

    def restart(self, head: int, head_hash: str | None, *, same_log: bool = False) -> None:
        """Forget the cache and hold the log from ``head`` on (its hash, if known). In the
        ``same_log`` (read further on, past what was archived under the cache) the
        revocations read so far still hold; in another log they mean nothing."""
        self.base = self.head = head  # the cache holds base+1 .. head
        self.documents: dict[int, str] = {}
        self.hashes: dict[int, str] = {} if head_hash is None else {head: head_hash}
        if not same_log:
            self.revocations: dict[str, int] = {}  # principal -> last revocation read

    # -- waking --------------------------------------------------------------------------

    def wake(self, head: int | None = None) -> None:
        """Read the log soon: on a hint naming ``head`` (ignored if already read) or a poll."""
        if head is not None and head <= self.head:
            return
        self._dirty = True
        if self._reader is None or self._reader.done():
            self._reader = asyncio.create_task(self._read_while_dirty())

    async def _read_while_dirty(self) -> None:
        try:
            while self._dirty and self.consumers:
                self._dirty = False
                if await self._read():
                    for wake in list(self.consumers.values()):
                        wake(self.group_id)
        except asyncio.CancelledError:
            raise
        except Exception:  # the next hint or poll reads again
            logger.exception("reading the tail of %s failed", self.group_id)

    async def _read(self) -> bool:
        """Read every committed event after the cached head; whether any arrived."""
        moved = False
        while True:
            head, documents = await _read_after(self.group_id, self.head)
            if documents is None:  # the log under the cache was archived: start at the head
                self.restart(head, None, same_log=True)
                return True
            if head < self.head:  # the database went back: the cache is not its log
                logger.warning("the log of %s is at %d, below its tail", self.group_id, head)
                self.restart(head, None)
                return True
            if not documents:
                return moved
            for document in documents:
                self._remember(document)
            moved = True

    def _remember(self, document: str) -> None:
        event: dict[str, Any] = json.loads(document)
        sequence = event["sequence"]
        if sequence != self.head + 1:  # never: a page is the next contiguous run
            raise RuntimeError(f"tail of {self.group_id} at {self.head} read {sequence}")
        if not self.agrees(self.head, event["prev_hash"]):  # another log under the same id
            logger.warning("the log of %s no longer chains to its tail", self.group_id)
            self.restart(self.head, event["prev_hash"])
        if event["type"] == "membership.revoked":
            self.revocations[event["payload"]["principal"]] = sequence
        self.documents[sequence] = document
        self.hashes[sequence] = event["hash"]
        self.head = sequence
        while len(self.documents) > CACHED_EVENTS:
            self.base += 1
            del self.documents[self.base]
            self.hashes.pop(self.base - 1, None)

    async def _poll(self) -> None:
        interval = settings.MWP_STREAM_POLL_S
        while True:
            await asyncio.sleep(interval)
            self.wake()

    # -- hints -----------------------------------------------------------------------------

    async def _listen(self) -> None:
        """Join the group's hint channel, then wake the tail on each hint, for the tail's
        life. A join that fails (Redis away), or a receive that raises, is tried again after
        ``JOIN_RETRY_S`` on a new channel; meanwhile the poll reads the log, as it does for a
        hint that was lost."""
        layer = get_channel_layer()
        try:
            while layer is not None:
                await self._receive_hints(layer)  # returns only when something failed
                self.joined.set()  # a failed first join: attach goes on, the poll covers
                await asyncio.sleep(JOIN_RETRY_S)
        finally:
            self.joined.set()  # cancelled while joining, too: no attach waits for ever

    async def _receive_hints(self, layer: Any) -> None:
        """One channel's life: join, then wake on each hint until something fails."""
        hints, channel = group_channel(self.group_id), None
        try:
            channel = await layer.new_channel("mwp.tail.")
            await layer.group_add(hints, channel)
            listen_on_this_loop()  # the in-memory layer's hints are started here
            self.joined.set()
            while True:
                message = await layer.receive(channel)
                head = message.get("head")
                self.wake(head if isinstance(head, int) and not isinstance(head, bool) else None)
        except Exception:
            logger.warning(
                "hints for %s interrupted; its poll reads the log", self.group_id, exc_info=True
            )
        finally:
            if channel is not None:
                with suppress(Exception):
                    await layer.group_discard(hints, channel)

    # -- consumers -----------------------------------------------------------------------

    def add(self, key: int, wake: Wake) -> None:
        self.consumers[key] = wake
        if self._poller is None:
            self._poller = asyncio.create_task(self._poll())
        if self._listener is None:
            self._listener = asyncio.create_task(self._listen())

    def remove(self, key: int) -> bool:
        """Forget a consumer; whether none is left (the tail then stops)."""
        self.consumers.pop(key, None)
        if self.consumers:
            return False
        for task in (self._poller, self._reader, self._listener):
            if task is not None:
                task.cancel()
        return True


#: per event loop (daphne runs one per process; tests run one per test), per group
_tails: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, GroupTail]] = (
    weakref.WeakKeyDictionary()
)


async def attach(group_id: str, key: int, wake: Wake) -> GroupTail:
    """The group's tail in this process, created at the committed head if there is none,
    once it receives the group's hints (or its first attempt to join them failed).

    Attach *before* checking the membership: the tail then reads every event after the head
    that check sees, revocations included.
    """
    tails = _tails.setdefault(asyncio.get_running_loop(), {})
    tail = tails.get(group_id)
    if tail is None:
        head, head_hash = await _committed_position(group_id)
        tail = tails.setdefault(group_id, GroupTail(group_id, head, head_hash))
    tail.add(key, wake)
    await tail.joined.wait()
    return tail


def detach(group_id: str, key: int) -> None:
    tails = _tails.get(asyncio.get_running_loop(), {})
    tail = tails.get(group_id)
    if tail is not None and tail.remove(key):
        del tails[group_id]
