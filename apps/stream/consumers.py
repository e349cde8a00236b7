"""``/ws/v1/stream``: SUBSCRIBE replays the log after a sequence, then follows it live.

Events are always read from the log by sequence, never taken from the channel layer, which
only carries hints that a head moved (it delivers at most once). A consumer also polls the
heads of its groups, so a lost hint — or a writer in another process with the in-memory
layer — delays an event by at most one poll interval, and a revoked membership ends the
subscription within one second.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from apps.ledger import selectors
from apps.ledger.broadcast import group_channel
from apps.ledger.models import GroupLog
from apps.ledger.write_path import Caller
from apps.registry.services import membership_of
from apps.stream import cursors as ack_cursors
from missionweave.protocol import strictjson
from missionweave.protocol.errors import ErrorCode, ProtocolError

logger = logging.getLogger(__name__)
MAX_FRAME_BYTES = 64 * 1024
PAGE = 500


@database_sync_to_async
def _check_subscription(group_id: str, principal: str) -> int:
    """The group's head if ``principal`` may read it; ``ProtocolError`` otherwise."""
    return selectors.access_group(group_id, principal).head_sequence


@database_sync_to_async
def _read(group_id: str, principal: str, after: int) -> tuple[bool, list[str]]:
    """(still a member, the next page of events after ``after`` up to the committed head)."""
    if membership_of(group_id, principal) is None:
        return False, []
    head = (
        GroupLog.objects.filter(group_id=group_id).values_list("head_sequence", flat=True).first()
    )
    if head is None or head <= after:
        return True, []
    page = selectors.events_page(group_id, after=after, limit=PAGE, head=head)
    return True, page.documents


@database_sync_to_async
def _acknowledge(principal: str, cursors: dict[str, int]) -> ack_cursors.AckOutcome:
    return ack_cursors.acknowledge(principal, cursors)


class StreamConsumer(AsyncWebsocketConsumer):
    async def connect(self) -> None:
        self.caller: Caller | None = self.scope.get("mwp_caller")
        if self.caller is None:
            await self.close(code=4401)
            return
        self.cursors: dict[str, int] = {}
        self.locks: dict[str, asyncio.Lock] = {}
        await self.accept()
        self.poller = asyncio.create_task(self._poll())

    async def disconnect(self, code: int) -> None:
        poller = getattr(self, "poller", None)
        if poller is not None:
            poller.cancel()
        for group_id in list(getattr(self, "cursors", {})):
            await self.channel_layer.group_discard(group_channel(group_id), self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
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
            group = frame.get("group") if isinstance(locals().get("frame"), dict) else None
            await self._error(
                error.code.value, error.message, group if isinstance(group, str) else None
            )

    async def _subscribe(self, frame: dict[str, Any]) -> None:
        group_id, after = frame.get("group"), frame.get("afterSequence", 0)
        if not isinstance(group_id, str):
            raise ProtocolError(ErrorCode.MALFORMED, "SUBSCRIBE names a group")
        if isinstance(after, bool) or not isinstance(after, int) or after < 0:
            raise ProtocolError(ErrorCode.MALFORMED, "afterSequence is a non-negative integer")
        assert self.caller is not None
        await _check_subscription(group_id, self.caller.principal)
        self.cursors[group_id] = after
        self.locks.setdefault(group_id, asyncio.Lock())
        await self.channel_layer.group_add(group_channel(group_id), self.channel_name)
        await self._pump(group_id)

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

    async def group_head(self, message: dict[str, Any]) -> None:
        """A hint from the write path: read the log of that group."""
        if message.get("group") in self.cursors:
            await self._pump(message["group"])

    async def _pump(self, group_id: str) -> None:
        """Send every event after the group's cursor, in order, exactly once per connection.

        A cursor below the online floor (events archived, at SUBSCRIBE or while this socket
        lagged) ends the subscription with ``CURSOR_TOO_OLD`` and the snapshot to restore
        (wire.md §7, R16-10); the client resubscribes after the snapshot's sequence.
        """
        assert self.caller is not None
        async with self.locks[group_id]:
            while group_id in self.cursors:
                try:
                    member, documents = await _read(
                        group_id, self.caller.principal, self.cursors[group_id]
                    )
                except ProtocolError as error:
                    if error.code is not ErrorCode.CURSOR_TOO_OLD:
                        raise
                    await self._too_old(group_id, error)
                    return
                if not member:
                    await self._end(group_id)
                    return
                if not documents:
                    return
                for document in documents:
                    await self.send(text_data='{"op":"EVENT","event":' + document + "}")
                self.cursors[group_id] = json.loads(documents[-1])["sequence"]

    async def _end(self, group_id: str) -> None:
        self.cursors.pop(group_id, None)
        await self.channel_layer.group_discard(group_channel(group_id), self.channel_name)
        await self._error(
            ErrorCode.NOT_A_MEMBER.value, "the membership in this group was revoked", group_id
        )

    async def _too_old(self, group_id: str, error: ProtocolError) -> None:
        self.cursors.pop(group_id, None)
        await self.channel_layer.group_discard(group_channel(group_id), self.channel_name)
        frame = {
            "op": "ERROR",
            "code": ErrorCode.CURSOR_TOO_OLD.value,
            "group": group_id,
            "snapshot": error.details.get("snapshot"),
        }
        await self.send(text_data=json.dumps(frame))

    async def _poll(self) -> None:
        interval = settings.MWP_STREAM_POLL_S
        while True:
            await asyncio.sleep(interval)
            for group_id in list(self.cursors):
                try:
                    await self._pump(group_id)
                except Exception:  # keep the socket's poller alive; the next tick retries
                    logger.exception("stream poll of %s failed", group_id)

    async def _error(self, code: str, message: str, group: str | None) -> None:
        frame: dict[str, Any] = {"op": "ERROR", "code": code, "message": message}
        if group is not None:
            frame["group"] = group
        await self.send(text_data=json.dumps(frame))
