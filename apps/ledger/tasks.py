"""Celery task of the ledger: carry the cross-group follow-ups a crash left in the outbox.

Like every task, a caller of the write path with no logic of its own
(``apps.ledger.follow_ups.resend_pending``); beat runs it periodically and a duplicate run
only replays commands with deterministic ids (R10.4-05).
"""

from __future__ import annotations

from apps.ledger.follow_ups import resend_pending
from missionweave.celery import app


@app.task(name="apps.ledger.tasks.resend_follow_ups")
def resend_follow_ups(limit: int = 500) -> int:
    """Resend pending cross-group follow-ups older than ``RESEND_AFTER``; the count sent."""
    return resend_pending(limit=limit)
