"""How a run ends: its result submitted, its failure reported, or its result kept for later
(R10.2-11, R10.2-13, R11.3-04, R11.3-10, R11.5-03, R11.5-06, R11.5-08, R13.2-02).

Why a module of its own: ending a run is step 4 of the ``Worker``'s tick (``runtime.py``) and
is the same whether the handler just returned in this run or an earlier run kept the result
on disk while offline (``kept.py``). Online, a finished result is uploaded, published and
``work.submit``-ted, and a handler that raised is the owner's ``work.fail``; offline, nothing
is submitted before the buffer is reconciled (R11.5-06), and a finished result is kept on
disk meanwhile so that a shutdown or a crash cannot lose it.

Every submission or failure is charged first, under the lease it closes (R11.5-12); a refused
charge (R11.5-13) leaves the run to ``stops.py``, which blocks it at the next tick.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from datetime import datetime

from missionweave.client.errors import ApiError
from missionweave.protocol import states as S
from missionweave.protocol.timefmt import parse_timestamp

from .authority import Authority
from .config import WorkerConfig
from .execution import Running, evidence_items, failure_body, upload_outputs
from .handlers import TaskResult
from .kept import Kept, ResultShelf
from .link import Link, Offline
from .local_store import QueueStore
from .metering import Charger
from .runs import Key, RunTable
from .slots import SlotPool
from .stops import Stops

log = logging.getLogger("missionweave.worker")

#: refusals that mean the item is no longer this worker's to act on (wire.md §8)
FENCED = frozenset({"STALE_LEASE", "STALE_OWNERSHIP", "FORBIDDEN", "NOT_A_MEMBER"})


class Settlement:
    """Ends the runs of one worker; called from its control loop only.

    ``heads`` is the worker's, which it clears on going offline: the log moves on meanwhile.
    ``drop(key)`` forgets a run that left this worker's hands; ``revoke(group, why)`` fences
    a group whose membership the authority no longer knows (``Worker._revoke``)."""

    def __init__(
        self,
        *,
        config: WorkerConfig,
        authority: Authority,
        principal: str,
        link: Link,
        store: QueueStore,
        pool: SlotPool,
        kept: ResultShelf,
        charger: Charger,
        stops: Stops,
        runs: RunTable,
        clock: Callable[[], datetime],
        heads: dict[str, int],
        drop: Callable[[Key], None],
        revoke: Callable[[str, str], None],
        distrusted: Collection[str] = frozenset(),
    ) -> None:
        self.config = config
        self.authority = authority
        self.principal = principal
        self.link = link
        self.store = store
        self.pool = pool
        self.kept = kept
        self.charger = charger
        self.stops = stops
        self.runs = runs
        self._clock = clock
        self._drop = drop
        self._revoke = revoke
        #: the log's head of each group with a kept result, read once online (``caught_up``);
        #: the worker clears it when the link goes offline
        self.heads = heads
        #: groups whose history contradicts what the worker verified: their kept results wait
        self.distrusted = distrusted

    def settle(self) -> None:
        if self.link.online:
            self.settle_kept()
        for run in self.runs.snapshot():
            if not self.link.online:
                # R11.5-06: reconcile before any submission; meanwhile the result is kept
                self.keep_pending()
                return
            if run.stop_for is not None and (run.result or run.failure) and not run.lost:
                if self.stops.block_finished(run):  # R11.5-13: its cost is not on record
                    self._drop(run.key)
            elif run.result is not None:
                self.submit(run, run.result)
            elif run.failure is not None:
                self.fail(run, f"the handler raised {type(run.failure).__name__}")

    def keep_pending(self) -> None:
        """Keep every finished result not yet submitted on disk (``kept.py``), so that a
        shutdown or a crash before reconnection does not lose it."""
        for run in self.runs.snapshot():
            if run.result is None or run.lost or run.key in self.kept or run.stop_for:
                continue
            self.charger.charge(run)  # buffered now, so a restart cannot lose it (R11.5-08)
            try:
                self.kept.keep(run, run.result, now=self._clock())
            except OSError as error:
                log.error("result of %s/%s not kept: %s", run.group, run.work_item, error)

    def settle_kept(self) -> None:
        """Decide the results an earlier run kept (this run's own are still in ``runs``
        and are submitted by ``settle``, the same way).

        Only once online, which the link is only after the buffer is reconciled (R11.5-06),
        and once the group's projection has caught up with the log's head as read after
        reconnecting: a projection from before the outage would still show the lease the
        new session revoked (R11.3-10). Then, by the projection: still this worker's under
        the same lease — submitted under it (R11.3-04); queued for this worker under the
        same ownership epoch (the lease revoked by a session replacement, R11.3-10) — left
        for ``item_start``, which submits it under the fresh lease; otherwise discarded, said
        in one line: another owner or an end in the log means the result must not complete
        the item (R11.5-03), and the authority would refuse it."""
        running = self.runs.keys()
        for key, kept in list(self.kept.kept.items()):
            if key in running or key[0] in self.distrusted:
                continue
            if key[0] not in self.config.groups:
                self.kept.discard(key, "its group is no longer in the config")
                continue
            if not self.caught_up(key[0]):
                continue
            row = self.store.owned(*key)
            lease = row["lease"] if row else None
            if row is None or row["ownership_epoch"] != kept.ownership_epoch:
                self.kept.discard(key, "the log no longer gives the item to this worker")
            elif row["state"] == S.ACTIVE and lease is not None:
                if lease["lease_id"] == kept.lease_id and lease["status"] == "active":
                    run = self.kept_run(
                        kept,
                        lease_id=lease["lease_id"],
                        started_at=parse_timestamp(lease["started_at"]),
                        expires_at=parse_timestamp(lease["expires_at"]),
                        session_epoch=lease["session_epoch"],
                        urgency=row["terms"]["urgency"],
                    )
                    run.seen_active = True
                else:
                    self.kept.discard(key, "its lease is no longer the one it finished under")
            elif row["state"] != S.QUEUED:
                self.kept.discard(key, f"the item is {row['state']}")

    def caught_up(self, group: str) -> bool:
        """Whether ``group``'s projection has reached the head the log had when first asked
        after reconnecting (one read per group with a kept result)."""
        head = self.heads.get(group)
        if head is None:
            try:
                page = self.link.read(
                    f"/groups/{group}/events", {"after": self.store.cursor(group), "limit": 1}
                )
            except Offline:
                return False
            except ApiError as error:
                if error.code == "NOT_A_MEMBER":
                    self._revoke(group, "its events are refused: NOT_A_MEMBER")
                return False
            head = self.heads[group] = int(page.get("head") or 0)
        return self.store.cursor(group) >= head

    def kept_run(
        self,
        kept: Kept,
        *,
        lease_id: str,
        started_at: datetime,
        expires_at: datetime,
        session_epoch: int | None,
        urgency: str | None,
    ) -> Running:
        """A kept result back in the runtime's hands under ``lease_id``, without a slot:
        ``settle`` submits it and the worker renews the lease meanwhile."""
        now = self._clock()
        run = Running(
            group=kept.group,
            work_item=kept.work_item,
            mission=kept.mission,
            ownership_epoch=kept.ownership_epoch,
            lease_id=lease_id,
            lease_started_at=started_at,
            lease_expires_at=expires_at,
            session_epoch=session_epoch or self.authority.current_session().epoch,
            contract=kept.contract,
            urgency=urgency or "normal",
            org_priority_class=self.config.groups[kept.group].org_priority_class,
            expected_s=0.0,
            started_at=now,
            result=kept.result,
        )
        self.runs.put(kept.key, run)
        return run

    def submit(self, run: Running, result: TaskResult) -> None:
        if not self.charger.charge(run):  # under the lease the submission closes
            return  # refused (R11.5-13): blocked at the next tick, never submitted
        try:
            digests = self.link.call(lambda: upload_outputs(self.authority, run, result))
            evidence = evidence_items(run, result, digests)
            self.link.call(
                lambda: self.authority.submit_work(
                    run.group, run.work_item, run.lease_id, outputs=digests, evidence=evidence
                )
            )
        except Offline:
            self.keep_pending()
            return
        except ApiError as error:
            log.warning("submission of %s refused: %s", run.work_item, error)
            if error.code in FENCED:
                self._drop(run.key)
            else:
                self.fail(run, f"the submission was refused: {error.code}")
            return
        self.pool.checkpoints(run.group, run.work_item).discard()
        self._drop(run.key)

    def fail(self, run: Running, reason: str) -> None:
        """The owner's ``work.fail`` (R10.2-13); the contract's retry policy decides what
        follows (R11.4-08). Checkpoints go: a retry starts afresh."""
        if not self.charger.charge(run):  # what the attempt used, under the lease it ends
            return  # refused (R11.5-13): blocked for its budget at the next tick (stops.py)
        body = failure_body(run, reason, producer=self.principal)
        try:
            self.link.send(run.group, "work.fail", body)
        except Offline:
            return
        except ApiError as error:
            log.warning("failure of %s refused: %s", run.work_item, error)
        self.pool.checkpoints(run.group, run.work_item).discard()
        self._drop(run.key)
