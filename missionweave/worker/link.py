"""The worker's line to the authority: commands go out, or the worker knows it is offline.

Every command and read of the runtime passes through ``Link``. ``AgentClient`` already
retries network errors and 5xx answers under the same command id (wire.md §3 step 5); when it
gives up (``Unavailable``) the link records *when* the worker lost the authority (the
``disconnected_at`` of every binding, R11.5-08) and raises ``Offline``. From then on:

- nothing new goes out (no acceptance, no start, no submission: R11.5-05, R11.5-06) — callers
  get ``Offline`` at once instead of waiting through the client's retries;
- progress and checkpoints of active items are buffered, signed, in ``OfflineBuffer``
  (R11.5-04), by ``buffer``;
- ``reconnect`` probes the authority at most every ``probe_every_s``; once it answers, the
  buffer is flushed in order, re-signed with the current session (R11.5-09), and only when it
  is empty is the link online again: reconciliation comes before any submission (R11.5-06).

A buffered checkpoint, once reconciled, only records where to resume (the authority releases
no lease for it, docs/protocol.md "Reconciliation"). If the lease it was taken under is still
live after a short outage, the same checkpoint is then sent again as an ordinary
``work.checkpoint`` under a new id, which releases execution and puts the item back in the
queue (R10.2-08); if the lease is gone, the authority refuses it and nothing changes.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from missionweave.client.agent import CommandResult
from missionweave.client.errors import ApiError, Unavailable

from .authority import Authority
from .offline import Buffered, OfflineBuffer

log = logging.getLogger("missionweave.worker")


class Offline(Exception):
    """The authority cannot be reached now; ``since`` is when the worker lost it."""

    def __init__(self, since: datetime) -> None:
        super().__init__(f"the authority is unreachable since {since.isoformat()}")
        self.since = since


class Link:
    def __init__(
        self,
        authority: Authority,
        buffer: OfflineBuffer,
        *,
        clock: Callable[[], datetime],
        probe_every_s: float = 1.0,
        on_change: Callable[[bool], None] | None = None,
        on_not_member: Callable[[str], None] | None = None,
        on_refused: Callable[[Buffered, ApiError], None] | None = None,
    ) -> None:
        self.authority = authority
        self.buffer = buffer
        self._clock = clock
        self._probe_every_s = probe_every_s
        self._on_change = on_change
        self._on_not_member = on_not_member
        self._on_refused = on_refused
        self._lock = threading.Lock()
        self._offline_since: datetime | None = None
        self._next_probe = 0.0
        # commands left in the file by an earlier run are reconciled before anything else
        if len(buffer):
            self._offline_since = clock()

    @property
    def offline_since(self) -> datetime | None:
        with self._lock:
            return self._offline_since

    @property
    def online(self) -> bool:
        return self.offline_since is None

    def _require_online(self) -> None:
        since = self.offline_since
        if since is not None:
            raise Offline(since)

    def _lost(self, since: datetime) -> Offline:
        with self._lock:
            changed = self._offline_since is None
            if changed:
                self._offline_since = since
                self._next_probe = time.monotonic() + self._probe_every_s
            since = self._offline_since or since
        if changed:
            log.warning("authority unreachable since %s: offline mode", since.isoformat())
            if self._on_change is not None:
                self._on_change(False)
        return Offline(since)

    def send(
        self, group: str, type_: str, body: dict[str, Any], command_id: str | None = None
    ) -> CommandResult:
        """Submit one command; ``ApiError`` is the authority's refusal, ``Offline`` means it
        was not reached (the client's retries are spent). A ``NOT_A_MEMBER`` refusal is also
        told to ``on_not_member``: the membership in ``group`` is gone (wire.md §2, §7)."""
        self._require_online()
        began = self._clock()
        try:
            return self.authority.submit(group, type_, body, command_id)
        except Unavailable:
            raise self._lost(began) from None
        except ApiError as error:
            if error.code == "NOT_A_MEMBER" and self._on_not_member is not None:
                self._on_not_member(group)
            raise

    def read(self, path: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self._require_online()
        began = self._clock()
        try:
            return self.authority.get_json(path, params)
        except Unavailable:
            raise self._lost(began) from None

    def call[T](self, action: Callable[[], T]) -> T:
        """Any other exchange (uploads, a feed's catch-up), with the same bookkeeping."""
        self._require_online()
        began = self._clock()
        try:
            return action()
        except Unavailable:
            raise self._lost(began) from None

    def reconnect(self) -> bool:
        """Probe the authority when due; reconcile the buffer; True once online again."""
        with self._lock:
            if self._offline_since is None:
                return True
            if time.monotonic() < self._next_probe:
                return False
            self._next_probe = time.monotonic() + self._probe_every_s
        try:
            self.authority.get_json("/sessions/current")
        except Unavailable:
            return False
        except ApiError:
            pass  # a refusal is an answer: the authority is there
        if not self.buffer.flush(self.authority, self._reconciled):
            return False
        with self._lock:
            self._offline_since = None
        log.info("authority reachable again: buffer reconciled, online")
        if self._on_change is not None:
            self._on_change(True)
        return True

    def _reconciled(self, entry: Buffered, refusal: ApiError | None) -> None:
        if refusal is not None:
            log.warning(
                "buffered %s of %s refused on reconciliation: %s",
                entry.type,
                entry.body.get("work_item"),
                refusal,
            )
            if self._on_refused is not None:  # e.g. an overflowing budget (R11.5-13)
                self._on_refused(entry, refusal)
            return
        if entry.type == "work.checkpoint":
            # release the lease if it is still live (see the module doc)
            with contextlib.suppress(ApiError, Unavailable):
                self.authority.submit(entry.group, "work.checkpoint", entry.body)
