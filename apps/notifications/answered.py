"""Which notifications stop being unread by themselves: what a person did themselves, and
what they were asked again.

**Done by themselves.**

Olivia is told "Approve the execution of …", then approves it from her inbox without opening
the notification: until now her bell still counted it, and went on counting every request she
had already carried out, so an unread count meant nothing. A code host does the same for a
review request once its reviewer has reviewed. So when the producer reads an event a *person*
caused (``actor`` ``user:…``), it marks read that person's unread notifications which asked
them for exactly what the event did, about the same subject:

=============================  =================================================================
event (by the person)           what it answered (their notifications about that subject)
=============================  =================================================================
approval.execution_granted,     approval_needed, deadline_near, and asked_of_you for an approval
approval.execution_refused
work.result_accepted,           review_waiting, and asked_of_you for a review
work.failed
work.unblocked                  work_blocked
work.cancelled                  every kind above about that WorkItem
mission.approved,               mission_ready
mission.changes_requested,
mission.failed,
mission.cancelled
=============================  =================================================================

Only notifications made before the event (an earlier ``event_sequence``, or a reminder, which
has none): a new revision's request that came after stays unread. Others' notifications are
untouched, and the person's own keep their words: the notifications page says what settled
them (``standing``). Marking read twice changes nothing, so a rewound cursor is harmless.

**Asked again.** A WorkItem taken from a worker that missed its start-by and accepted by
another asks its mission owners for approval again, with a new start-by reminder; the old
request and reminder stayed unread beside the new ones, four for one errand. So a new
notification of an errand kind (``kinds.ERRANDS``) marks read the same person's older unread
one of that kind about the same subject: the newer says what is asked now. Not within one
approval round: "Olivia approved “…”: it still needs you" is news beside the first request,
which stays unread until the person acts on either.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from django.contrib.auth.base_user import AbstractBaseUser
from django.db.models import Q
from django.utils import timezone

from . import live
from .kinds import ERRANDS, Kind
from .models import Notification
from .recipients import APPROVAL_PAGE, REVIEW_PAGE, approval_round, is_person

WORK_ITEM = "work_item"
MISSION = "mission"
APPROVAL_LINK = f"/{APPROVAL_PAGE}"
REVIEW_LINK = f"/{REVIEW_PAGE}"


@dataclass(frozen=True)
class Answer:
    """What one event type answers: the subject named by its payload, the kinds it answers
    and which links of an ``asked_of_you`` it answers (that kind asks for either)."""

    subject_type: str
    kinds: frozenset[Kind]
    asked_links: tuple[str, ...] = ()


_APPROVED = Answer(
    WORK_ITEM, frozenset({Kind.APPROVAL_NEEDED, Kind.DEADLINE_NEAR}), (APPROVAL_LINK,)
)
_JUDGED = Answer(WORK_ITEM, frozenset({Kind.REVIEW_WAITING}), (REVIEW_LINK,))
_MISSION_DECIDED = Answer(MISSION, frozenset({Kind.MISSION_READY}))

ANSWERS: Mapping[str, Answer] = {
    "approval.execution_granted": _APPROVED,
    "approval.execution_refused": _APPROVED,
    "work.result_accepted": _JUDGED,
    "work.failed": _JUDGED,
    "work.unblocked": Answer(WORK_ITEM, frozenset({Kind.WORK_BLOCKED})),
    "work.cancelled": Answer(
        WORK_ITEM,
        _APPROVED.kinds | _JUDGED.kinds | {Kind.WORK_BLOCKED},
        (APPROVAL_LINK, REVIEW_LINK),
    ),
    "mission.approved": _MISSION_DECIDED,
    "mission.changes_requested": _MISSION_DECIDED,
    "mission.failed": _MISSION_DECIDED,
    "mission.cancelled": _MISSION_DECIDED,
}


def _subject(event: Mapping[str, Any], answer: Answer) -> str:
    payload = event.get("payload") or {}
    value = payload.get(WORK_ITEM) if answer.subject_type == WORK_ITEM else payload.get(MISSION)
    return str(value or "")


class Users(Protocol):
    """The producer's run-long book of users (``producing.Recipients``): each principal
    looked up once however many of their events a run reads."""

    def user(self, principal: str) -> AbstractBaseUser | None: ...


def mark_answered(event: Mapping[str, Any], group_id: str, users: Users) -> int:
    """Mark read the notifications ``event``'s person answered by it; how many were."""
    answer = ANSWERS.get(str(event.get("type")))
    actor = str(event.get("actor") or "")
    if answer is None or not is_person(actor):
        return 0
    subject = _subject(event, answer)
    user = users.user(actor)
    if not subject or user is None:
        return 0
    user_id = user.pk
    asked = Q(kind__in=answer.kinds)
    for link in answer.asked_links:
        asked |= Q(kind=Kind.ASKED_OF_YOU, link__endswith=link)
    before = Q(event_sequence__isnull=True)
    if event.get("sequence") is not None:
        before |= Q(event_sequence__lt=event["sequence"])
    marked = Notification.objects.filter(
        asked,
        before,
        user_id=user_id,
        group_id=group_id,
        subject_type=answer.subject_type,
        subject_id=subject,
        read_at__isnull=True,
    ).update(read_at=timezone.now())
    if marked:
        live.hint_after_commit(user_id)  # the bell, live (issue 36 §2)
    return marked


def mark_asked_again(notification: Notification) -> int:
    """Mark read the person's older unread notifications that ``notification``, just made,
    asks again (an errand kind, the same subject); how many were."""
    if notification.kind not in ERRANDS or not notification.subject_id:
        return 0
    older = Notification.objects.filter(
        user_id=notification.user_id,
        kind=notification.kind,
        group_id=notification.group_id,
        subject_type=notification.subject_type,
        subject_id=notification.subject_id,
        read_at__isnull=True,
        pk__lt=notification.pk,
    )
    if notification.kind == Kind.APPROVAL_NEEDED:  # "… approved it: it still needs you" is news
        older = older.exclude(key__startswith=f"{approval_round(notification.key)}:")
    return older.update(read_at=timezone.now())
