"""A group's missions and WorkItems as lists a person can page, filter and search (issue 13 §4).

A group may hold tens of thousands of missions and hundreds of thousands of WorkItems; every
one of them stays reachable: the lists are paged on the server (:data:`PER_PAGE` rows, newest
first), filtered (state, owner, urgency, "waiting on me", "ready for final approval") and
searched by id or title, each filter one indexed read of the projections (``work_mission``
by ``(group, state, created_sequence)`` and ``(group, created_by)``; ``work_workitem`` by
``(group, state, id)``, ``(group, owner)``, ``(group, urgency)``). Only the rows of the page
are read in full, with one more read for their WorkItems' states.

"Waiting on me" is what the inbox lists for the person in this group (``inbox.waiting_on``):
approvals they may grant, reviews they may do, missions they may approve, blocked work in
their missions. "Ready for final approval" is an active mission whose every WorkItem has
finished (R10.2-22), whoever may approve it.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import Count, Q, QuerySet

from apps.ledger.write_path import Caller
from apps.registry.models import Membership
from apps.work.models import Mission, MissionStatus, WorkItem
from missionweave.protocol import states as S

from . import inbox
from .work import Viewer

#: rows per page of either list
PER_PAGE = 25
#: mission rows the group page shows (the rest are a click away, on the mission list)
GROUP_PAGE_MISSIONS = 10
#: ids a live update may ask rows for at once (a burst of events touches a few rows)
MAX_LIVE_IDS = 100


@dataclass(frozen=True)
class MissionFilters:
    """What the mission list is narrowed to; empty fields narrow nothing."""

    q: str = ""
    state: str = ""
    owner: str = ""  # the principal who created the mission (R10.2-16 names it its owner)
    urgency: str = ""  # a WorkItem of the mission asked for this urgency
    waiting: bool = False  # something in it waits on the viewer
    ready: bool = False  # active, every WorkItem finished (R10.2-22)

    @property
    def any(self) -> bool:
        return any((self.q, self.state, self.owner, self.urgency, self.waiting, self.ready))


@dataclass(frozen=True)
class WorkItemFilters:
    q: str = ""
    state: str = ""
    owner: str = ""  # the WorkItem's owner (the worker who accepted it)
    urgency: str = ""
    mission: str = ""
    waiting: bool = False

    @property
    def any(self) -> bool:
        return any((self.q, self.state, self.owner, self.urgency, self.mission, self.waiting))


@dataclass(frozen=True)
class MissionRow:
    """One mission as a list row: its WorkItems counted by state, and what the viewer may do."""

    mission: Mission
    counts: tuple[tuple[str, int], ...]  # (state, count), in the lifecycle's order
    viewer: Viewer

    @property
    def total(self) -> int:
        return sum(count for _state, count in self.counts)

    @property
    def finished(self) -> int:
        return sum(count for state, count in self.counts if state not in S.UNFINISHED)

    @property
    def is_active(self) -> bool:
        return self.mission.state == MissionStatus.ACTIVE

    @property
    def ready_for_final_approval(self) -> bool:
        return self.is_active and self.total > 0 and self.finished == self.total

    @property
    def shows_approve_form(self) -> bool:
        """R10.2-16, R10.2-22: offered to a mission_owner once every WorkItem has finished
        (a mission with none, such as a child mission whose work was done elsewhere, too)."""
        return self.is_active and self.finished == self.total and self.viewer.may_approve_missions

    @property
    def shows_cancel_form(self) -> bool:
        return self.is_active and self.viewer.may_end_missions

    @property
    def shows_actions(self) -> bool:
        return self.shows_approve_form or self.shows_cancel_form


@dataclass(frozen=True)
class Listing:
    """One page of a list, the filters that made it, and how many the group holds in all."""

    page: Page
    rows: Sequence[Any]
    filters: MissionFilters | WorkItemFilters
    total_in_group: int

    @property
    def live_inserts(self) -> bool:
        """New rows appear live only at the top of an unfiltered first page."""
        return self.page.number == 1 and not self.filters.any


# --- waiting on the viewer -----------------------------------------------------------------


@dataclass(frozen=True)
class Waiting:
    missions: frozenset[str]
    work_items: frozenset[str]


def waiting_on(caller: Caller, membership: Membership) -> Waiting:
    """The missions and WorkItems of this group where something waits on ``caller``."""
    found = inbox.waiting_on(caller, membership)
    missions = {entry.mission for entry in found.all()}
    items = {getattr(entry, "work_item", "") for entry in found.all()} - {""}
    return Waiting(frozenset(missions), frozenset(items))


# --- missions ------------------------------------------------------------------------------


def _search(rows: QuerySet[Any], q: str, id_field: str, text_field: str) -> QuerySet[Any]:
    return rows.filter(Q(**{f"{id_field}__icontains": q}) | Q(**{f"{text_field}__icontains": q}))


def filtered_missions(
    group_id: str, filters: MissionFilters, *, waiting: Waiting | None = None
) -> QuerySet[Mission]:
    rows = Mission.objects.filter(group_id=group_id)
    if filters.state:
        rows = rows.filter(state=filters.state)
    if filters.owner:
        rows = rows.filter(created_by=filters.owner)
    if filters.urgency:
        rows = rows.filter(
            mission_id__in=WorkItem.objects.filter(
                group_id=group_id, urgency=filters.urgency
            ).values("mission")
        )
    if filters.ready:
        unfinished = WorkItem.objects.filter(group_id=group_id, state__in=S.UNFINISHED)
        rows = (
            rows.filter(state=MissionStatus.ACTIVE)
            .exclude(work_items=[])
            .exclude(mission_id__in=unfinished.values("mission"))
        )
    if filters.waiting:
        rows = rows.filter(mission_id__in=sorted(waiting.missions if waiting else ()))
    if filters.q:
        rows = _search(rows, filters.q, "mission_id", "goal")
    return rows.order_by("-created_sequence")


def _state_order(state: str) -> int:
    return S.STATES.index(state) if state in S.STATES else len(S.STATES)


def mission_rows(group_id: str, missions: Iterable[Mission], viewer: Viewer) -> list[MissionRow]:
    """Rows for ``missions``, with one read of their WorkItems' states (no item is loaded)."""
    missions = list(missions)
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for mission, state, count in (
        WorkItem.objects.filter(group_id=group_id, mission__in=[m.mission_id for m in missions])
        .values_list("mission", "state")
        .annotate(count=Count("id"))
        .order_by()
    ):
        counts[mission][state] += count
    return [
        MissionRow(
            mission,
            tuple(sorted(counts[mission.mission_id].items(), key=lambda p: _state_order(p[0]))),
            viewer,
        )
        for mission in missions
    ]


def _listing(
    group_id: str,
    model: type[Mission] | type[WorkItem],
    rows: QuerySet[Any],
    filters: MissionFilters | WorkItemFilters,
    render: Callable[[QuerySet[Any]], Sequence[Any]],
    *,
    page: object,
    per_page: int | None,
) -> Listing:
    """One page of ``rows`` (``render`` turns it into list rows), and how many the group
    holds in all (the paginator's count unless filters narrow it)."""
    paginator = Paginator(rows, per_page or PER_PAGE)
    shown = paginator.get_page(page)
    total = model.objects.filter(group_id=group_id).count() if filters.any else paginator.count
    return Listing(
        page=shown, rows=render(shown.object_list), filters=filters, total_in_group=total
    )


def mission_listing(
    group_id: str,
    filters: MissionFilters,
    *,
    viewer: Viewer,
    membership: Membership,
    page: object = 1,
    per_page: int | None = None,
) -> Listing:
    waiting = waiting_on(viewer.caller, membership) if filters.waiting else None
    return _listing(
        group_id,
        Mission,
        filtered_missions(group_id, filters, waiting=waiting),
        filters,
        lambda shown: mission_rows(group_id, shown, viewer),
        page=page,
        per_page=per_page,
    )


def missions_touched(
    group_id: str, missions: Sequence[str], work_items: Sequence[str]
) -> list[str]:
    """The missions a burst of events touched: named, or holding a named WorkItem."""
    ids = set(missions[:MAX_LIVE_IDS])
    if work_items:
        ids.update(
            WorkItem.objects.filter(
                group_id=group_id, work_item_id__in=list(work_items[:MAX_LIVE_IDS])
            ).values_list("mission", flat=True)
        )
    return sorted(ids)


def mission_rows_by_id(group_id: str, ids: Sequence[str], viewer: Viewer) -> list[MissionRow]:
    """The rows a live update re-renders, newest first (only the missions that exist)."""
    missions = Mission.objects.filter(group_id=group_id, mission_id__in=list(ids)).order_by(
        "-created_sequence"
    )
    return mission_rows(group_id, missions, viewer)


# --- WorkItems -----------------------------------------------------------------------------


def filtered_work_items(
    group_id: str, filters: WorkItemFilters, *, waiting: Waiting | None = None
) -> QuerySet[WorkItem]:
    rows = WorkItem.objects.filter(group_id=group_id)
    if filters.state:
        rows = rows.filter(state=filters.state)
    if filters.owner:
        rows = rows.filter(owner=filters.owner)
    if filters.urgency:
        rows = rows.filter(urgency=filters.urgency)
    if filters.mission:
        rows = rows.filter(mission=filters.mission)
    if filters.waiting:
        rows = rows.filter(work_item_id__in=sorted(waiting.work_items if waiting else ()))
    if filters.q:
        rows = _search(rows, filters.q, "work_item_id", "title")
    return rows.order_by("-id")


#: what a WorkItem row shows (the rest of ``data`` is never read by a list)
ROW_FIELDS = (
    "work_item_id",
    "mission",
    "state",
    "owner",
    "urgency",
    "title",
    "data__revision",
    "data__approvals",
    "data__contract__risk",
)


@dataclass(frozen=True)
class WorkItemRow:
    work_item: str
    mission: str
    state: str
    owner: str
    urgency: str
    title: str
    revision: int
    approvals: int
    approvals_required: int

    @property
    def waiting_for_approval(self) -> bool:
        return self.state == S.QUEUED and self.approvals < self.approvals_required


def _approvals_required(risk: object) -> int:
    if not isinstance(risk, dict) or not risk.get("requires_execution_approval"):
        return 0
    required = risk.get("approvals_required", 1)
    return required if isinstance(required, int) else 1


def work_item_rows(rows: QuerySet[WorkItem]) -> list[WorkItemRow]:
    return [
        WorkItemRow(
            work_item=work_item,
            mission=mission,
            state=state,
            owner=owner,
            urgency=urgency,
            title=title,
            revision=revision if isinstance(revision, int) else 1,
            approvals=len(approvals) if isinstance(approvals, list) else 0,
            approvals_required=_approvals_required(risk),
        )
        for work_item, mission, state, owner, urgency, title, revision, approvals, risk in (
            rows.values_list(*ROW_FIELDS)
        )
    ]


def work_item_listing(
    group_id: str,
    filters: WorkItemFilters,
    *,
    viewer: Viewer,
    membership: Membership,
    page: object = 1,
    per_page: int | None = None,
) -> Listing:
    waiting = waiting_on(viewer.caller, membership) if filters.waiting else None
    return _listing(
        group_id,
        WorkItem,
        filtered_work_items(group_id, filters, waiting=waiting),
        filters,
        work_item_rows,
        page=page,
        per_page=per_page,
    )


def work_item_rows_by_id(group_id: str, ids: Sequence[str]) -> list[WorkItemRow]:
    rows = WorkItem.objects.filter(group_id=group_id, work_item_id__in=list(ids[:MAX_LIVE_IDS]))
    return work_item_rows(rows.order_by("-id"))
