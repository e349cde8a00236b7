"""Snoozing an inbox entry (issue 37 §5): hidden from its person until a chosen time, then
back by itself.

A snooze is the person's view state, not protocol: it is keyed by the signed-in user and the
entry's key (group, kind, subject), and nobody can snooze for someone else — the view only
ever writes ``request.user``'s rows, for a group they are an active member of. The inbox
reads a person's live snoozes in one query (``snoozed_keys``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, time, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import TextChoices

from apps.registry.models import Membership
from missionweave.protocol.identifiers import is_id, user_principal

from .models import InboxSnooze
from .triage import KINDS

#: "until tomorrow" means the start of the working day, in the person's own time zone
MORNING = time(9, 0)


class SnoozeFor(TextChoices):
    TOMORROW = "tomorrow", "Until tomorrow 09:00"
    HOUR = "hour", "For 1 hour"
    DAY = "day", "For 1 day"
    WEEK = "week", "For 1 week"


_SPANS = {
    SnoozeFor.HOUR: timedelta(hours=1),
    SnoozeFor.DAY: timedelta(days=1),
    SnoozeFor.WEEK: timedelta(weeks=1),
}


@dataclass(frozen=True)
class EntryKey:
    """What identifies an inbox entry across refreshes: its group, its section and the
    WorkItem or mission it is about."""

    group: str
    kind: str
    subject: str

    @property
    def text(self) -> str:
        return f"{self.group}|{self.kind}|{self.subject}"

    @classmethod
    def parse(cls, value: str) -> EntryKey | None:
        parts = value.split("|")
        if len(parts) != 3:
            return None
        key = cls(*parts)
        if not (is_id(key.group) and is_id(key.subject) and key.kind in KINDS):
            return None
        return key


def zone_of(name: str, default: tzinfo) -> tzinfo:
    """The IANA zone the person's browser said it is in, else ``default``."""
    try:
        return ZoneInfo(name) if name else default
    except (ZoneInfoNotFoundError, ValueError):
        return default


def snooze_until(choice: SnoozeFor, now: datetime, zone: tzinfo) -> datetime:
    """When a snooze chosen at ``now`` ends; "tomorrow" is 09:00 of the next day in ``zone``."""
    if choice == SnoozeFor.TOMORROW:
        tomorrow = now.astimezone(zone).date() + timedelta(days=1)
        return datetime.combine(tomorrow, MORNING, tzinfo=zone)
    return now + _SPANS[choice]


def may_snooze(user: AbstractBaseUser, key: EntryKey) -> bool:
    """Only an entry of one of the person's own groups (an active membership)."""
    return Membership.objects.filter(
        principal=user_principal(user.get_username()),
        group_id=key.group,
        active=True,
    ).exists()


def snooze_entry(
    *, user: AbstractBaseUser, key: EntryKey, choice: SnoozeFor, now: datetime, zone: tzinfo
) -> datetime:
    """Hide ``key`` from ``user`` until the time ``choice`` names; a second snooze of the
    same entry moves the time. The person's ended snoozes go at the same time."""
    until = snooze_until(choice, now, zone)
    InboxSnooze.objects.filter(user=user, until__lte=now).delete()
    InboxSnooze.objects.update_or_create(
        user=user,
        group_id=key.group,
        kind=key.kind,
        subject=key.subject,
        defaults={"until": until},
    )
    return until


def wake_entry(*, user: AbstractBaseUser, key: EntryKey) -> None:
    """Show ``key`` to ``user`` again now."""
    InboxSnooze.objects.filter(
        user=user, group_id=key.group, kind=key.kind, subject=key.subject
    ).delete()


def snoozed_keys(user: AbstractBaseUser, now: datetime) -> dict[EntryKey, datetime]:
    """The person's snoozes still running at ``now``, each with its end: one query."""
    rows = InboxSnooze.objects.filter(user=user, until__gt=now).values_list(
        "group_id", "kind", "subject", "until"
    )
    return {EntryKey(group, kind, subject): until for group, kind, subject, until in rows}
