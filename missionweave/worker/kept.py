"""Results a handler finished while the authority could not be reached, kept across a
shutdown (R11.5-04..06, R11.3-04, R11.3-10).

Offline, a finished result cannot be submitted, and R11.5-06 puts reconciliation before
any submission anyway. If the worker then stops before it reconnects, a result held only in
memory is gone, the item's lease runs out, and the work is done again — possibly elsewhere.
So the runtime keeps a result durably as soon as it cannot send it:

- the output bytes under the slot pool's ``results/<item key>/`` (``SlotPool.result_files``):
  beside the checkpoints, outside every slot directory (which is scratch, removed at release
  and at start), so no slot's context can reach them (R11.1-12); each file is named by the
  digest of its bytes, and reading it back checks them;
- one row in the QueueStore's SQLite file (``kept_results``): the item, the ownership epoch
  and lease it was produced under, the contract it answers, its outputs by digest and its
  evidence.

Order, for a crash at any point: the files are written durably before the row is committed,
and the row is deleted before the files. A crash in between leaves files without a row, which
the next start removes (``SlotPool.prune_results``); never a row without its bytes. A row whose
bytes no longer match is discarded at load, with its reason logged.

What becomes of a kept result is decided by the runtime once it is online again — after
reconciliation — from the group's projection (``Settlement.settle_kept``): submitted under the
lease it was produced under if that lease is still live; if the new session revoked that lease
and returned the item to this worker's queue (R11.3-10), submitted under the fresh lease of
the next ``work.start`` without running the handler again; otherwise discarded, with one log
line saying why (the log gave the item to another owner or ended it: a late result must not
complete it, R11.5-03).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from missionweave.protocol.timefmt import format_timestamp

from .execution import Running
from .handlers import Evidence, Output, TaskResult
from .local_store import QueueStore
from .slots import SlotPool

log = logging.getLogger("missionweave.worker")

Key = tuple[str, str]


@dataclass(frozen=True)
class Kept:
    """A finished result and the lease it was produced under."""

    group: str
    work_item: str
    mission: str
    ownership_epoch: int
    lease_id: str
    contract: Mapping[str, Any]
    result: TaskResult
    finished_at: str

    @property
    def key(self) -> Key:
        return (self.group, self.work_item)


class ResultShelf:
    """The kept results of one worker: rows in its QueueStore, bytes beside its checkpoints.

    Used by the control loop only (not thread-safe)."""

    def __init__(self, store: QueueStore, pool: SlotPool) -> None:
        self._store = store
        self._pool = pool
        self.kept: dict[Key, Kept] = {}
        for document in store.kept_results():
            key = (document["group"], document["work_item"])
            try:
                self.kept[key] = self._load(document)
            except (OSError, ValueError, KeyError, TypeError) as error:
                log.warning("kept result of %s/%s discarded: unreadable (%s)", *key, error)
                store.forget_result(*key)
        pool.prune_results(self.kept)

    def __contains__(self, key: object) -> bool:
        return key in self.kept

    def get(self, key: Key) -> Kept | None:
        return self.kept.get(key)

    def keep(self, run: Running, result: TaskResult, *, now: datetime) -> None:
        """Keep ``result`` of ``run`` durably: its bytes first, then its row."""
        if run.key in self.kept:
            return
        files = self._pool.result_files(run.group, run.work_item)
        outputs = [
            {
                "name": output.name,
                "media_type": output.media_type,
                "digest": files.write(output.data),
            }
            for output in result.outputs
        ]
        document = {
            "group": run.group,
            "work_item": run.work_item,
            "mission": run.mission,
            "ownership_epoch": run.ownership_epoch,
            "lease_id": run.lease_id,
            "contract": dict(run.contract),
            "outputs": outputs,
            "evidence": [_evidence_document(evidence) for evidence in result.evidence],
            "finished_at": format_timestamp(now),
        }
        self._store.keep_result(run.group, run.work_item, document)
        self.kept[run.key] = Kept(
            run.group,
            run.work_item,
            run.mission,
            run.ownership_epoch,
            run.lease_id,
            run.contract,
            result,
            document["finished_at"],
        )
        log.info("%s/%s: its result is kept on disk until it can be submitted", *run.key)

    def forget(self, key: Key) -> None:
        """The result left this worker's hands (submitted, failed, fenced): its row, then its
        bytes."""
        if self.kept.pop(key, None) is None:
            return
        self._store.forget_result(*key)
        self._pool.result_files(*key).discard()

    def discard(self, key: Key, why: str) -> None:
        """Drop a kept result that will not be submitted, saying why in one line."""
        if key in self.kept:
            log.warning("kept result of %s/%s discarded: %s", *key, why)
            self.forget(key)

    def _load(self, document: Mapping[str, Any]) -> Kept:
        files = self._pool.result_files(document["group"], document["work_item"])
        outputs = tuple(
            Output(spec["name"], files.read(spec["digest"]), spec["media_type"])
            for spec in document["outputs"]
        )
        evidence = tuple(
            Evidence(**{**spec, "outputs": tuple(spec["outputs"])}) for spec in document["evidence"]
        )
        return Kept(
            group=document["group"],
            work_item=document["work_item"],
            mission=document["mission"],
            ownership_epoch=int(document["ownership_epoch"]),
            lease_id=document["lease_id"],
            contract=document["contract"],
            result=TaskResult(outputs, evidence),
            finished_at=document["finished_at"],
        )


def _evidence_document(evidence: Evidence) -> dict[str, Any]:
    """The evidence as JSON; ``data`` copied shallowly (a handler may hand a read-only
    mapping, which ``dataclasses.asdict`` cannot deep-copy)."""
    return {
        "criterion": evidence.criterion,
        "verdict": evidence.verdict,
        "summary": evidence.summary,
        "data": dict(evidence.data),
        "outputs": list(evidence.outputs),
        "method": evidence.method,
    }
