"""Queuing a group's news for its hooks (issue 36 §2): one delivery per hook, event and kind.

The producer (``producing.store``) hands over the drafts it made for one event (or one
start-by reminder); drafts for several people of the same kind and key are one piece of
group news, so each enabled hook of the group whose kinds include it gets one
:class:`Delivery` (channel ``chat`` or ``webhook``, key ``hook:<hook>:<kind>:<draft key>``,
unique per channel: producing the same events again queues nothing) and its
:class:`HookMessage`, the document every attempt sends. A hook is told only of events after
the group's head when it was added (``GroupHook.after_sequence``): the producer runs behind
the log, and a new hook must not receive the news of an event older than itself. It runs
inside the producer's transaction, so the deliveries exist exactly when the notifications do.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from django.utils import timezone

from . import facts
from .hook_models import GroupHook, HookMessage
from .kinds import Kind
from .models import Delivery
from .recipients import Draft
from .unsubscribe import absolute

#: the kind of a "Send a test message" delivery
TEST = "test"
#: kinds told to a person about themselves: a group's channel reads who they are for
PERSONAL = frozenset({Kind.ASKED_OF_YOU, Kind.MEMBERSHIP_CHANGED})
#: every kind a hook may receive (a hook is never told that a hook was disabled)
HOOK_KINDS = tuple(kind for kind in Kind if kind != Kind.HOOK_DISABLED)
KEY_LENGTH = 200
#: the words a group's admin reads for a kind, where a person's own words ("your") do not fit
GROUP_WORDS = {
    Kind.WORK_BLOCKED: "Work is blocked in a mission",
    Kind.MEMBERSHIP_CHANGED: "A membership changed",
    Kind.ASKED_OF_YOU: "Someone was asked for an approval or a review",
}


def group_label(kind: Kind) -> str:
    return GROUP_WORDS.get(kind, kind.label)


def delivery_key(hook_id: int, kind: str, key: str) -> str:
    """Unique per hook, kind and news; a long key is shortened to its SHA-256."""
    full = f"hook:{hook_id}:{kind}:{key}"
    if len(full) <= KEY_LENGTH:
        return full
    return f"hook:{hook_id}:{kind}:sha256:{hashlib.sha256(key.encode()).hexdigest()}"


def _grouped(drafts: Sequence[Draft]) -> dict[tuple[Kind, str], list[Draft]]:
    found: dict[tuple[Kind, str], list[Draft]] = {}
    for draft in drafts:
        found.setdefault((draft.kind, draft.key), []).append(draft)
    return found


def document(
    same: Sequence[Draft], group_id: str, group_name: str, event: dict[str, Any] | None
) -> dict[str, Any]:
    """The webhook's JSON document for one piece of news (without its delivery id)."""
    first = same[0]
    people = sorted({facts.display_name(d.principal) for d in same})
    title = first.title
    if first.kind in PERSONAL:
        title = f"For {', '.join(people)}: {title}"
    occurred = (event or {}).get("recorded_at") or timezone.now().isoformat()
    return {
        "event_id": (event or {}).get("event_id") or None,
        "group": group_id,
        "group_name": group_name,
        "kind": first.kind.value,
        "title": title,
        "body": first.body,
        "link": absolute(first.link),
        "subject": {"type": first.subject_type or None, "id": first.subject_id or None},
        "people": people,
        "occurred_at": occurred,
    }


def _queue(hook: GroupHook, kind: str, key: str, content: dict[str, Any]) -> int | None:
    delivery, created = Delivery.objects.get_or_create(
        channel=hook.channel,
        key=delivery_key(hook.pk, kind, key),
        defaults={"target": str(hook.pk)},
    )
    if not created:
        return None
    HookMessage.objects.create(
        delivery=delivery,
        hook=hook,
        kind=kind,
        document={"delivery": str(delivery.pk), **content},
    )
    return delivery.pk


def enqueue(drafts: Sequence[Draft], group_id: str, *, event: dict[str, Any] | None) -> list[int]:
    """The hook deliveries the drafts call for (their ids: new ones only)."""
    if not drafts:
        return []
    hooks = GroupHook.objects.filter(group_id=group_id, enabled=True)
    if event is not None:  # a hook added after the event is not told of it
        hooks = hooks.filter(after_sequence__lt=event["sequence"])
    hooks = list(hooks.order_by("pk"))
    if not hooks:
        return []
    name = facts.group_name(group_id)
    made = []
    for (kind, key), same in _grouped(drafts).items():
        wanted = [hook for hook in hooks if kind.value in hook.kinds]
        if not wanted:
            continue
        content = document(same, group_id, name, event)
        for hook in wanted:
            made_id = _queue(hook, kind.value, key, content)
            if made_id is not None:
                made.append(made_id)
    return made


def enqueue_test(hook: GroupHook, sender: str, token: str) -> int:
    """A test message for ``hook`` ("Send a test message"), sent even while it is off."""
    name = facts.group_name(hook.group_id)
    content = {
        "event_id": None,
        "group": hook.group_id,
        "group_name": name,
        "kind": TEST,
        "title": f"Test message for “{hook.name}”",
        "body": f"{sender} sent this test from the hooks page of {name}. It arrived: "
        "the hook works.",
        "link": absolute(f"/groups/{hook.group_id}/hooks/"),
        "subject": {"type": None, "id": None},
        "people": [],
        "occurred_at": timezone.now().isoformat(),
    }
    made = _queue(hook, TEST, token, content)
    if made is None:  # the same form sent twice: the first one's delivery
        return Delivery.objects.get(channel=hook.channel, key=delivery_key(hook.pk, TEST, token)).pk
    return made
