"""Celery tasks of the ledger: carry the cross-group follow-ups a crash left in the outbox,
take the periodic signed snapshots, and archive events older than the retention.

Like every task, a caller of the write path with no logic of its own
(``apps.ledger.follow_ups.resend_pending``, ``apps.ledger.snapshots.snapshot_due_groups``,
``apps.ledger.retention.archive_due_groups``); beat runs them periodically and a duplicate run
only replays commands with deterministic ids (R10.4-05) or finds no group due.
"""

from __future__ import annotations

from apps.ledger.follow_ups import resend_pending
from apps.ledger.retention import archive_due_groups
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


@app.task(name="apps.ledger.tasks.archive_groups")
def archive_groups(
    retention_s: float | None = None, keep_events: int | None = None
) -> dict[str, int]:
    """Move each group's events older than ``MWP_ARCHIVE_RETENTION_S`` into the archive
    (R16-08, R16-10); ``{group: new floor}`` of the groups whose floor moved."""
    return archive_due_groups(retention_s, keep_events)
