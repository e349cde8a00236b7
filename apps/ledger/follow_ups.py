"""Cross-group follow-ups, carried reliably (R10.4-05, R10.4-06).

A command in one group may need a command in another (a child mission's creation, approval,
failure or usage). There is no cross-group transaction, so the follow-up is written to an
outbox row in the *same* transaction as the command that produced it, run right after commit,
and deleted once the other group has it (:mod:`apps.ledger.outbox`). If the process dies in
between, the row stays and the Celery beat task :func:`resend_pending` carries it later. Each
follow-up has a deterministic command id, so running it twice is an idempotent replay.
"""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from . import outbox
from .write_path import run_follow_up

#: a row younger than this is still being run by the process that committed it
RESEND_AFTER = timedelta(seconds=30)


def resend_pending(*, limit: int = 500) -> int:
    """Carry the follow-ups a crash left behind (older than ``RESEND_AFTER``); the count."""
    rows = outbox.pending(created_before=timezone.now() - RESEND_AFTER, limit=limit)
    for source_group, pk, follow_up in rows:
        outbox.carry(source_group, pk, follow_up, run=run_follow_up)
    return len(rows)
