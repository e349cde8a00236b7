"""The outbox of cross-group follow-ups (R10.4-05, R10.4-06): how one is recorded, carried
and given up on — the storage half of :mod:`apps.ledger.follow_ups`.

A follow-up is written here in the *same* transaction as the command that produced it and
carried right after commit. Carrying it means running a command through the write path,
which is the module that records it here; ``run`` is that door, handed in by the write
path, so this module stays below it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from missionweave.protocol.facts import FollowUp

from .models import PendingFollowUp

logger = logging.getLogger(__name__)

#: runs one follow-up through the write path (a refusal runs its compensation)
Run = Callable[[FollowUp], object]


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


def enqueue(
    source_group: str, source_command: str, follow_ups: Sequence[FollowUp], *, run: Run
) -> None:
    """Inside the command's transaction: record each follow-up, carry it after commit."""
    now = timezone.now()
    for follow_up in follow_ups:
        row = PendingFollowUp.objects.create(
            source_group=source_group,
            source_command=source_command,
            target_group=follow_up.group,
            follow_up=to_document(follow_up),
            created_at=now,
        )
        transaction.on_commit(lambda pk=row.pk, f=follow_up: carry(source_group, pk, f, run=run))


def carry(source_group: str, pk: int, follow_up: FollowUp, *, run: Run) -> None:
    """Run one follow-up and drop its outbox row.

    An unexpected error (the database went away) leaves the row for the resend task. The row
    is found by its whole key, (source group, id), so on a database sharded by group the
    statement goes to one shard (docs/deploy.md).
    """
    row = PendingFollowUp.objects.filter(source_group=source_group, pk=pk)
    try:
        run(follow_up)
    except Exception as error:  # a later resend retries; the command itself stands
        logger.exception("follow-up %s to %s failed", follow_up.type, follow_up.group)
        row.update(attempts=F("attempts") + 1, last_error=repr(error)[:2000])
        return
    row.delete()


def pending(*, created_before: datetime, limit: int) -> list[tuple[str, int, FollowUp]]:
    """The oldest ``limit`` follow-ups recorded before ``created_before``, oldest first, each
    as (source group, id, follow-up)."""
    rows = PendingFollowUp.objects.filter(created_at__lte=created_before).order_by("pk")[:limit]
    return [(row.source_group, row.pk, from_document(row.follow_up)) for row in rows]
