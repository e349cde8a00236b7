"""Group hooks (issue 36 §2): where a group's news goes besides its people — a chat room
(through Apprise) or a generic JSON webhook signed with HMAC-SHA256 — configured by the
group's admins on ``/groups/<g>/hooks/``.

- :class:`GroupHook`: one destination of one group, the kinds it receives, and whether it
  still works (consecutive failed deliveries; disabled, when and why).
- :class:`HookMessage`: what one :class:`~apps.notifications.models.Delivery` of a hook
  carries, frozen when it was queued (the webhook's JSON document), so every retry sends
  the same bytes.
- :class:`DeliveryAttempt`: one try of one delivery: when, how long, the HTTP status or
  the error. Email deliveries count attempts on the row; hooks keep every one.

Nothing here is part of the protocol or the log: hooks are the deployment's plumbing.
"""

from __future__ import annotations

from typing import ClassVar

from django.conf import settings
from django.db import models

from .models import Delivery
from .sealed import SealedTextField


class HookKind(models.TextChoices):
    CHAT = "chat", "Chat (Slack, Teams, Matrix, … through an Apprise URL)"
    WEBHOOK = "webhook", "Webhook (a signed JSON POST to your URL)"


class GroupHook(models.Model):
    """One chat room or webhook receiving a group's news."""

    group = models.ForeignKey("registry.Group", on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=16, choices=HookKind.choices)
    #: a secret (tokens live in chat URLs): never shown back, only its scheme and host; stored
    #: sealed (``sealed``), so no lookup can match it
    url = SealedTextField()
    #: what the page shows of ``url`` (``hook_targets.summary``), computed when saved
    url_summary = models.CharField(max_length=200)
    #: the HMAC-SHA256 key of a webhook, made by the server and shown once; "" for chat;
    #: stored sealed (``sealed``)
    secret = SealedTextField(blank=True, default="")
    #: the notification kinds it receives (``kinds.Kind`` values)
    kinds = models.JSONField(default=list)
    enabled = models.BooleanField(default=True)
    #: deliveries that failed in a row (every retry spent); a success resets it
    consecutive_failures = models.PositiveIntegerField(default=0)
    disabled_at = models.DateTimeField(null=True, blank=True)
    disabled_reason = models.TextField(blank=True, default="")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_delivered_at = models.DateTimeField(null=True, blank=True)
    #: the group's head when the hook was added: a hook is told what happens after it exists,
    #: never the news of an older event that the producer reaches later (``hook_outbox``)
    after_sequence = models.PositiveBigIntegerField(default=0)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["group", "name"], name="group_hook_name_once")
        ]

    def __str__(self) -> str:
        return f"{self.group_id} {self.kind} hook {self.name!r}"

    @property
    def channel(self) -> str:
        """The :class:`Delivery` channel of its deliveries: ``chat`` or ``webhook``."""
        return self.kind


class HookMessage(models.Model):
    """The content of one hook delivery, fixed when it was queued."""

    delivery = models.OneToOneField(
        Delivery, primary_key=True, on_delete=models.CASCADE, related_name="hook_message"
    )
    hook = models.ForeignKey(GroupHook, on_delete=models.CASCADE, related_name="messages")
    #: a notification kind, or ``test`` for "Send a test message"
    kind = models.CharField(max_length=32)
    #: the webhook's JSON document (the chat message is made from the same fields)
    document = models.JSONField()

    def __str__(self) -> str:
        return f"{self.kind} to hook {self.hook_id}"


class DeliveryAttempt(models.Model):
    """One try of one delivery (chat or webhook)."""

    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="attempt_log")
    number = models.PositiveIntegerField()
    at = models.DateTimeField()
    duration_ms = models.PositiveIntegerField()
    ok = models.BooleanField()
    #: the HTTP status a webhook answered (None: no answer, or a chat service)
    status_code = models.PositiveIntegerField(null=True, blank=True)
    error = models.TextField(blank=True, default="")

    class Meta:
        ordering: ClassVar = ["delivery_id", "number"]
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["delivery", "number"], name="delivery_attempt_once")
        ]

    def __str__(self) -> str:
        return f"attempt {self.number} of {self.delivery_id}: {'ok' if self.ok else 'failed'}"
