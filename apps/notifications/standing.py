"""Where the matter of each listed notification stands now (the notifications page).

A notification is news of one moment: "Approve the execution of …" stays in the list after
another owner approved it, "Review …" after an agent accepted it. The person should not be
sent on an errand someone already ran, as a code host marks a review request whose pull
request was merged. So the page reads, for the notifications it shows, their WorkItems and
missions as they are now (two queries for a page of 20) and says in plain words what settled
the ones that asked for something: "Settled since: it no longer waits for approval; it is
now running." Kinds that only tell (a decision, a membership) ask nothing and get nothing.
The notification itself is kept as it was made: it is the record of what the person was
told.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from apps.registry.services import memberships_of
from apps.work.models import Mission, WorkItem
from apps.work.selectors import in_groups
from missionweave.protocol import states as S
from missionweave.protocol.work.items import WorkItem as WorkItemState

from .kinds import Kind
from .models import Notification
from .recipients import APPROVAL_PAGE, REVIEW_PAGE, waiting_for_approval

#: a WorkItem's state as the sentence "it is now …" ends
STATE_WORDS = {
    S.OPEN: "open again",
    S.OFFERED: "offered to workers",
    S.QUEUED: "queued to start",
    S.ACTIVE: "running",
    S.BLOCKED: "blocked",
    S.SUBMITTED: "waiting for review",
    S.VERIFIED: "accepted",
    S.FAILED: "failed",
    S.CANCELLED: "cancelled",
}
#: how a mission ready for final approval stops waiting for it
MISSION_ENDINGS = frozenset({"approved", "failed", "cancelled"})

Key = tuple[str, str]  # (group, subject id)


@dataclass(frozen=True)
class Now:
    """The subjects of a page of notifications as the projections hold them now."""

    items: Mapping[Key, WorkItemState]
    missions: Mapping[Key, str]  # the mission's state


def read_now(notifications: Iterable[Notification]) -> Now:
    """The WorkItems and missions ``notifications`` are about: one query for each."""
    wanted: dict[str, set[Key]] = {"work_item": set(), "mission": set()}
    for notification in notifications:
        if notification.subject_type in wanted and notification.subject_id:
            key = (notification.group_id, notification.subject_id)
            wanted[notification.subject_type].add(key)
    items: dict[Key, WorkItemState] = {}
    if wanted["work_item"]:
        rows = WorkItem.objects.filter(in_groups(wanted["work_item"], "work_item_id"))
        items = {(row.group_id, row.work_item_id): row.to_state() for row in rows}
    missions: dict[Key, str] = {}
    if wanted["mission"]:
        found = Mission.objects.filter(in_groups(wanted["mission"], "mission_id"))
        rows = found.values_list("group_id", "mission_id", "state")
        missions = {(group, mission): state for group, mission, state in rows}
    return Now(items=items, missions=missions)


def standing(notifications: Iterable[Notification], principal: str) -> dict[int, str]:
    """``pk -> "Settled since: …"`` for each of ``principal``'s notifications whose request
    was settled since; absent while it still waits, and for kinds that ask nothing.

    Only in the groups ``principal`` is a member of now: a former member keeps what they
    were told, but what became of a group's work since is its members' to read (R10.4-06)."""
    member_of = set(memberships_of(principal))
    notifications = [n for n in notifications if n.group_id in member_of]
    now = read_now(notifications)
    said = {}
    for notification in notifications:
        words = settled(notification, now, principal)
        if words:
            said[notification.pk] = f"Settled since: {words}"
    return said


def settled(notification: Notification, now: Now, principal: str) -> str:
    """What settled what ``notification`` asked for, or "" while it still waits."""
    key = (notification.group_id, notification.subject_id)
    if notification.subject_type == "mission":
        state = now.missions.get(key)
        if notification.kind == Kind.MISSION_READY and state in MISSION_ENDINGS:
            return f"the mission is {state}."
        return ""
    item = now.items.get(key)
    if item is None:
        return ""
    kind = notification.kind
    asked = kind == Kind.ASKED_OF_YOU  # for an approval or a review: its link says which
    if kind == Kind.APPROVAL_NEEDED or (asked and notification.link.endswith(f"/{APPROVAL_PAGE}")):
        return _approval_settled(item, principal)
    if kind == Kind.REVIEW_WAITING or (asked and notification.link.endswith(f"/{REVIEW_PAGE}")):
        return "" if item.state == S.SUBMITTED else f"it was judged; it is now {_is(item)}."
    if kind == Kind.DEADLINE_NEAR:
        return "" if item.state == S.QUEUED else f"it is now {_is(item)}."
    if kind == Kind.WORK_BLOCKED:
        return "" if item.state == S.BLOCKED else f"it was unblocked; it is now {_is(item)}."
    return ""


def _approval_settled(item: WorkItemState, principal: str) -> str:
    if waiting_for_approval(item):
        return "you approved it; it waits for the others." if principal in item.approvals else ""
    if item.refusal is not None:
        return "its execution was refused."
    if item.state == S.QUEUED and principal in item.approvals:
        return "you approved it; it may start."
    if item.state == S.QUEUED:
        return "it has the approvals it needs and may start."
    return f"it no longer waits for approval; it is now {_is(item)}."


def _is(item: WorkItemState) -> str:
    return STATE_WORDS.get(item.state, item.state)
