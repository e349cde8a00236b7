"""Reads behind the review queue: every submission waiting for a verdict in the person's
judging groups, oldest first, with each mission's progress and who is reviewing what now.

The queue is also what "submit and next" and Skip ask at the moment they redirect: only a
submission still waiting, not reserved by someone else, is ever opened next — and opening it
reserves it, so no agent decides it under the person (REVIEW_RESERVED, R13.2-03).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from apps.ledger.models import Event
from apps.registry.models import Membership
from apps.work.models import Mission, WorkItem
from missionweave.protocol import states as S
from missionweave.protocol.work.assessment import INTEGRITY
from missionweave.protocol.work.items import WorkItem as WorkItemState

from .review import Reservation, reservation_of

#: roles whose holders judge submissions (evidence.record; accept/fail as the table allows)
JUDGING_ROLES = frozenset({"reviewer", "coordinator", "mission_owner"})


@dataclass(frozen=True)
class QueueItem:
    group_id: str
    group_name: str
    item: WorkItemState
    submission: int
    reservation: Reservation | None
    statuses: dict[str, int]  # criterion status -> how many
    submitted_at: datetime | None = None

    @property
    def held_by_other(self) -> bool:
        r = self.reservation
        return r is not None and r.live and not r.mine

    @property
    def title(self) -> str:
        return str(self.item.contract.get("title") or self.item.contract.get("goal", ""))

    @property
    def key(self) -> tuple[str, str]:
        return (self.group_id, self.item.id)


@dataclass(frozen=True)
class MissionProgress:
    """How far a mission's review has come: items verified out of all, and waiting now."""

    group_id: str
    mission: str
    goal: str
    total: int
    verified: int
    waiting: int

    @property
    def done_label(self) -> str:
        return f"{self.verified} of {self.total} verified"


@dataclass(frozen=True)
class ReviewQueue:
    items: tuple[QueueItem, ...]  # oldest submission first
    missions: tuple[MissionProgress, ...]

    @property
    def free(self) -> tuple[QueueItem, ...]:
        return tuple(i for i in self.items if not i.held_by_other)

    def next_after(self, group_id: str, work_item: str) -> QueueItem | None:
        """The first free item after ``(group_id, work_item)`` in queue order, wrapping
        round, never that item itself."""
        free = [i for i in self.free if i.key != (group_id, work_item)]
        keys = [i.key for i in self.items]
        if (group_id, work_item) in keys:
            position = keys.index((group_id, work_item))
            later = [i for i in free if keys.index(i.key) > position]
            if later:
                return later[0]
        return free[0] if free else None

    def nothing_next(self, left: tuple[str, str] | None) -> str:
        """What "nothing else to open" means, in words that agree with the queue the person
        lands on: nothing waits at all, only the submission they left waits, or the others
        are being reviewed by someone else."""
        others = [i for i in self.items if i.key != left]
        if not self.items:
            return "Nothing else is waiting for your review."
        if not others:
            return "No other submission is waiting: the one you left is the only one."
        held = sum(1 for i in others if i.held_by_other)
        if held == len(others):
            return (
                f"The other {len(others)} waiting "
                f"{'is' if len(others) == 1 else 'are'} being reviewed by someone else right "
                "now; a reservation ends when its reviewer leaves the submission, or by itself "
                "within a quarter of an hour once they stop working on it."
            )
        return "No other submission could be reserved for you just now."


def judging_memberships(principal: str) -> list[Membership]:
    """The person's active memberships whose roles judge submissions."""
    rows = Membership.objects.filter(principal=principal, active=True).select_related("group")
    return [row for row in rows if JUDGING_ROLES & set(row.roles)]


def _statuses(review: dict[str, Any]) -> dict[str, int]:
    statuses: dict[str, int] = {}
    for criterion, summary in review["criteria"].items():
        if criterion == INTEGRITY:
            continue
        statuses[summary["status"]] = statuses.get(summary["status"], 0) + 1
    return statuses


def review_queue(principal: str) -> ReviewQueue:
    """Every submission waiting for review in the person's judging groups, oldest first,
    except items the person owns (they never judge their own work, R13.2-01)."""
    items: list[QueueItem] = []
    mission_keys: set[tuple[str, str]] = set()
    for membership in judging_memberships(principal):
        group_id = membership.group_id
        for row in WorkItem.objects.filter(group_id=group_id, state=S.SUBMITTED):
            item = row.to_state()
            if item.review is None or item.owner == principal:
                continue
            items.append(
                QueueItem(
                    group_id=group_id,
                    group_name=membership.group.name,
                    item=item,
                    submission=int(item.review["submission"]),
                    reservation=reservation_of(item.review, principal),
                    statuses=_statuses(item.review),
                )
            )
            mission_keys.add((group_id, item.mission))
    items.sort(key=lambda q: (q.submission, q.group_id, q.item.id))
    return ReviewQueue(tuple(_with_times(items)), _mission_progress(mission_keys, items))


def _with_times(items: list[QueueItem]) -> list[QueueItem]:
    """Each item with when it was submitted: one indexed read per group."""
    wanted: dict[str, list[int]] = {}
    for q in items:
        wanted.setdefault(q.group_id, []).append(q.submission)
    times: dict[tuple[str, int], datetime] = {}
    for group_id, sequences in wanted.items():
        for sequence, recorded_at in Event.objects.filter(
            group_id=group_id, sequence__in=sequences
        ).values_list("sequence", "recorded_at"):
            times[(group_id, sequence)] = recorded_at
    return [replace(q, submitted_at=times.get((q.group_id, q.submission))) for q in items]


def _mission_progress(
    keys: set[tuple[str, str]], items: list[QueueItem]
) -> tuple[MissionProgress, ...]:
    progress = []
    for group_id, mission_id in sorted(keys):
        states = list(
            WorkItem.objects.filter(group_id=group_id, mission=mission_id).values_list(
                "state", flat=True
            )
        )
        goal = (
            Mission.objects.filter(group_id=group_id, mission_id=mission_id)
            .values_list("goal", flat=True)
            .first()
        )
        progress.append(
            MissionProgress(
                group_id=group_id,
                mission=mission_id,
                goal=goal or "",
                total=len(states),
                verified=states.count(S.VERIFIED),
                waiting=sum(
                    1 for q in items if (q.group_id, q.item.mission) == (group_id, mission_id)
                ),
            )
        )
    return tuple(progress)
