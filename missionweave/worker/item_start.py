"""Starting a picked item in a free slot: ``work.start``, then its handler, isolated, with the
start's capability token (R10.2-07, R11.3-06, R11.1-12, R10.1-04, R13.3, R11.5-01, R11.3-10).

Why a module of its own: this is step 9 of the ``Worker``'s tick (``runtime.py``) and the one
place where the authority's answer becomes a running slot. In order, for each pick of the
scheduler while a slot is free: the item must still be queued for this worker; its document
(the contract) is read, once per contract revision; a handler must exist for its task kind;
the checkpoint it resumes from is chosen and verified (``resume.restore``); ``work.start``
takes the lease; a result an earlier run kept under a revoked lease is submitted under the
fresh one instead of running the handler again (``kept.py``); otherwise the handler runs in a
slot with the start's token, its essential questions' answers and its mission's context
packages, wrapped for isolation and metering. A refused start keeps the item out of the
scheduler for a while, by refusal code (``START_DEFERRAL_S``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from missionweave.client.errors import ApiError
from missionweave.protocol import states as S
from missionweave.protocol.timefmt import parse_timestamp

from .authority import Authority
from .config import WorkerConfig
from .context_packages import with_packages
from .execution import Running, assignment
from .handlers import HandlerTable, kind_of
from .isolation import ProcessIsolation, ThreadIsolation
from .kept import ResultShelf
from .link import Link, Offline
from .local_store import QueueStore
from .mirror import QueueMirror
from .questions import QuestionDesk
from .resources import ResourceLedger
from .resume import restore
from .runs import Key, RunTable
from .scheduler import QueuedItem, Scheduler
from .slots import Checkpoint, ItemRef, Outcome, SlotError, SlotPool

log = logging.getLogger("missionweave.worker")

#: how long a refused ``work.start`` keeps its item out of the scheduler, by refusal code: the
#: store catches up with the log within a moment; dependencies and approvals take longer
START_DEFERRAL_S: dict[str, float] = {
    "DEPENDENCY_UNMET": 2.0,
    "APPROVAL_REQUIRED": 5.0,
    "ILLEGAL_TRANSITION": 1.0,
    "STALE_OWNERSHIP": 1.0,
    "NOT_FOUND": 1.0,
}
DEFAULT_DEFERRAL_S = 5.0

#: ``kept_run(kept, lease_id=, started_at=, expires_at=, session_epoch=, urgency=)``
KeptRun = Callable[..., Running]


class ItemStarter:
    """Fills the free slots of one worker from its scheduler; called from its control loop.

    The slot callbacks (``on_checkpoint``, ``requeue``, ``on_done``, ``on_block``) are the
    worker's (see ``slots.SlotPool.start``); ``kept_run`` puts a kept result back under a
    fresh lease (``settlement.Settlement.kept_run``); ``drop(key)`` forgets a run."""

    def __init__(
        self,
        *,
        config: WorkerConfig,
        authority: Authority,
        link: Link,
        store: QueueStore,
        pool: SlotPool,
        handlers: HandlerTable,
        isolation: ThreadIsolation | ProcessIsolation,
        scheduler: Scheduler,
        queue: QueueMirror,
        resources: ResourceLedger,
        questions: QuestionDesk,
        kept: ResultShelf,
        runs: RunTable,
        kept_run: KeptRun,
        drop: Callable[[Key], None],
        on_checkpoint: Callable[[ItemRef, Checkpoint], None],
        requeue: Callable[[ItemRef, str], None],
        on_done: Callable[[ItemRef, Outcome], None],
        on_block: Callable[[ItemRef, Checkpoint | None, str], None],
        errors: list[BaseException],
    ) -> None:
        self.config = config
        self.authority = authority
        self.link = link
        self.store = store
        self.pool = pool
        self.handlers = handlers
        self.isolation = isolation
        self.scheduler = scheduler
        self.queue = queue
        self.resources = resources
        self.questions = questions
        self.kept = kept
        self.runs = runs
        self._kept_run = kept_run
        self._drop = drop
        self._on_checkpoint = on_checkpoint
        self._requeue = requeue
        self._on_done = on_done
        self._on_block = on_block
        self._errors = errors
        self._documents: dict[Key, tuple[int, dict[str, Any]]] = {}

    def forget(self, key: Key) -> None:
        """The item left this worker's hands: its cached document goes too."""
        self._documents.pop(key, None)

    def fill(self, now: datetime) -> None:
        while self.pool.free > 0:
            pick = self.scheduler.pick(self.resources.free(self.pool.free), now)
            if pick is None:
                return
            key = (pick.item.group, pick.item.work_item)
            self.resources.hold(key, pick.item.needs)
            self.queue.taken(key)
            if not self.start(pick.item, pick.reserved_seconds, now):
                self.scheduler.finish(*key, used_seconds=0.0)
                self.resources.release(key)
                if not self.link.online:
                    return

    def start(self, item: QueuedItem, reserved_s: float, now: datetime) -> bool:
        """``work.start`` (R10.2-07), then the handler in a slot with the start's capability
        token (R11.3-06); False when the item did not start (deferred, or offline)."""
        key = (item.group, item.work_item)
        row = self.store.owned(*key)
        if row is None or row["state"] != S.QUEUED:
            return False
        try:
            document = self.document(key, row["revision"])
        except Offline:
            return False
        except ApiError as error:
            return self.defer(key, now, error)
        contract = document["contract"]
        handler = self.handlers.for_contract(contract)
        if handler is None:
            log.error("no handler for %s (task kind %s)", item.work_item, kind_of(contract))
            self.queue.deferred[key] = now + timedelta(seconds=60)
            return False
        try:  # this worker's own checkpoint, or the authority's, verified (R11.5-01)
            resume = self.link.call(
                lambda: restore(row, self.pool.checkpoints(*key), contract, self.authority.download)
            )
        except Offline:
            return False
        body: dict[str, Any] = {
            "work_item": item.work_item,
            "ownership_epoch": row["ownership_epoch"],
        }
        if self.config.leases.ttl_s is not None:
            body["lease_ttl_s"] = self.config.leases.ttl_s
        try:
            result = self.link.send(item.group, "work.start", body).body["result"]
        except Offline:
            return False
        except ApiError as error:
            return self.defer(key, now, error)
        session_epoch = self.authority.current_session().epoch
        kept = self.kept.get(key)
        if kept is not None and kept.ownership_epoch != row["ownership_epoch"]:
            self.kept.discard(key, "the item was started under another ownership epoch")
        elif kept is not None:
            # R11.3-10: this run's session revoked the lease the result was finished under and
            # the item came back to this worker's queue; the fresh lease carries the kept
            # result (R11.3-04), and the handler is not run again
            self._kept_run(
                kept,
                lease_id=result["lease"]["lease_id"],
                started_at=now,
                expires_at=parse_timestamp(result["lease"]["expires_at"]),
                session_epoch=session_epoch,
                urgency=item.urgency,
            )
            self.scheduler.finish(*key, used_seconds=0.0)
            self.resources.release(key)
            return True
        run = Running(
            group=item.group,
            work_item=item.work_item,
            mission=item.mission or str(document.get("mission") or ""),
            ownership_epoch=row["ownership_epoch"],
            lease_id=result["lease"]["lease_id"],
            lease_started_at=now,
            lease_expires_at=parse_timestamp(result["lease"]["expires_at"]),
            session_epoch=session_epoch,
            contract=contract,
            urgency=item.urgency,
            org_priority_class=item.org_priority_class,
            expected_s=reserved_s,
            started_at=now,
            resumed_from=resume,
        )
        progress = run.progress
        # R10.1-04: what settled the handler's essential questions reaches its context
        answers = [
            answer.as_dict()
            for answer in self.questions.answers(
                item.group, item.work_item, row["revision"], contract, handler
            )
        ]
        isolated = self.isolation.wrap(handler, self.handlers.target_for(contract))
        self.runs.put(key, run)
        try:
            run.slot = self.pool.start(
                replace(
                    # R13.3: the handler is handed its mission's context packages
                    with_packages(
                        assignment(run, result.get("capability_tokens") or [], answers=answers),
                        self.link,
                    ),
                    resume_from=resume,
                ),
                run.meter.wrap(lambda ctx: isolated(ctx, progress)),  # wall-clock, compute
                on_checkpoint=self._on_checkpoint,
                requeue=self._requeue,
                on_done=self._on_done,
                on_block=self._on_block,
            )
        except SlotError as error:  # the pool and the scheduler disagree: a runtime bug
            log.error("no slot for %s: %s", item.work_item, error)
            self._errors.append(error)
            self._drop(key)
            return False
        return True

    def document(self, key: Key, revision: int) -> dict[str, Any]:
        """The WorkItem as the authority serves it (its contract), per contract revision."""
        cached = self._documents.get(key)
        if cached is None or cached[0] != revision:
            document = self.link.read(f"/groups/{key[0]}/work-items/{key[1]}")
            cached = self._documents[key] = (int(document.get("revision", revision)), document)
        return cached[1]

    def defer(self, key: Key, now: datetime, error: ApiError) -> bool:
        seconds = START_DEFERRAL_S.get(error.code, DEFAULT_DEFERRAL_S)
        log.info("%s not started (%s): retried in %.0f s", key[1], error.code, seconds)
        self.queue.deferred[key] = now + timedelta(seconds=seconds)
        return False
