"""From a group's log to notification rows (issue 36 §1): the producer.

``produce(group)`` locks the group's cursor, reads the events after it that may tell someone
something (``recipients.TRIGGERS``), makes the notifications their drafts describe, queues the
email of each one to be sent at once (a :class:`Delivery` row, the outbox), marks read what a
person's own act answered (``answered``), and advances the cursor — all in one transaction,
so a crash leaves the cursor where the rows are. The rows are unique per person, kind and
key, so producing the same events twice changes nothing.

It runs after a hint (``tasks.hint_produce``, a reaction after commit) and from the beat's
catch-up over every group, so a lost hint only delays. A new group starts at sequence 0; the
migration that created the cursors started the groups that existed then at their head, so a
deployment does not wake up to notifications about its whole past. Events archived before
the producer examined them are passed over (they are old news).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.db import transaction

from apps.ledger.models import Event, GroupLog

from . import answered, facts, hook_outbox, live, preferences
from .kinds import EmailMode, Kind
from .models import Delivery, Notification, NotificationCursor
from .recipients import TRIGGERS, Draft, drafts_for

logger = logging.getLogger(__name__)

#: every event type the producer reads: those that tell someone something, and those by
#: which a person answers what they were asked (``answered``)
READ = TRIGGERS | frozenset(answered.ANSWERS)
#: events examined per transaction; a longer backlog is read in several
BATCH = 500
EMAIL = "email"


@dataclass
class Produced:
    examined_through: int = 0
    created: list[int] = field(default_factory=list)
    #: email deliveries to send now (their ids)
    emails: list[int] = field(default_factory=list)
    #: chat and webhook deliveries to send now (``hook_outbox``)
    hooks: list[int] = field(default_factory=list)
    more: bool = False


def email_key(notification_id: int) -> str:
    return f"notification:{notification_id}"


def produce(group_id: str) -> Produced:
    """Examine the group's events after its cursor, at most :data:`BATCH` of them.

    A group this database does not hold (a hint from another database that shares the
    broker, such as a benchmark's, or a group gone since) has nothing to tell anyone: it is
    passed over rather than failing on the cursor's foreign key at commit."""
    if not GroupLog.objects.filter(group_id=group_id).exists():
        logger.info("no group %r here: nothing to produce", group_id)
        return Produced()
    with transaction.atomic():
        NotificationCursor.objects.get_or_create(group_id=group_id)
        cursor = NotificationCursor.objects.select_for_update().get(group_id=group_id)
        head = (
            GroupLog.objects.filter(group_id=group_id)
            .values_list("head_sequence", flat=True)
            .first()
            or 0
        )
        done = Produced(examined_through=cursor.sequence)
        if cursor.sequence >= head:
            return done
        through = min(head, cursor.sequence + BATCH)
        documents = (
            Event.objects.filter(
                group_id=group_id,
                sequence__gt=cursor.sequence,
                sequence__lte=through,
                type__in=sorted(READ),
            )
            .order_by("sequence")
            .values_list("document", flat=True)
        )
        members = facts.people(group_id)
        name = facts.group_name(group_id)
        book = Recipients()
        for document in documents:
            event = json.loads(document)
            answered.mark_answered(event, group_id, book)
            if event["type"] not in TRIGGERS:
                continue
            found = facts.facts_for(event, group_id, members=members, name=name)
            drafts = drafts_for(event, found, facts.display_name)
            store(drafts, group_id, book, done, event=event)
        cursor.sequence = through
        cursor.save(update_fields=["sequence", "updated_at"])
        done.examined_through = through
        done.more = through < head
    return done


class Recipients:
    """Users and their preferences, looked up once per run."""

    def __init__(self) -> None:
        self._users: dict[str, AbstractBaseUser | None] = {}
        self._prefs: dict[int, dict[Kind, preferences.Preference]] = {}

    def user(self, principal: str) -> AbstractBaseUser | None:
        if principal not in self._users:
            username = principal.removeprefix("user:")
            self._users[principal] = (
                get_user_model().objects.filter(username=username, is_active=True).first()
            )
        return self._users[principal]

    def preference(self, user: AbstractBaseUser, kind: Kind) -> preferences.Preference:
        if user.pk not in self._prefs:
            self._prefs[user.pk] = preferences.effective_all(user)
        return self._prefs[user.pk][kind]


def store(
    drafts: Iterable[Draft],
    group_id: str,
    book: Recipients,
    done: Produced,
    *,
    event: dict | None = None,
) -> None:
    """Make each draft's row for a person who has not turned its kind off, and its email
    delivery when they want it at once. An existing row (same person, kind, key) is kept.
    The group's hooks get one delivery per kind and key (``hook_outbox``)."""
    drafts = list(drafts)
    done.hooks += hook_outbox.enqueue(drafts, group_id, event=event)
    for draft in drafts:
        user = book.user(draft.principal)
        if user is None:
            continue
        preference = book.preference(user, draft.kind)
        if preference.off:
            continue
        notification, created = Notification.objects.get_or_create(
            user=user,
            kind=draft.kind.value,
            key=draft.key,
            defaults={
                "group_id": group_id,
                "event_id": (event or {}).get("event_id", ""),
                "event_sequence": (event or {}).get("sequence"),
                "subject_type": draft.subject_type,
                "subject_id": draft.subject_id,
                "title": draft.title[:300],
                "body": draft.body,
                "link": draft.link,
                "in_app": preference.in_app,
                "email_mode": preference.email.value,
            },
        )
        if not created:
            continue
        answered.mark_asked_again(notification)
        done.created.append(notification.pk)
        if preference.in_app:
            live.hint_after_commit(user.pk)  # the person's bell, live (issue 36 §2)
        if preference.email == EmailMode.IMMEDIATE and user.email:
            delivery = Delivery.objects.create(
                channel=EMAIL, key=email_key(notification.pk), user=user, notification=notification
            )
            done.emails.append(delivery.pk)
