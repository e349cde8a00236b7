"""Notifications: a delivery outbox derived from the group logs (issue 36 §1), never a
projection. No event records these rows and no replay rebuilds them; producing them again
from the same events changes nothing (each is unique per person, kind and ``key``).

- :class:`Notification`: what one person is told, with the screen that acts on it.
- :class:`NotificationPreference`: a person's choice per kind (``kinds`` holds the defaults).
- :class:`Delivery`: one attempt-logged sending over one channel (email now; chat and
  webhooks later reuse it with their own ``channel`` and ``target``).
- :class:`NotificationCursor`: per group, the last event the producer examined.
"""

from __future__ import annotations

from typing import ClassVar

from django.conf import settings
from django.db import models

from .kinds import DEFAULT_EMAIL, DEFAULT_IN_APP, EmailMode, Kind


class Notification(models.Model):
    """One thing one person should know or do, derived from one event (or, for a start-by
    deadline, from a WorkItem and its deadline)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notifications"
    )
    kind = models.CharField(max_length=32, choices=Kind.choices)
    group = models.ForeignKey("registry.Group", on_delete=models.CASCADE, related_name="+")
    #: what makes it unique for this person and kind: the causing event's id, or for a
    #: reminder ``<work_item>@<deadline>``, for a ready mission ``<mission>@<items>``
    key = models.CharField(max_length=300)
    event_id = models.CharField(max_length=64, blank=True, default="")
    event_sequence = models.PositiveBigIntegerField(null=True, blank=True)
    #: ``mission`` or ``work_item`` and its id
    subject_type = models.CharField(max_length=16, blank=True, default="")
    subject_id = models.CharField(max_length=128, blank=True, default="")
    title = models.CharField(max_length=300)
    body = models.TextField(blank=True, default="")
    #: the path of the screen that acts on it, e.g. ``/groups/g/work-items/w/approval/``
    link = models.CharField(max_length=500)
    #: shown in the app (the person's in-app preference when it was made)
    in_app = models.BooleanField(default=True)
    #: how it is emailed (the person's email mode when it was made)
    email_mode = models.CharField(max_length=16, choices=EmailMode.choices)
    created_at = models.DateTimeField(auto_now_add=True)
    read_at = models.DateTimeField(null=True, blank=True)
    #: the digest email that carried it (``daily_digest`` only)
    digest = models.ForeignKey(
        "Delivery", null=True, blank=True, on_delete=models.SET_NULL, related_name="digested"
    )

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["user", "kind", "key"], name="notification_once")
        ]
        indexes: ClassVar = [
            models.Index(fields=["user", "read_at", "created_at"], name="notification_inbox"),
            models.Index(
                fields=["email_mode", "user"],
                name="notification_digest_due",
                condition=models.Q(email_mode="daily_digest", digest__isnull=True),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} for {self.user_id}: {self.title}"


class NotificationPreference(models.Model):
    """A person's choice for one kind; without a row the defaults of ``kinds`` hold."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notification_prefs"
    )
    kind = models.CharField(max_length=32, choices=Kind.choices)
    in_app = models.BooleanField(default=DEFAULT_IN_APP)
    email = models.CharField(max_length=16, choices=EmailMode.choices, default=DEFAULT_EMAIL)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["user", "kind"], name="preference_once")
        ]

    def __str__(self) -> str:
        return f"{self.user_id} {self.kind}: in-app {self.in_app}, email {self.email}"


class DeliveryStatus(models.TextChoices):
    PENDING = "pending"
    SENT = "sent"
    FAILED = "failed"  # retries exhausted


class Delivery(models.Model):
    """One message over one channel, sent at most once (``key`` is unique per channel), with
    every attempt counted and the last error kept."""

    channel = models.CharField(max_length=16)  # "email"; later "chat", "webhook"
    #: ``notification:<id>`` or ``digest:<user>:<first id>-<last id>``; a hook adds its id
    key = models.CharField(max_length=200)
    #: where it goes on the channel (a hook's id for chat and webhooks; "" for email)
    target = models.CharField(max_length=200, blank=True, default="")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="notification_deliveries",
    )
    notification = models.ForeignKey(
        Notification, null=True, blank=True, on_delete=models.CASCADE, related_name="deliveries"
    )
    status = models.CharField(
        max_length=16, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING
    )
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["channel", "key"], name="delivery_once")
        ]
        indexes: ClassVar = [
            models.Index(
                fields=["channel", "created_at"],
                name="delivery_pending",
                condition=models.Q(status="pending"),
            )
        ]

    def __str__(self) -> str:
        return f"{self.channel} {self.key}: {self.status} after {self.attempts}"


class NotificationCursor(models.Model):
    """The last sequence of ``group``'s log the producer has examined. Locked while a run
    reads after it, so two runs never examine the same events at once."""

    group = models.OneToOneField(
        "registry.Group", primary_key=True, on_delete=models.CASCADE, related_name="+"
    )
    sequence = models.PositiveBigIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.group_id} notified through {self.sequence}"


# Group hooks (chat and webhooks) live in a module of their own; imported here so Django
# registers them with this app.
from .hook_models import DeliveryAttempt, GroupHook, HookMessage  # noqa: E402

__all__ = [
    "Delivery",
    "DeliveryAttempt",
    "DeliveryStatus",
    "GroupHook",
    "HookMessage",
    "Notification",
    "NotificationCursor",
    "NotificationPreference",
]
