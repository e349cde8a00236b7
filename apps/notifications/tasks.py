"""Celery tasks of the notifications (issue 36): producing from the log, the start-by
reminders, blocks nobody answered, the daily digest, and sending each email with retries.

The producer and the sends are hinted after commit (``hint_produce``, ``queue_emails``) and
found again by the beat (``catch_up``, ``resend_pending``), so a lost hint only delays; every
task is idempotent (``producing``, ``sending``).
"""

from __future__ import annotations

import logging
import smtplib
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from apps.ledger.models import GroupLog
from missionweave.celery import app

from . import blocks, deadlines, digests, hook_tasks, producing, sending
from .models import Delivery, DeliveryStatus, NotificationCursor

logger = logging.getLogger(__name__)

#: a hint nobody picked up within this long is dropped: the beat has done the work by then
HINT_EXPIRES_S = 60.0
#: a pending delivery nobody attempted for this long is queued again by the beat
RESEND_AFTER = timedelta(seconds=60)
#: an attempted one whose retry chain has gone quiet this long (a worker died mid-retry)
RESEND_STALLED_AFTER = timedelta(minutes=30)
#: what a mail server or the network raises when a retry may succeed
RETRIED = (smtplib.SMTPException, OSError)


def queue_emails(delivery_ids: list[int]) -> None:
    """After commit: send each delivery now (``retry=False``: an unreachable broker fails
    fast, the beat's ``resend_pending`` finds them)."""
    for delivery_id in delivery_ids:
        try:
            send_email.apply_async((delivery_id,), retry=False)
        except Exception:  # a hint: the beat resends
            logger.exception("could not queue email delivery %s", delivery_id)


@app.task(name="apps.notifications.tasks.produce")
def produce(group_id: str) -> dict[str, Any]:
    """Examine ``group_id``'s new events; every batch until its head."""
    created = emails = 0
    while True:
        done = producing.produce(group_id)
        created += len(done.created)
        emails += len(done.emails)
        queue_emails(done.emails)
        hook_tasks.queue(done.hooks)
        if not done.more:
            return {"group": group_id, "through": done.examined_through, "created": created}


def hint_produce(group_id: str, event: dict[str, Any]) -> None:
    """A reaction after commit (``apps.ledger.reactions``): produce now rather than at the
    next beat."""
    produce.apply_async((group_id,), retry=False, expires=HINT_EXPIRES_S)


@app.task(name="apps.notifications.tasks.catch_up")
def catch_up() -> dict[str, Any]:
    """Produce for every group whose head is past its cursor (what lost hints missed)."""
    heads = dict(GroupLog.objects.values_list("group_id", "head_sequence"))
    cursors = dict(NotificationCursor.objects.values_list("group_id", "sequence"))
    behind = sorted(g for g, head in heads.items() if head > cursors.get(g, 0))
    for group_id in behind:
        produce(group_id)
    return {"groups": len(behind)}


@app.task(name="apps.notifications.tasks.remind_deadlines")
def remind_deadlines() -> dict[str, Any]:
    """Start-by reminders within the lead time (``deadlines``)."""
    return _sent_on(deadlines.remind())


@app.task(name="apps.notifications.tasks.remind_blocked")
def remind_blocked() -> dict[str, Any]:
    """Blocks still unanswered after the grace time (``blocks``)."""
    return _sent_on(blocks.remind())


def _sent_on(done: producing.Produced) -> dict[str, Any]:
    """Queue what a beat's run made: its emails and its hooks' deliveries."""
    queue_emails(done.emails)
    hook_tasks.queue(done.hooks)
    return {"created": len(done.created)}


@app.task(name="apps.notifications.tasks.send_digests")
def send_digests() -> dict[str, Any]:
    """The daily digest of every person who has one waiting (``digests``)."""
    made = digests.gather()
    queue_emails(made)
    return {"digests": len(made)}


@app.task(name="apps.notifications.tasks.resend_pending")
def resend_pending() -> dict[str, Any]:
    """Queue again the email deliveries whose hint was lost or whose worker died."""
    now = timezone.now()
    stale = Delivery.objects.filter(status=DeliveryStatus.PENDING, channel=producing.EMAIL)
    never = stale.filter(last_attempt_at__isnull=True, created_at__lt=now - RESEND_AFTER)
    stalled = stale.filter(last_attempt_at__lt=now - RESEND_STALLED_AFTER)
    ids = sorted({*never.values_list("pk", flat=True), *stalled.values_list("pk", flat=True)})
    queue_emails(ids)
    return {"queued": len(ids)}


@app.task(
    bind=True,
    name="apps.notifications.tasks.send_email",
    autoretry_for=RETRIED,
    max_retries=settings.MWP_NOTIFY_EMAIL_RETRIES,
    retry_backoff=settings.MWP_NOTIFY_EMAIL_BACKOFF_S,
    retry_backoff_max=600,
    retry_jitter=False,
)
def send_email(self: Any, delivery_id: int) -> dict[str, Any]:
    """Send one email delivery at most once. A failure the server may get over is retried
    by Celery after 2, 4, 8, … s (``MWP_NOTIFY_EMAIL_BACKOFF_S``, up to
    ``MWP_NOTIFY_EMAIL_RETRIES`` times), each attempt counted on the row with its error; the
    last one marks the delivery ``failed``."""
    try:
        sent = sending.send(delivery_id)
    except sending.NothingToSend as nothing:
        sending.record_failure(delivery_id, nothing, final=True)
        return {"delivery": delivery_id, "sent": False}
    except RETRIED as failure:
        final = self.request.retries >= self.max_retries
        sending.record_failure(delivery_id, failure, final=final)
        logger.warning(
            "email delivery %s failed (attempt %s): %s",
            delivery_id,
            self.request.retries + 1,
            failure,
        )
        raise  # autoretry_for: Celery retries it with backoff
    return {"delivery": delivery_id, "sent": sent}
