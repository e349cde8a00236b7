"""Sending one email delivery, at most once (issue 36 §2).

Check and mark happen in one transaction holding the delivery's row lock: a delivery already
``sent`` is left alone, so two tasks for the same delivery (a hint and the beat's resend, or a
redelivered message) send it once. Each attempt is counted and its error kept on the row; the
Celery task retries with backoff (``tasks.send_email``). Were the process to die between the
SMTP server's acceptance and the commit, the next attempt would send again: mail is
at-least-once at that one point, which no SMTP client can close.
"""

from __future__ import annotations

from django.core.mail import EmailMultiAlternatives
from django.db import transaction
from django.utils import timezone

from apps.ledger.write_path import Caller

from . import emails
from .models import Delivery, DeliveryStatus, Notification


class NothingToSend(Exception):
    """The delivery has no recipient address or no content any more."""


def send(delivery_id: int) -> bool:
    """Send the delivery unless it was sent; whether this call sent it. Raises what the mail
    backend raised (the attempt is recorded by :func:`record_failure`)."""
    with transaction.atomic():
        delivery = Delivery.objects.select_for_update().filter(pk=delivery_id).first()
        if delivery is None or delivery.status != DeliveryStatus.PENDING:
            return False
        message = _message(delivery)
        now = timezone.now()
        message.send(fail_silently=False)
        Delivery.objects.filter(pk=delivery_id).update(
            status=DeliveryStatus.SENT,
            attempts=delivery.attempts + 1,
            last_attempt_at=now,
            sent_at=timezone.now(),
            last_error="",
        )
    return True


def _message(delivery: Delivery) -> EmailMultiAlternatives:
    if delivery.notification_id is not None:
        notification = Notification.objects.select_related("user").get(pk=delivery.notification_id)
        if not notification.user.email:
            raise NothingToSend(f"{notification.user} has no email address")
        return emails.single(notification)
    gathered = list(delivery.digested.order_by("created_at", "pk"))
    if delivery.user is None or not delivery.user.email or not gathered:
        raise NothingToSend(f"digest {delivery.key} has nobody to send to or nothing in it")
    principal = Caller.for_user(delivery.user).principal
    return emails.digest(delivery.user.email, delivery.user_id, gathered, principal=principal)


def record_failure(delivery_id: int, error: BaseException, *, final: bool) -> None:
    """Count a failed attempt and keep its error; ``final``: no more retries."""
    with transaction.atomic():
        delivery = Delivery.objects.select_for_update().filter(pk=delivery_id).first()
        if delivery is None or delivery.status == DeliveryStatus.SENT:
            return
        delivery.attempts += 1
        delivery.last_attempt_at = timezone.now()
        delivery.last_error = f"{type(error).__name__}: {error}"[:2000]
        if final:
            delivery.status = DeliveryStatus.FAILED
        delivery.save(update_fields=["attempts", "last_attempt_at", "last_error", "status"])
