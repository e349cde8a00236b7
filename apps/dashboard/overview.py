"""The group page's overview (issue 37 §1): how much of the group's work is in each state, and
what needs someone's attention now, each row with its reason in words and where to act.

Every read is bounded whatever the group's size (130,000 WorkItems, 1,000,000 events):

- the counts are one ``GROUP BY state`` of the unfinished WorkItems and one of the missions,
  answered from the ``(group, state, …)`` indexes, and each ended WorkItem state counted no
  further than ``COUNT_CAP`` ("10,000+");
- each attention list reads at most ``SHOWN + 1`` rows (the extra one says "more"), and counts
  the rest only when there is more: failed WorkItems by state (their count is the state's
  own), blocked ones by state and whether a running child mission holds them (the newest
  ``CHILD_SCAN`` of those looked at for a child that waits only for its final approval);
  start-by deadlines and ending leases by the ``due_at`` column the sweeps use
  (``WorkItem.due()``: a queued owner's start-by, an active lease's end), the start-by ones
  judged by the reminders' rule over the ``START_SCAN`` nearest; refused executions
  among the queued WorkItems with no deadline (a refused revision holds none, R10.2-06);
- budgets are read from the newest ``BUDGET_SCAN`` active missions only: a mission's limits and
  use are JSON, so no index finds those past 80 %; the page says when it looked no further.

Nothing here is written: the rows are the projections the write path keeps.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Count, Q, QuerySet
from django.urls import reverse
from django.utils import timezone

from apps.notifications.deadlines import worth_a_reminder
from apps.notifications.recipients import waiting_for_approval
from apps.work.models import Mission, MissionStatus, WorkItem
from missionweave.protocol import states as S
from missionweave.protocol.work.checks import approvals_required
from missionweave.protocol.work.items import LEASE_EXPIRED, START_DEADLINE_MISSED
from missionweave.protocol.work.items import WorkItem as WorkItemState

from . import child_missions
from .event_words import short_title
from .work_item_cards import budget_lines

#: rows each attention list shows (the rest: a link to the filtered WorkItem list)
SHOWN = 10
#: an active lease ending within this long is about to expire
LEASE_SOON = timedelta(minutes=5)
#: a budget used this much (percent) of its limit needs attention
BUDGET_WARNING = 80.0
#: the nearest start-by deadlines looked at (the reminders' rule is per item)
START_SCAN = 100
#: the active missions whose budgets are looked at (newest first)
BUDGET_SCAN = 500
#: an ended state's WorkItems are counted up to this many (the rest: "10,000+")
COUNT_CAP = 10_000
#: the states most of a group's WorkItems end in, counted up to the cap
ENDED_STATES = (S.VERIFIED, S.FAILED, S.CANCELLED)

#: the order the counts are shown in, and their words
WORK_STATES: tuple[tuple[str, str], ...] = (
    (S.OPEN, "open"),
    (S.OFFERED, "offered"),
    (S.QUEUED, "queued"),
    (S.ACTIVE, "running"),
    (S.BLOCKED, "blocked"),
    (S.SUBMITTED, "waiting for review"),
    (S.VERIFIED, "done"),
    (S.FAILED, "failed"),
    (S.CANCELLED, "cancelled"),
)
MISSION_STATES: tuple[tuple[str, str], ...] = (
    (MissionStatus.ACTIVE, "active"),
    (MissionStatus.APPROVED, "approved"),
    (MissionStatus.FAILED, "failed"),
    (MissionStatus.CANCELLED, "cancelled"),
)


@dataclass(frozen=True)
class StateCount:
    state: str
    label: str
    count: int
    url: str
    #: there are more than ``count`` (it is ``COUNT_CAP``): shown as "10,000+"
    capped: bool = False


@dataclass(frozen=True)
class Counts:
    work_items: tuple[StateCount, ...]
    missions: tuple[StateCount, ...]

    @property
    def work_items_total(self) -> int:
        return sum(row.count for row in self.work_items)

    @property
    def work_items_capped(self) -> bool:
        """Whether the total is a lower bound (a state counted no further than the cap)."""
        return any(row.capped for row in self.work_items)

    @property
    def missions_total(self) -> int:
        return sum(row.count for row in self.missions)


@dataclass(frozen=True)
class Row:
    """One thing that needs attention: what, why (in words), and where to act."""

    key: str  # unique on the page: "<kind>-<id>"
    title: str
    reason: str
    action: str  # the link's words
    url: str
    at: datetime | None = None  # the moment the reason names (a deadline, a lease's end)
    at_words: str = ""  # "must start by", "lease ends", … before ``at``
    who: str = ""  # a principal the row names
    who_words: str = "owner:"  # what that principal is to the row


@dataclass(frozen=True)
class Attention:
    """One kind of attention: its rows (at most ``SHOWN``) and how many there are in all."""

    kind: str
    heading: str
    rows: tuple[Row, ...]
    total: int
    more_url: str = ""
    more_words: str = ""  # what the "more" link lists
    note: str = ""

    @property
    def more(self) -> int:
        return max(0, self.total - len(self.rows))


@dataclass(frozen=True)
class Overview:
    counts: Counts
    attention: tuple[Attention, ...] = field(default=())

    @property
    def attention_total(self) -> int:
        return sum(kind.total for kind in self.attention)

    @property
    def principals(self) -> set[str]:
        return {row.who for kind in self.attention for row in kind.rows if row.who}


def _list_url(group_id: str, name: str, state: str = "") -> str:
    url = reverse(f"dashboard:{name}", args=[group_id])
    return f"{url}?state={state}" if state else url


def _capped_count(rows: QuerySet[WorkItem]) -> int:
    """How many ``rows`` there are, counting no further than ``COUNT_CAP + 1``."""
    return len(rows.order_by().values_list("pk", flat=True)[: COUNT_CAP + 1])


def _work_count(group_id: str, state: str, label: str, found: int) -> StateCount:
    capped = state in ENDED_STATES and found > COUNT_CAP
    url = _list_url(group_id, "work-items", state)
    return StateCount(state, label, COUNT_CAP if capped else found, url, capped=capped)


def state_counts(group_id: str) -> Counts:
    """The group's WorkItems and missions by state.

    The unfinished states are few rows: one ``GROUP BY`` over them. The ended ones (done,
    failed, cancelled) are most of a group's history — 68,000 done in the benchmark's
    group, where counting them all cost ~50 ms a page — so each is counted only up to
    ``COUNT_CAP`` (an index-only range of ``(group, state, id)``) and shown as "10,000+"
    beyond; the WorkItem list filtered by that state has them all. Missions are ~6 times
    fewer: one exact ``GROUP BY``."""
    items: dict[str, int] = dict(
        WorkItem.objects.filter(group_id=group_id, state__in=S.UNFINISHED)
        .order_by()
        .values_list("state")
        .annotate(n=Count("id"))
        .values_list("state", "n")
    )
    for state in ENDED_STATES:
        items[state] = _capped_count(WorkItem.objects.filter(group_id=group_id, state=state))
    missions = dict(
        Mission.objects.filter(group_id=group_id)
        .order_by()
        .values_list("state")
        .annotate(n=Count("id"))
        .values_list("state", "n")
    )
    return Counts(
        work_items=tuple(
            _work_count(group_id, state, label, items.get(state, 0)) for state, label in WORK_STATES
        ),
        missions=tuple(
            StateCount(state, label, missions.get(state, 0), _list_url(group_id, "missions", state))
            for state, label in MISSION_STATES
        ),
    )


# --- what needs attention -------------------------------------------------------------------

_ROW_FIELDS = ("work_item_id", "title", "owner", "due_at")


def _first(rows: QuerySet[WorkItem], *extra: str) -> tuple[list[dict[str, Any]], bool]:
    """At most ``SHOWN`` rows as dicts, and whether there are more (one query)."""
    found = list(rows.values(*_ROW_FIELDS, *extra)[: SHOWN + 1])
    return found[:SHOWN], len(found) > SHOWN


def _total(rows: QuerySet[WorkItem], shown: list[dict[str, Any]], more: bool) -> int:
    return rows.count() if more else len(shown)


def _item_url(group_id: str, work_item: str) -> str:
    return reverse("dashboard:work-item", args=[group_id, work_item])


def _title(row: Mapping[str, Any]) -> str:
    return str(row.get("title") or row["work_item_id"])


def _failed(group_id: str, total: int) -> Attention:
    rows = WorkItem.objects.filter(group_id=group_id, state=S.FAILED).order_by("-id")
    shown, _more = _first(rows, "data__failed_review")
    return Attention(
        kind="failed",
        heading="Failed WorkItems",
        rows=tuple(
            Row(
                key=f"failed-{row['work_item_id']}",
                title=_title(row),
                reason=(
                    "Its result failed review: open it to see why, then retry or cancel it."
                    if row.get("data__failed_review")
                    else "It failed: open it to see why, then retry or cancel it."
                ),
                action="Open the WorkItem",
                url=_item_url(group_id, row["work_item_id"]),
                who=row["owner"],
            )
            for row in shown
        ),
        total=total,
        more_url=_list_url(group_id, "work-items", S.FAILED),
        more_words="all failed WorkItems",
    )


def _running_child(row: Mapping[str, Any]) -> Mapping[str, Any] | None:
    return child_missions.running_child(row.get("data__child"))


#: the blocked WorkItems whose running child missions are looked at (newest first)
CHILD_SCAN = 100


@dataclass(frozen=True)
class _Children:
    """The running child missions the blocked rows wait for, as the viewer may read them
    (this group; the others they belong to, asked only when a child lives elsewhere:
    R10.4-06): their goals, and which wait only for their final approval."""

    goals: Mapping[Any, str] = field(default_factory=dict)
    ready: frozenset[Any] = frozenset()


def _children(group_id: str, rows: list[dict[str, Any]], viewer: str) -> _Children:
    children = [child for row in rows if (child := _running_child(row)) is not None]
    if not children:
        return _Children()
    readable = child_missions.readable_groups(group_id, children, viewer)
    goals = child_missions.child_goals(children, readable)
    return _Children(goals, frozenset(child_missions.ready_children(children, readable)))


def _blocked_reason(row: Mapping[str, Any], children: _Children) -> str:
    """What a listed blocked item waits for: the final approval of a child mission whose work
    is all done (R10.2-16), or what its worker asked for in its own words (R11.4-04)."""
    child = _running_child(row)
    if child is not None:
        words = child_missions.child_mission_words(child, children.goals)
        return f"Waiting for {words}, whose work is all done: it waits for its final approval."
    blocked_for = row.get("data__blocked_for") or {}
    resolution = str(blocked_for.get("resolution") or "").strip()
    if resolution:
        return f"Blocked: its worker needs {_quoted_need(resolution)}"
    return "Blocked: its worker cannot go on without help."


def _blocked_row(group_id: str, row: Mapping[str, Any], children: _Children) -> Row:
    """A listed blocked row: a running child here is one that waits only for its final
    approval (``_blocked`` lists no other), so the row opens that approval."""
    child = _running_child(row)
    return Row(
        key=f"blocked-{row['work_item_id']}",
        title=_title(row),
        reason=_blocked_reason(row, children),
        action="Open its final approval" if child is not None else "Open the WorkItem",
        url=(
            child_missions.final_approval_url(child)
            if child is not None
            else _item_url(group_id, row["work_item_id"])
        ),
        at=row["due_at"],
        at_words="handed to another worker after" if row["due_at"] else "",
        who=row["owner"],
    )


def _still_working_note(waiting: int, scanned_all: bool) -> str:
    if not waiting:
        return ""
    if waiting == 1:
        said = "1 blocked WorkItem waits for its child mission, still at work: nobody "
        said += "needs to act until it ends."
    else:
        said = f"{waiting} blocked WorkItems wait for their child missions, still at "
        said += "work: nobody needs to act until they end."
    if not scanned_all:
        said += f" Only the newest {CHILD_SCAN} were checked for a child whose work is done."
    return said


def _blocked(group_id: str, total: int, viewer: str) -> Attention:
    """Blocked WorkItems someone can move now (R11.4-04..06): those whose worker asked for
    help, and those whose child mission waits only for its final approval (R10.2-16). One
    blocked while its child mission still works needs nobody until the child ends (R10.2-15):
    it is counted in a note, not listed, as "needs attention now" lists things to do. The
    child missions looked at are the newest ``CHILD_SCAN``; ``total`` is the state's count."""
    rows = WorkItem.objects.filter(group_id=group_id, state=S.BLOCKED)
    on_child = Q(data__child__status="running")
    # a missing key is SQL NULL, which ``~on_child`` alone would not match
    helped = rows.filter(~on_child | Q(data__child__status__isnull=True)).order_by("-id")
    shown, more = _first(helped, "data__blocked_for", "data__child")
    helped_total = _total(helped, shown, more)
    waiting: list[dict[str, Any]] = []
    if total > helped_total:
        fields = (*_ROW_FIELDS, "data__blocked_for", "data__child")
        waiting = list(rows.filter(on_child).order_by("-id").values(*fields)[: CHILD_SCAN + 1])
    scanned_all, waiting = len(waiting) <= CHILD_SCAN, waiting[:CHILD_SCAN]
    children = _children(group_id, waiting, viewer)
    ready = [
        row for row in waiting if child_missions.child_key(row["data__child"]) in children.ready
    ]
    return Attention(
        kind="blocked",
        heading="Blocked WorkItems",
        rows=tuple(_blocked_row(group_id, row, children) for row in (ready + shown)[:SHOWN]),
        total=helped_total + len(ready),
        more_url=_list_url(group_id, "work-items", S.BLOCKED),
        more_words="all blocked WorkItems",
        note=_still_working_note(max(0, total - helped_total - len(ready)), scanned_all),
    )


def _start_by(group_id: str, now: datetime, lead_s: float) -> Attention:
    # The reminders' own rule (``deadlines.worth_a_reminder``): an item waiting for people's
    # approval as soon as its start-by is within the lead time, one waiting for its worker
    # only once half its start window has gone (else every item just accepted would show).
    rows = WorkItem.objects.filter(
        group_id=group_id,
        state=S.QUEUED,
        due_reason=START_DEADLINE_MISSED,
        due_at__lte=now + timedelta(seconds=lead_s),
    ).order_by("due_at")
    scanned = list(rows.values(*_ROW_FIELDS, "data")[:START_SCAN])
    states = ((row, WorkItemState.from_dict(row["data"])) for row in scanned)
    worth = [
        (row, item)
        for row, item in states
        if worth_a_reminder(item, (row["due_at"] - now).total_seconds())
    ]
    return Attention(
        kind="start-by",
        heading="Must start soon",
        rows=tuple(_start_by_row(group_id, row, item, now) for row, item in worth[:SHOWN]),
        total=len(worth),
        more_url=_list_url(group_id, "work-items", S.QUEUED),
        more_words="all queued WorkItems",
        note=(
            f"Only the {START_SCAN} nearest start-by times were checked."
            if len(scanned) >= START_SCAN
            else ""
        ),
    )


def _start_by_row(group_id: str, row: Mapping[str, Any], item: WorkItemState, now: datetime) -> Row:
    """A queued item near its start-by: one that waits for people's execution approval says
    so and opens the approval screen (only they can save it, R10.2-06), as its reminder
    does; one that waits for its worker opens its page."""
    waiting = waiting_for_approval(item)
    if row["due_at"] <= now:
        why = "Its start-by time has passed and it has not started: it is about to be handed"
        why += " to another worker."
    elif waiting:
        why = (
            f"It still waits for execution approval ({len(item.approvals)} of "
            f"{approvals_required(item)}): unless it starts by then, it is handed to another "
            "worker."
        )
    else:
        why = "It has not started yet: unless it starts by then, it is handed to another worker."
    url = _item_url(group_id, row["work_item_id"])
    return Row(
        key=f"start-by-{row['work_item_id']}",
        title=_title(row),
        reason=why,
        action="Open the approval" if waiting else "Open the WorkItem",
        url=f"{url}approval/" if waiting else url,
        at=row["due_at"],
        at_words="must start by",
        who=row["owner"],
    )


def _leases(group_id: str, now: datetime) -> Attention:
    rows = WorkItem.objects.filter(
        group_id=group_id,
        state=S.ACTIVE,
        due_reason=LEASE_EXPIRED,
        due_at__lte=now + LEASE_SOON,
    ).order_by("due_at")
    shown, more = _first(rows)
    return Attention(
        kind="lease",
        heading="Leases about to run out",
        rows=tuple(
            Row(
                key=f"lease-{row['work_item_id']}",
                title=_title(row),
                reason=(
                    "Its worker's lease has run out without a renewal: the work goes back to "
                    "be handed to another worker."
                    if row["due_at"] <= now
                    else "Its worker's lease runs out within "
                    f"{int(LEASE_SOON.total_seconds() // 60)} min unless the worker renews it."
                ),
                action="Open the WorkItem",
                url=_item_url(group_id, row["work_item_id"]),
                at=row["due_at"],
                at_words="lease ends",
                who=row["owner"],
            )
            for row in shown
        ),
        total=_total(rows, shown, more),
        more_url=_list_url(group_id, "work-items", S.ACTIVE),
        more_words="all running WorkItems",
    )


def _refused(group_id: str) -> Attention:
    # A refused revision keeps no deadline (``WorkItem.due()``): among the queued WorkItems
    # without one, those whose projection holds a refusal (R10.2-06).
    rows = (
        WorkItem.objects.filter(group_id=group_id, state=S.QUEUED, due_at__isnull=True)
        .exclude(data__refusal=None)
        .order_by("-id")
    )
    shown, more = _first(rows, "data__execution_refused")
    found = []
    for row in shown:
        refused = row.get("data__execution_refused") or {}
        why = str(refused.get("reason") or "").strip()
        found.append(
            Row(
                key=f"refused-{row['work_item_id']}",
                title=_title(row),
                reason=(
                    f"Its execution was refused: “{why[:160]}”. It waits for a corrected "
                    "contract or a cancel."
                    if why
                    else "Its execution was refused: it waits for a corrected contract or a cancel."
                ),
                action="Open the approval page",
                url=reverse("dashboard:approval", args=[group_id, row["work_item_id"]]),
                who=str(refused.get("by") or ""),
                who_words="refused by",
            )
        )
    return Attention(
        kind="refused",
        heading="Execution refused",
        rows=tuple(found),
        total=_total(rows, shown, more),
        more_url=_list_url(group_id, "work-items", S.QUEUED),
        more_words="all queued WorkItems",
    )


def _budget_rows(missions: Iterable[Mapping[str, Any]], group_id: str) -> list[Row]:
    found = []
    for mission in missions:
        worst = max(
            (
                line
                for line in budget_lines(mission["limits"] or {}, mission["used"] or {})
                if line.percent is not None and line.percent >= BUDGET_WARNING
            ),
            key=lambda line: line.percent or 0.0,
            default=None,
        )
        if worst is None:
            continue
        verb = "is over" if worst.exceeded else "has used"
        found.append(
            Row(
                key=f"budget-{mission['mission_id']}",
                title=str(mission["goal"] or mission["mission_id"]),
                reason=(
                    f"It {verb} {worst.percent_label} of its {worst.dimension} budget "
                    f"({worst.used_text} of {worst.limit_text})."
                ),
                action="Open the mission",
                url=reverse("dashboard:mission", args=[group_id, mission["mission_id"]]),
                who=str(mission["created_by"] or ""),
                who_words="owner:",
            )
        )
    return found


def _budgets(group_id: str) -> Attention:
    missions = list(
        Mission.objects.filter(group_id=group_id, state=MissionStatus.ACTIVE)
        .order_by("-created_sequence")
        .values("mission_id", "goal", "limits", "used", "created_by")[: BUDGET_SCAN + 1]
    )
    looked_further = len(missions) > BUDGET_SCAN
    found = _budget_rows(missions[:BUDGET_SCAN], group_id)
    return Attention(
        kind="budget",
        heading="Missions near a budget limit",
        rows=tuple(found[:SHOWN]),
        total=len(found),
        more_url=_list_url(group_id, "missions", MissionStatus.ACTIVE),
        more_words="all active missions",
        note=(
            f"Only the newest {BUDGET_SCAN} active missions were checked." if looked_further else ""
        ),
    )


def group_overview(group_id: str, *, viewer: str = "", now: datetime | None = None) -> Overview:
    """The counts and the attention lists of one group: a fixed number of bounded queries.
    ``viewer`` (a principal) decides which other groups' child missions are named by goal."""
    now = now or timezone.now()
    counts = state_counts(group_id)
    by_state = {row.state: row.count for row in counts.work_items}
    attention = (
        _failed(group_id, by_state.get(S.FAILED, 0)),
        _blocked(group_id, by_state.get(S.BLOCKED, 0), viewer),
        _start_by(group_id, now, float(settings.MWP_NOTIFY_DEADLINE_LEAD_S)),
        _leases(group_id, now),
        _budgets(group_id),
        _refused(group_id),
    )
    return Overview(counts=counts, attention=attention)


def _quoted_need(resolution: str) -> str:
    """The worker's own words, quoted and cut to 160 characters, ending the sentence: no
    second full stop after a quote that ends in one ("“Which month exactly?”")."""
    said = short_title(resolution, 160)
    return said if said[-2] in ".?!…" else f"{said}."
