"""Celery tasks of the group hooks (issue 36 §2): deliver one chat or webhook message with
retries and backoff, and the beat's resend of deliveries whose hint was lost.

``deliver`` tries once per run (``hook_delivery.attempt``); after a failure it retries itself
after ``MWP_HOOK_BACKOFF_S`` × 2ⁿ seconds (at most 600), at most ``MWP_HOOK_RETRIES`` times;
the last failure marks the delivery ``failed`` (and may turn its hook off).
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from missionweave.celery import app

from . import hook_delivery
from .hook_models import HookKind
from .models import Delivery, DeliveryStatus

logger = logging.getLogger(__name__)

CHANNELS = tuple(kind.value for kind in HookKind)
BACKOFF_MAX_S = 600.0
#: a pending delivery nobody attempted for this long is queued again by the beat
RESEND_AFTER = timedelta(seconds=60)
#: an attempted one whose retries have gone quiet this long (its worker died)
RESEND_STALLED_AFTER = timedelta(minutes=30)
SEND_EMAIL = "apps.notifications.tasks.send_email"


def backoff_s(retries: int) -> float:
    """Seconds before retry ``retries + 1``: ``MWP_HOOK_BACKOFF_S`` doubled each time."""
    return min(BACKOFF_MAX_S, settings.MWP_HOOK_BACKOFF_S * 2**retries)


def queue(delivery_ids: list[int]) -> None:
    """After commit: deliver each now (``retry=False``: an unreachable broker fails fast,
    the beat's ``resend_pending`` finds them)."""
    for delivery_id in delivery_ids:
        try:
            deliver.apply_async((delivery_id,), retry=False)
        except Exception:  # a hint: the beat resends
            logger.exception("could not queue hook delivery %s", delivery_id)


def _queue_emails(delivery_ids: list[int]) -> None:
    for delivery_id in delivery_ids:
        try:
            app.signature(SEND_EMAIL, args=(delivery_id,)).apply_async(retry=False)
        except Exception:  # the email beat resends
            logger.exception("could not queue email delivery %s", delivery_id)


@app.task(bind=True, name="apps.notifications.hook_tasks.deliver")
def deliver(self: Any, delivery_id: int) -> dict[str, Any]:
    """Deliver one hook message: sent once, or retried with backoff, every attempt logged."""
    retries = self.request.retries
    final = retries >= settings.MWP_HOOK_RETRIES
    done = hook_delivery.attempt(delivery_id, final=final)
    _queue_emails(done.emails)
    if done.retry:
        raise self.retry(countdown=backoff_s(retries), max_retries=settings.MWP_HOOK_RETRIES)
    return {"delivery": delivery_id, "sent": done.sent}


@app.task(name="apps.notifications.hook_tasks.resend_pending")
def resend_pending() -> dict[str, Any]:
    """Queue again the hook deliveries whose hint was lost or whose worker died."""
    now = timezone.now()
    stale = Delivery.objects.filter(status=DeliveryStatus.PENDING, channel__in=CHANNELS)
    never = stale.filter(last_attempt_at__isnull=True, created_at__lt=now - RESEND_AFTER)
    stalled = stale.filter(last_attempt_at__lt=now - RESEND_STALLED_AFTER)
    ids = sorted({*never.values_list("pk", flat=True), *stalled.values_list("pk", flat=True)})
    queue(ids)
    return {"queued": len(ids)}
