"""Celery tasks of the ledger: carry the cross-group follow-ups a crash left in the outbox,
and take the periodic signed snapshots.

Like every task, a caller of the write path with no logic of its own
(``apps.ledger.follow_ups.resend_pending``, ``apps.ledger.snapshots.snapshot_due_groups``);
beat runs them periodically and a duplicate run only replays commands with deterministic ids
(R10.4-05) or finds no group due.
"""

from __future__ import annotations

from apps.ledger.follow_ups import resend_pending
from apps.ledger.snapshots import snapshot_due_groups
from missionweave.celery import app


@app.task(name="apps.ledger.tasks.resend_follow_ups")
def resend_follow_ups(limit: int = 500) -> int:
    """Resend pending cross-group follow-ups older than ``RESEND_AFTER``; the count sent."""
    return resend_pending(limit=limit)


@app.task(name="apps.ledger.tasks.snapshot_groups")
def snapshot_groups(every_events: int | None = None) -> list[int]:
    """Snapshot each group with ``MWP_SNAPSHOT_EVERY_EVENTS`` new events since its last
    snapshot, as the authority (R16-10); the sequences snapshotted."""
    return snapshot_due_groups(every_events)
