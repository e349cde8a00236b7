"""Cross-group follow-ups, carried reliably (R10.4-05, R10.4-06).

A command in one group may need a command in another (a child mission's creation, approval,
failure or usage). There is no cross-group transaction, so the follow-up is written to an
outbox row in the *same* transaction as the command that produced it, run right after commit,
and deleted once the other group has it. If the process dies in between, the row stays and the
Celery beat task :func:`resend_pending` carries it later. Each follow-up has a deterministic
command id, so running it twice is an idempotent replay.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from missionweave.protocol.facts import FollowUp

from .models import PendingFollowUp

logger = logging.getLogger(__name__)
#: a row younger than this is still being run by the process that committed it
RESEND_AFTER = timedelta(seconds=30)


def to_document(follow_up: FollowUp) -> dict[str, Any]:
    return {
        "group": follow_up.group,
        "type": follow_up.type,
        "body": follow_up.body,
        "command_id": follow_up.command_id,
        "on_refusal": to_document(follow_up.on_refusal) if follow_up.on_refusal else None,
    }


def from_document(document: dict[str, Any]) -> FollowUp:
    refusal = document.get("on_refusal")
    return FollowUp(
        group=document["group"],
        type=document["type"],
        body=document["body"],
        command_id=document["command_id"],
        on_refusal=from_document(refusal) if refusal else None,
    )


def enqueue(source_group: str, source_command: str, follow_ups: Sequence[FollowUp]) -> None:
    """Inside the command's transaction: record each follow-up, run it after commit."""
    now = timezone.now()
    for follow_up in follow_ups:
        row = PendingFollowUp.objects.create(
            source_group=source_group,
            source_command=source_command,
            target_group=follow_up.group,
            follow_up=to_document(follow_up),
            created_at=now,
        )
        transaction.on_commit(lambda pk=row.pk, f=follow_up: _carry(pk, f))


def _carry(pk: int, follow_up: FollowUp) -> None:
    """Run one follow-up (its compensation if refused) and drop its outbox row.

    An unexpected error (the database went away) leaves the row for the resend task.
    """
    from .write_path import run_follow_up

    try:
        run_follow_up(follow_up)
    except Exception as error:  # a later resend retries; the command itself stands
        logger.exception("follow-up %s to %s failed", follow_up.type, follow_up.group)
        PendingFollowUp.objects.filter(pk=pk).update(
            attempts=F("attempts") + 1, last_error=repr(error)[:2000]
        )
        return
    PendingFollowUp.objects.filter(pk=pk).delete()


def resend_pending(*, limit: int = 500) -> int:
    """Carry the follow-ups a crash left behind (older than ``RESEND_AFTER``); the count."""
    cutoff = timezone.now() - RESEND_AFTER
    rows = list(PendingFollowUp.objects.filter(created_at__lte=cutoff).order_by("pk")[:limit])
    for row in rows:
        _carry(row.pk, from_document(row.follow_up))
    return len(rows)
