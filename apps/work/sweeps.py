"""The time-driven sweep: reassign what a missed start deadline, an expired execution lease
or an outstayed blocked lease has made due (R11.5-01, R11.3-09, R11.4-05).

Celery beat runs it periodically (``apps.work.tasks``). It never schedules anything with
``eta``/``countdown``: each WorkItem projection row carries ``due_at``, the next time the
authority must act on it, computed by the pure core (``WorkItem.due()``); the sweep selects the
rows due by the *database* clock and submits one ``work.reassign`` per item through the one
write path, batched per group under one lock.

Every step is conditional and idempotent, so two beats, a retried task or a crashed worker
change nothing twice:

- the selection is read again *under* each group's lock (``submit_authority_batch``'s
  ``select``), among the rows first selected: a sweep that waited for another sweep's lock
  finds those items no longer due and submits nothing for them (``skipped``) — it neither
  replays them nor takes more than its ``limit``;
- the command id is derived from (WorkItem, ownership epoch), so a second submission is an
  idempotent replay that appends nothing;
- under the group lock the decider re-checks that the item is still due for that reason at
  that epoch (a renewal or a checkpoint in between makes it ``ILLEGAL_TRANSITION``: nothing
  is appended).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass
from functools import partial

from django.db.models import QuerySet
from django.db.models.functions import Now

from apps.ledger.write_path import AuthorityCommand, Outcome, submit_authority_batch
from missionweave.protocol.work.leases import REASSIGN, reassign_command_id

from .models import WorkItem

logger = logging.getLogger(__name__)
#: due items a sweep takes on at once (the next beat takes the rest)
DEFAULT_LIMIT = 1000


@dataclass(frozen=True, slots=True)
class SweepReport:
    examined: int = 0  # due rows selected
    applied: int = 0  # reassigned now
    replayed: int = 0  # already reassigned by another sweep (idempotent replay)
    refused: int = 0  # submitted, but the decider found it no longer due under the lock
    groups: int = 0
    skipped: int = 0  # no longer due when re-read under the lock (another sweep, a renewal)

    def as_dict(self) -> dict[str, int]:
        return {
            "examined": self.examined,
            "applied": self.applied,
            "replayed": self.replayed,
            "refused": self.refused,
            "groups": self.groups,
            "skipped": self.skipped,
        }


def due_now() -> QuerySet[WorkItem]:
    """The WorkItems due by the database clock (the partial index ``work_item_due``): what
    the sweep reassigns, and what ``/metrics`` reports the lag of."""
    return WorkItem.objects.filter(due_at__lte=Now())


def due_work_items(
    limit: int, *, group_id: str | None = None, among: Collection[str] | None = None
) -> dict[str, list[AuthorityCommand]]:
    """The reassignments due now by the database clock, by group, oldest due first
    (only in ``group_id`` and among the WorkItem ids ``among``, when given)."""
    rows = due_now()
    if group_id is not None:
        rows = rows.filter(group_id=group_id)
    if among is not None:
        rows = rows.filter(work_item_id__in=list(among))
    rows = rows.order_by("due_at").values_list(
        "group_id", "work_item_id", "ownership_epoch", "due_reason"
    )[:limit]
    by_group: dict[str, list[AuthorityCommand]] = defaultdict(list)
    for group, work_item, epoch, reason in rows:
        body = {"work_item": work_item, "ownership_epoch": epoch, "reason": reason}
        by_group[group].append(
            AuthorityCommand(REASSIGN, body, reassign_command_id(work_item, epoch))
        )
    return by_group


def _still_due(group_id: str, ids: list[str]) -> list[AuthorityCommand]:
    """Which of ``ids`` are due, read under the group's lock: whatever another sweep (or a
    renewal) committed while this one waited for the lock is visible now."""
    return due_work_items(len(ids), group_id=group_id, among=ids).get(group_id, [])


def sweep_due(*, limit: int = DEFAULT_LIMIT) -> SweepReport:
    """Reassign every due WorkItem (up to ``limit``); safe to run concurrently."""
    due = due_work_items(limit)
    examined = applied = replayed = refused = skipped = 0
    for group_id, candidates in due.items():
        examined += len(candidates)
        ids = [command.body["work_item"] for command in candidates]
        # the selection again, under the group lock: one answer per command still due
        outcomes = submit_authority_batch(
            group_id=group_id, select=partial(_still_due, group_id, ids)
        )
        skipped += len(candidates) - len(outcomes)
        for outcome in outcomes:
            if isinstance(outcome, Outcome):
                if outcome.replayed:
                    replayed += 1
                else:
                    applied += 1
            else:
                refused += 1
    report = SweepReport(examined, applied, replayed, refused, len(due), skipped)
    if examined:
        logger.info("sweep_due: %s", report.as_dict())
    return report
