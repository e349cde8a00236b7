"""Sending one chat or webhook delivery (issue 36 §2), one attempt at a time.

:func:`attempt` locks the delivery's row, sends once, records the attempt
(:class:`DeliveryAttempt`: when, how long, the HTTP status or the error) and the outcome, and
commits: a delivery already ``sent`` (or ``failed``) is left alone, so a redelivered or
doubled task sends nothing twice. A 2xx (or Apprise's success) marks it ``sent``; a failure
asks the task to retry with backoff (``hook_tasks.deliver``), and the last failure marks it
``failed`` and counts against its hook: ``MWP_HOOK_DISABLE_AFTER`` failed deliveries in a row
turn the hook off, with the reason, and tell the group's human admins (kind
``hook_disabled``). Were the process to die after the receiver's 2xx and before the commit,
the next attempt would send again: receivers deduplicate on ``X-MissionWeave-Delivery``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import apprise
import httpx
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from . import facts, hook_signing, hook_targets
from .hook_models import DeliveryAttempt, GroupHook, HookKind, HookMessage
from .hook_outbox import TEST
from .kinds import Kind
from .models import Delivery, DeliveryStatus
from .producing import Produced, Recipients, store
from .recipients import Draft

logger = logging.getLogger(__name__)
ADMIN = "admin"
ERROR_LENGTH = 2000


@dataclass(frozen=True)
class Outcome:
    """What one send did."""

    ok: bool
    status_code: int | None = None
    error: str = ""


@dataclass
class Attempted:
    sent: bool = False
    #: failed, and another attempt may succeed
    retry: bool = False
    #: email deliveries of the admins' ``hook_disabled`` notifications, to send now
    emails: list[int] = field(default_factory=list)


def post_webhook(hook: GroupHook, message: HookMessage) -> Outcome:
    """POST the document, signed (``hook_signing``); 2xx is success, nothing else is."""
    body = hook_signing.body_bytes(message.document)
    headers = hook_signing.headers(
        secret=hook.secret,
        timestamp=str(int(time.time())),
        body=body,
        delivery=str(message.delivery_id),
        event=message.kind,
    )
    try:
        response = httpx.post(
            hook.url,
            content=body,
            headers=headers,
            timeout=settings.MWP_HOOK_TIMEOUT_S,
            follow_redirects=False,
        )
    except httpx.HTTPError as failure:
        return Outcome(ok=False, error=f"{type(failure).__name__}: {failure}")
    if 200 <= response.status_code < 300:
        return Outcome(ok=True, status_code=response.status_code)
    text = response.text[:300].strip()
    return Outcome(
        ok=False,
        status_code=response.status_code,
        error=f"HTTP {response.status_code}" + (f": {text}" if text else ""),
    )


def chat_text(document: dict) -> tuple[str, str]:
    """A chat message's title and body in plain words, with the absolute link."""
    title = f"{document.get('group_name') or document.get('group')}: {document['title']}"
    lines = [str(document.get("body") or "").strip(), f"Open: {document['link']}"]
    return title, "\n\n".join(line for line in lines if line)


def notify_chat(hook: GroupHook, message: HookMessage) -> Outcome:
    """Send through Apprise; its ``False`` is a failure, with what it logged as the error."""
    sender = apprise.Apprise()
    if not sender.add(hook.url):
        return Outcome(ok=False, error="Apprise no longer recognises this hook's URL")
    title, body = chat_text(message.document)
    with apprise.LogCapture(level=logging.WARNING) as captured:
        result = sender.notify(title=title, body=body, body_format=apprise.NotifyFormat.TEXT)
        said = captured.getvalue().strip()
    if result:
        return Outcome(ok=True)
    last = said.splitlines()[-1] if said else "Apprise could not send the message"
    return Outcome(ok=False, error=last.split(" - ", 2)[-1])


def send(hook: GroupHook, message: HookMessage) -> Outcome:
    try:  # checked again at each send: a name may resolve elsewhere since it was saved
        hook_targets.check(hook.kind, hook.url)
    except hook_targets.BadTarget as refused:
        return Outcome(ok=False, error=str(refused))
    if hook.kind == HookKind.WEBHOOK:
        return post_webhook(hook, message)
    return notify_chat(hook, message)


def attempt(delivery_id: int, *, final: bool) -> Attempted:
    """One attempt of one delivery; ``final``: no retry follows a failure."""
    with transaction.atomic():
        delivery = Delivery.objects.select_for_update().filter(pk=delivery_id).first()
        if delivery is None or delivery.status != DeliveryStatus.PENDING:
            return Attempted()
        message = HookMessage.objects.select_related("hook").filter(delivery=delivery).first()
        if message is None:
            _close(delivery, "not sent: the hook was deleted")
            return Attempted()
        hook = message.hook
        if not hook.enabled and message.kind != TEST:
            _close(delivery, "not sent: the hook was turned off")
            return Attempted()
        at = timezone.now()
        started = time.monotonic()
        outcome = send(hook, message)
        number = delivery.attempts + 1
        DeliveryAttempt.objects.create(
            delivery=delivery,
            number=number,
            at=at,
            duration_ms=round((time.monotonic() - started) * 1000),
            ok=outcome.ok,
            status_code=outcome.status_code,
            error=outcome.error[:ERROR_LENGTH],
        )
        delivery.attempts = number
        delivery.last_attempt_at = at
        delivery.last_error = outcome.error[:ERROR_LENGTH]
        if outcome.ok:
            delivery.status = DeliveryStatus.SENT
            delivery.sent_at = timezone.now()
            delivery.save()
            GroupHook.objects.filter(pk=hook.pk).update(
                consecutive_failures=0, last_delivered_at=delivery.sent_at
            )
            return Attempted(sent=True)
        logger.warning("hook %s delivery %s attempt %s: %s", hook.pk, delivery.pk, number, outcome)
        if not final:
            delivery.save()
            return Attempted(retry=True)
        delivery.status = DeliveryStatus.FAILED
        delivery.save()
        return Attempted(emails=count_failure(hook.pk, outcome.error))


def _close(delivery: Delivery, why: str) -> None:
    delivery.status = DeliveryStatus.FAILED
    delivery.last_error = why
    delivery.save(update_fields=["status", "last_error"])


def count_failure(hook_id: int, error: str) -> list[int]:
    """One more failed delivery in a row; at ``MWP_HOOK_DISABLE_AFTER``, turn the hook off
    and tell the group's admins. The emails to send now."""
    hook = GroupHook.objects.select_for_update().get(pk=hook_id)
    hook.consecutive_failures += 1
    limit = settings.MWP_HOOK_DISABLE_AFTER
    if not hook.enabled or hook.consecutive_failures < limit:
        hook.save(update_fields=["consecutive_failures"])
        return []
    hook.enabled = False
    hook.disabled_at = timezone.now()
    hook.disabled_reason = (
        f"{hook.consecutive_failures} deliveries in a row failed; the last: {error}"
    )[:ERROR_LENGTH]
    hook.save(update_fields=["consecutive_failures", "enabled", "disabled_at", "disabled_reason"])
    done = Produced()
    store(disabled_drafts(hook), hook.group_id, Recipients(), done)
    return done.emails


def disabled_drafts(hook: GroupHook) -> list[Draft]:
    """``hook_disabled`` for each human admin of the hook's group."""
    admins = facts.people(hook.group_id).with_role(ADMIN)
    name = facts.group_name(hook.group_id)
    at = hook.disabled_at.isoformat() if hook.disabled_at else ""
    return [
        Draft(
            principal=admin,
            kind=Kind.HOOK_DISABLED,
            key=f"hook:{hook.pk}@{at}",
            subject_type="hook",
            subject_id=str(hook.pk),
            title=f"The hook “{hook.name}” of {name} was turned off",
            body=(
                f"{hook.consecutive_failures} messages in a row could not be delivered to it. "
                "Check its URL and the receiving end, then turn it on again on the hooks page."
            ),
            link=f"/groups/{hook.group_id}/hooks/",
        )
        for admin in admins
    ]
