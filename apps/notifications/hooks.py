"""Managing a group's hooks (issue 36 §2): who may, and the changes the hooks page makes.

Who administers a group's hooks: its members holding the group role ``admin`` (wire.md §2,
"admin (memberships)", as for memberships) and Django staff. Hooks are the deployment's
plumbing, not the protocol's: nothing here is a command or an event.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.contrib.auth.base_user import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from apps.ledger.head import committed_head
from apps.registry.models import Membership

from . import hook_outbox, hook_signing, hook_targets, hook_tasks
from .hook_models import GroupHook, HookKind
from .models import Delivery

ADMIN = "admin"


def membership_of(user: AbstractBaseUser, group_id: str) -> Membership | None:
    """The person's active membership of the group, if any."""
    principal = f"user:{user.get_username()}"
    return Membership.objects.filter(group_id=group_id, principal=principal, active=True).first()


def administers(user: AbstractBaseUser, membership: Membership | None) -> bool:
    """Staff, or a member holding the group role ``admin``."""
    return bool(user.is_staff) or (membership is not None and ADMIN in (membership.roles or ()))


def admins_of(group_id: str) -> list[str]:
    """The group's human admins (principals), for "ask one of them"."""
    rows = Membership.objects.filter(group_id=group_id, active=True).values_list(
        "principal", "roles"
    )
    return sorted(p for p, roles in rows if p.startswith("user:") and ADMIN in (roles or ()))


@dataclass(frozen=True)
class Created:
    hook: GroupHook
    #: a webhook's signing secret, to show once; "" for chat
    secret: str


def create(
    *,
    group_id: str,
    name: str,
    kind: str,
    url: str,
    kinds: Iterable[str],
    by: AbstractBaseUser,
) -> Created:
    """Save a hook (``url`` checked by ``hook_targets.check``); a webhook gets a new secret.
    It receives the news of events after the group's head as it is now (``after_sequence``)."""
    url = hook_targets.check(kind, url)
    secret = hook_signing.new_secret() if kind == HookKind.WEBHOOK else ""
    hook = GroupHook.objects.create(
        group_id=group_id,
        name=name.strip(),
        kind=kind,
        url=url,
        url_summary=hook_targets.summary(kind, url),
        secret=secret,
        kinds=sorted(set(kinds)),
        created_by=by if by.pk else None,
        after_sequence=committed_head(group_id) or 0,
    )
    return Created(hook=hook, secret=secret)


def turn_on(hook: GroupHook) -> None:
    """Enable again, failures forgotten."""
    GroupHook.objects.filter(pk=hook.pk).update(
        enabled=True, consecutive_failures=0, disabled_at=None, disabled_reason=""
    )


def turn_off(hook: GroupHook, reason: str) -> None:
    GroupHook.objects.filter(pk=hook.pk).update(
        enabled=False, disabled_at=timezone.now(), disabled_reason=reason
    )


def send_test(hook: GroupHook, sender: str, token: str) -> int:
    """Queue a test message (after commit); its delivery's id."""
    with transaction.atomic():
        delivery_id = hook_outbox.enqueue_test(hook, sender, token)
        transaction.on_commit(lambda: hook_tasks.queue([delivery_id]))
    return delivery_id


def delete(hook: GroupHook) -> None:
    """Remove the hook and its deliveries' records."""
    with transaction.atomic():
        Delivery.objects.filter(hook_message__hook=hook).delete()
        hook.delete()
