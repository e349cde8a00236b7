"""``/ws/v1/stream``: SUBSCRIBE replays the log after a sequence, then follows it live.

Events are always read from the log by sequence, never taken from the channel layer, which
only carries hints that a head moved (it delivers at most once), and only to the tails. Live
events are read once per process and group by a shared :class:`~apps.stream.tails.GroupTail`,
which receives the group's hints for every socket of the process and also polls the
head, so a lost hint — or a writer in another process with the in-memory layer — delays an
event by at most one poll interval, and a revoked membership ends the subscription within one
second. A socket replaying from an older position reads the log itself until it reaches the
tail's cache.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from bisect import bisect_right
from functools import partial
from itertools import accumulate
from typing import Any

from channels.consumer import get_handler_name
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from apps.ledger import metrics, selectors
from apps.ledger.selectors import spliced
from apps.ledger.write_path import Caller
from apps.stream import cursors as ack_cursors
from apps.stream import tails
from apps.stream.read_ahead import ReadAhead
from missionweave.protocol import strictjson
from missionweave.protocol.errors import ErrorCode, ProtocolError

logger = logging.getLogger(__name__)
MAX_FRAME_BYTES = 64 * 1024
#: an ``EVENTS`` frame (``"batch": true``, wire.md §7) holds at most this many events and,
#: unless one event alone is larger, about this many bytes: under the 1 MiB a websocket
#: client accepts by default
BATCH_EVENTS = 1000
BATCH_BYTES = 256 * 1024


def batch_ends(sizes: list[int]) -> list[int]:
    """Where each ``EVENTS`` frame of events of ``sizes`` (characters) ends, exclusive: as
    many events as fit in ``BATCH_EVENTS`` and ``BATCH_BYTES`` of documents, one at least.
    Found by bisecting the running total, not by a loop per event (a replay's page holds a
    thousand)."""
    totals = [0, *accumulate(sizes)]
    ends, start = [], 0
    while start < len(sizes):
        fits = bisect_right(totals, totals[start] + BATCH_BYTES) - 1
        start = max(start + 1, min(fits, start + BATCH_EVENTS))
        ends.append(start)
    return ends


@database_sync_to_async
def _check_subscription(group_id: str, principal: str) -> tuple[int, str]:
    """The group's head and its hash if ``principal`` may read it; ``ProtocolError``
    otherwise."""
    log = selectors.access_group(group_id, principal)
    return log.head_sequence, log.head_hash


@database_sync_to_async
def _read(group_id: str, principal: str, after: int) -> selectors.EventPage | None:
    """The next page of events after ``after`` up to the committed head, ``None`` when
    ``principal`` is no longer a member: the membership, the head and the page in one round
    trip on PostgreSQL."""
    return selectors.member_page(group_id, principal, after=after, limit=tails.PAGE)


@database_sync_to_async
def _acknowledge(principal: str, cursors: dict[str, int]) -> ack_cursors.AckOutcome:
    return ack_cursors.acknowledge(principal, cursors)


class StreamConsumer(AsyncWebsocketConsumer):
    """One socket, any number of subscribed groups (wire.md §7).

    Per group the consumer keeps a cursor (the last sequence sent on this socket) and at most
    one *pump* task, which sends what follows the cursor up to the committed head: from the
    group's shared tail, or from the log while the cursor is below the tail's cache. Anything
    that may mean "there is more" — ``SUBSCRIBE``, the tail having read new events, the poll
    tick — only *wakes* the pump: it marks the group dirty and starts the task if none runs.
    The pump clears the mark before each pass, so a burst of wakes during one pass costs one
    more pass, and a wake can never be lost (the check of the mark and the end of the task
    happen in one step of the event loop).
    """

    #: the client has gone: a send failed (see ``send``); nothing more is sent
    gone = False

    async def dispatch(self, message: dict[str, Any]) -> None:
        """Hand ``message`` (the socket's connect, frames and disconnect) to its handler,
        without the thread hop Channels' own ``dispatch`` takes first.

        ``AsyncConsumer.dispatch`` runs ``close_old_connections`` through ``sync_to_async``
        before every message, on the one thread that also runs this process's database
        reads. When each socket still received the hints, 1,000 sockets queued 1,000 such
        hops per event in front of the tail's read of it: 21 % of the servers' samples
        (py-spy) and most of the delivery latency at that level (docs/benchmarks.md §7).
        This consumer touches the database only through ``database_sync_to_async``, which
        closes old connections before and after each call, so the hop buys nothing for a
        client's frame either.
        """
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"no handler for message type {message['type']}")
        await handler(message)

    async def connect(self) -> None:
        self.caller: Caller | None = self.scope.get("mwp_caller")
        if self.caller is None:
            await self.close(code=4401)
            return
        self.cursors: dict[str, int] = {}
        self.batched: set[str] = set()  # groups subscribed with "batch": true
        self.member_at: dict[str, int] = {}  # the head at which the membership was checked
        self.tails: dict[str, tails.GroupTail] = {}
        self.dirty: set[str] = set()
        self.pumps: dict[str, asyncio.Task[None]] = {}
        await self.accept()
        metrics.STREAM_SUBSCRIBERS.inc()
        self.poller = asyncio.create_task(self._poll())

    async def disconnect(self, code: int) -> None:
        poller = getattr(self, "poller", None)
        if poller is not None:  # accepted: counted as a subscriber
            poller.cancel()
            metrics.STREAM_SUBSCRIBERS.dec()
        for task in getattr(self, "pumps", {}).values():
            task.cancel()
        for group_id in list(getattr(self, "tails", {})):
            tails.detach(group_id, id(self))

    async def send(
        self, text_data: str | None = None, bytes_data: bytes | None = None, close: bool = False
    ) -> None:
        """Send a frame, or drop it if the client has gone.

        An ASGI 2.4 server (uvicorn) raises an ``OSError`` from ``send()`` once the peer has
        closed. Raised out of a frame's handler, it would end the consumer there: the frames
        the client sent before it closed — its last ``ACK`` — would never be handled, nor
        would ``disconnect``, which stops this socket's poller and lets go of its tails and
        channel-layer groups. Dropped here, the ``websocket.disconnect`` the server queued
        behind those frames ends the consumer in order
        (tests/stream/test_closing_sockets.py).
        """
        if self.gone:
            return
        try:
            await super().send(text_data=text_data, bytes_data=bytes_data, close=close)
        except OSError:
            self.gone = True

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        frame: object = None  # an ERROR names the frame's group when the frame got that far
        try:
            frame = strictjson.parse(text_data or bytes_data or b"", max_bytes=MAX_FRAME_BYTES)
            if not isinstance(frame, dict) or not isinstance(frame.get("op"), str):
                raise ProtocolError(ErrorCode.MALFORMED, "a frame is an object with an op")
            if frame["op"] == "SUBSCRIBE":
                await self._subscribe(frame)
            elif frame["op"] == "ACK":
                await self._ack(frame)
            else:
                raise ProtocolError(ErrorCode.MALFORMED, f"unknown op {frame['op']!r}")
        except ProtocolError as error:
            group = frame.get("group") if isinstance(frame, dict) else None
            await self._error(
                error.code.value, error.message, group if isinstance(group, str) else None
            )

    async def _subscribe(self, frame: dict[str, Any]) -> None:
        """wire§7, R16-09: replay after ``afterSequence``, then live, with no gap.

        The hand-over is race-free because the live feed is joined *before* the log is read
        — ``tails.attach`` returns once the group's tail is in the group's hint channel —
        and events only ever come from the log, after the cursor:

        * an event committed before the tail joined is in the log when the reads that follow
          run: the tail is woken after the check, and a socket below the tail's cache reads
          the log itself;
        * an event committed after it produces a hint to the tail (or, if the layer drops
          the hint, the tail's next poll tick), hence a later read of the tail, which then
          wakes this socket;
        * every send starts strictly after the last sequence sent and one pump per group
          sends in order, so nothing is sent twice on one socket or out of order.
        """
        group_id, after = frame.get("group"), frame.get("afterSequence", 0)
        if not isinstance(group_id, str):
            raise ProtocolError(ErrorCode.MALFORMED, "SUBSCRIBE names a group")
        if isinstance(after, bool) or not isinstance(after, int) or after < 0:
            raise ProtocolError(ErrorCode.MALFORMED, "afterSequence is a non-negative integer")
        batch = frame.get("batch", False)
        if not isinstance(batch, bool):
            raise ProtocolError(ErrorCode.MALFORMED, "batch is true or false")
        assert self.caller is not None
        if group_id not in self.tails:  # attached before the check: see tails.attach
            self.tails[group_id] = await tails.attach(group_id, id(self), self._wake)
        try:
            checked_at, head_hash = await _check_subscription(group_id, self.caller.principal)
        except ProtocolError:
            if group_id not in self.cursors:
                self.tails.pop(group_id)
                tails.detach(group_id, id(self))
            raise
        tail = self.tails[group_id]
        if not tail.agrees(checked_at, head_hash):  # see tails: another log, same group id
            tail.restart(checked_at, head_hash)
        running = self.pumps.pop(group_id, None)
        if running is not None:  # a new SUBSCRIBE of the same group restarts from its position
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)
        self.cursors[group_id] = after
        if batch:
            self.batched.add(group_id)
        else:
            self.batched.discard(group_id)
        self.member_at[group_id] = checked_at
        self.tails[group_id].wake()  # what committed before the tail joined: see the docstring
        self._wake(group_id)

    async def _ack(self, frame: dict[str, Any]) -> None:
        """wire§7, R16-07: store the principal's durable cursors; one ERROR per refused group
        (NOT_A_MEMBER, ACK_BEYOND_HEAD), then ACKED with the stored value of the others."""
        assert self.caller is not None
        cursors = ack_cursors.parse_ack(frame)
        outcome = await _acknowledge(self.caller.principal, cursors)
        for group_id, error in outcome.refused:
            await self._error(error.code.value, error.message, group_id)
        if outcome.stored:
            await self.send(text_data=json.dumps({"op": "ACKED", "cursors": outcome.stored}))

    def _wake(self, group_id: str) -> None:
        self.dirty.add(group_id)
        task = self.pumps.get(group_id)
        if task is None or task.done():
            self.pumps[group_id] = asyncio.create_task(self._pump_while_dirty(group_id))

    async def _pump_while_dirty(self, group_id: str) -> None:
        try:
            while group_id in self.dirty and group_id in self.cursors:
                self.dirty.discard(group_id)
                await self._pump(group_id)
        except asyncio.CancelledError:
            raise
        except Exception:  # the socket stays up; the next wake (hint or poll) reads again
            logger.exception("stream pump of %s failed", group_id)

    async def _pump(self, group_id: str) -> None:
        """Send every event after the group's cursor up to what is visible, in order.

        From the group's tail when it holds the cursor's successors (the live case: no
        database read of its own), else from the log, page by page (a replay), with the
        next pages' reads queued behind the current one (``ReadAhead``). A membership
        revoked after the head it was checked at ends the subscription before anything later
        is sent. A cursor below the online floor (events archived, at SUBSCRIBE or while this
        socket lagged) ends it with ``CURSOR_TOO_OLD`` and the snapshot to restore (wire.md
        §7, R16-10); the client resubscribes after the snapshot's sequence.
        """
        assert self.caller is not None
        principal = self.caller.principal
        ahead = ReadAhead(partial(_read, group_id, principal), page_size=tails.PAGE)
        try:
            await self._pump_pages(group_id, principal, ahead)
        finally:
            ahead.cancel()

    async def _pump_pages(self, group_id: str, principal: str, ahead: ReadAhead) -> None:
        """``_pump``'s loop; a replay's pages come from ``ahead``, read ahead of the cursor."""
        while group_id in self.cursors and not self.gone:
            tail, cursor = self.tails[group_id], self.cursors[group_id]
            if tail.revoked_since(principal, self.member_at[group_id]):
                await self._end(group_id)
                return
            live = tail.covers(cursor, self.member_at[group_id])
            if live:
                ahead.cancel()
                documents = tail.after(cursor)
            else:
                try:
                    page = await ahead.page_after(cursor)
                except ProtocolError as error:
                    if error.code is not ErrorCode.CURSOR_TOO_OLD:
                        raise
                    await self._too_old(group_id, error)
                    return
                if page is None:
                    await self._end(group_id)
                    return
                documents = page.documents
            if not documents:
                return
            # A page, from the log or the tail, is the contiguous run cursor+1 .. last.
            last = cursor + len(documents)
            if group_id in self.batched:
                await self._send_batched(group_id, documents, first=cursor + 1)
            else:
                for document in documents:
                    await self.send(text_data='{"op":"EVENT","event":' + document + "}")
            if live:  # a replay's events are old by design: not a delivery latency
                metrics.observe_delivery(documents, sent_at=time.time())
            self.cursors[group_id] = last

    async def _send_batched(self, group_id: str, documents: list[str], *, first: int) -> None:
        """``EVENTS`` frames of the consecutive events ``first``, ``first + 1``, …
        (wire.md §7, ``"batch": true``), cut by ``batch_ends``, with the last one's sequence
        at the end, where a client finds it without decoding the events."""
        prefix = '{"op":"EVENTS","group":' + json.dumps(group_id) + ',"events":['
        start = 0
        for end in batch_ends([len(document) for document in documents]):
            await self.send(
                text_data=spliced(prefix, documents[start:end], f'],"last":{first + end - 1}}}')
            )
            start = end

    def _unsubscribe(self, group_id: str) -> None:
        self.cursors.pop(group_id, None)
        self.batched.discard(group_id)
        self.dirty.discard(group_id)
        if self.tails.pop(group_id, None) is not None:
            tails.detach(group_id, id(self))

    async def _end(self, group_id: str) -> None:
        self._unsubscribe(group_id)
        await self._error(
            ErrorCode.NOT_A_MEMBER.value, "the membership in this group was revoked", group_id
        )

    async def _too_old(self, group_id: str, error: ProtocolError) -> None:
        self._unsubscribe(group_id)
        frame = {
            "op": "ERROR",
            "code": ErrorCode.CURSOR_TOO_OLD.value,
            "group": group_id,
            "snapshot": error.details.get("snapshot"),
        }
        await self.send(text_data=json.dumps(frame))

    async def _poll(self) -> None:
        """Each ``MWP_STREAM_POLL_S``, wake every subscribed group this socket is behind in,
        so that a pump whose replay read failed is retried even when no new event wakes it.
        The tails poll the log; a socket already at its tail's head has nothing to send and
        is not woken, so 1,000 idle sockets cost the process no pump runs between events."""
        interval = settings.MWP_STREAM_POLL_S
        while True:
            await asyncio.sleep(interval)
            for group_id in list(self.cursors):
                if self._behind(group_id):
                    self._wake(group_id)

    def _behind(self, group_id: str) -> bool:
        """Whether the pump of ``group_id`` may have something to send or read: the cursor is
        below the tail's head, or the tail does not yet cover it (a replay from the log)."""
        tail, cursor = self.tails[group_id], self.cursors[group_id]
        return cursor < tail.head or not tail.covers(cursor, self.member_at[group_id])

    async def _error(self, code: str, message: str, group: str | None) -> None:
        frame: dict[str, Any] = {"op": "ERROR", "code": code, "message": message}
        if group is not None:
            frame["group"] = group
        await self.send(text_data=json.dumps(frame))
