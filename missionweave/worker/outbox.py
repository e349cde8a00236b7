"""What the runtime says about one running item: sent now, or buffered signed while the
authority cannot be reached (R11.5-04, R11.5-08).

Online, a command goes through the ``Link`` as any other. Offline, and only while the item's
lease is inside its grace period, a bufferable command (progress, a checkpoint, a message:
``protocol.offline.BUFFERABLE``) is signed under the lease's historical session with the
R11.5-08 binding — including the six-dimension usage delta it carries (``usage``: what the
item used since its last charge, R11.5-12) — and kept in the ``OfflineBuffer`` until the link
reconciles it. Nothing else can be buffered: a start, a submission, a block or a usage charge
waits for the authority (R11.5-05, R11.5-06); usage rides on a buffered progress report
instead (``metering.Charger``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from missionweave.client.agent import CommandResult
from missionweave.client.errors import ApiError, ClientError

from .authority import Authority
from .execution import Running
from .link import Link, Offline
from .offline import OfflineBuffer, binding, grace_deadline

log = logging.getLogger("missionweave.worker")


class Outbox:
    def __init__(
        self,
        *,
        link: Link,
        authority: Authority,
        buffer: OfflineBuffer,
        clock: Callable[[], datetime],
        offline_grace_s: float,
    ) -> None:
        self.link = link
        self._authority = authority
        self._buffer = buffer
        self._clock = clock
        self._grace_s = offline_grace_s

    @property
    def online(self) -> bool:
        return self.link.online

    def now(self) -> datetime:
        return self._clock()

    def send(self, run: Running, type_: str, body: dict[str, Any]) -> CommandResult:
        """Send now: ``ApiError`` is the authority's refusal, ``Offline`` that it was not
        reached."""
        return self.link.send(run.group, type_, body)

    def send_or_buffer(self, run: Running, type_: str, body: dict[str, Any]) -> bool:
        """Send ``body`` now, or buffer it signed when offline and still inside the grace
        period; False when it was neither sent nor buffered (a refusal is logged)."""
        if self.link.online:
            try:
                self.send(run, type_, body)
                return True
            except Offline:
                pass
            except ApiError as error:
                log.warning("%s of %s refused: %s", type_, run.work_item, error)
                return False
        return self.buffer(run, type_, body)

    def buffer(
        self,
        run: Running,
        type_: str,
        body: dict[str, Any],
        *,
        usage: Mapping[str, float] | None = None,
    ) -> bool:
        """Buffer ``body`` with its binding (R11.5-08), ``usage`` as its delta; False when the
        link is online again or the grace period is over (nothing was buffered)."""
        since = self.link.offline_since
        now = self._clock()
        deadline = grace_deadline(run.lease_expires_at, self._grace_s)
        if since is None or now > deadline:
            return False
        try:  # re-signed with the current epochs on reconciliation anyway (R11.5-09)
            membership = self._authority.current_session().memberships.get(run.group)
        except ClientError:
            membership = None
        bound = binding(
            agent=self._authority.principal,
            group=run.group,
            work_item=run.work_item,
            session_epoch=run.session_epoch,
            ownership_epoch=run.ownership_epoch,
            lease_id=run.lease_id,
            disconnected_at=max(since, run.lease_started_at),
            buffered_at=max(now, since),
            grace_deadline=deadline,
            lease_expires_at=run.lease_expires_at,
            usage=usage,
        )
        self._buffer.add(
            group=run.group,
            type_=type_,
            body=body,
            bound=bound,
            membership_epoch=membership.epoch if membership else 0,
        )
        return True
