"""Reads behind the mission page (the final-approval screen's are in ``mission_reviews``).

Everything comes from the projections the write path keeps in the same transaction as the
events — the Mission row (goal, limits, used, ``usage_series``, children) and its WorkItem
rows — plus a few events read by sequence. A group may hold a million events, so nothing
here scans the log by content: every query is bounded by the mission's own rows, an indexed
``(group, sequence)`` lookup, or a fixed window of sequences.

For a 1,000-item mission the page reads every item's few small JSON values in one query
that decompresses each row's ``data`` once (``json_once``; never the whole document sent),
the progress reports and schedules of only the rows it shows, and the history of only the
items that hold the newest events (issue 37). The callers check membership first (404
otherwise).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from functools import cached_property
from typing import Any

from django.db.models import BigIntegerField, Max
from django.db.models.fields.json import KeyTextTransform, KeyTransform
from django.db.models.functions import Cast

from apps.ledger.models import Event
from apps.registry.services import memberships_of
from apps.work.models import Mission, MissionStatus, WorkItem
from missionweave.protocol import states as S
from missionweave.protocol.memberships import Membership as MembershipState
from missionweave.protocol.work.dependents import NOT_STARTED
from missionweave.protocol.work.schedule import DISCLOSE

from .charts import BudgetChart, budget_charts
from .child_missions import ParentWork, child_goals, parent_work
from .event_lookup import words_at
from .graph import GraphLayout, GraphNode, layout
from .item_names import item_names
from .json_once import paths_once
from .role_words import who_can
from .timeline import event_family
from .work import Viewer

#: the newest events about a mission the page lists (the group timeline has them all)
TIMELINE_SHOWN = 30
#: progress rows the page lists at a time, paged (``?progress=N``): the page renders a
#: bounded number of rows however large the mission (issue 37)
PROGRESS_SHOWN = 25
#: the events a mission ends with (R10.2-16..18)
ENDINGS = ("mission.approved", "mission.failed", "mission.cancelled")
#: how far around its WorkItems' latest events the page looks for a mission's ending: the
#: Mission projection does not keep it, and a bounded index range is all a page may read
ENDING_WINDOW = 5_000


# --- what the page shows ---------------------------------------------------------------


@dataclass(frozen=True)
class Progress:
    """The owner's latest structured progress report (R11.4-01): phase, milestones, next
    checkpoint, blockers and a revised estimate — never a percentage (R11.4-02)."""

    phase: str
    milestones: tuple[str, ...]
    next_checkpoint: str | None
    blockers: tuple[str, ...]
    finish_at: str | None
    confidence: float | None
    sequence: int | None
    recorded_at: str | None

    @classmethod
    def from_projection(cls, report: object) -> Progress | None:
        if not isinstance(report, dict):
            return None
        estimate = report.get("estimate") if isinstance(report.get("estimate"), dict) else {}
        confidence = estimate.get("confidence")
        return cls(
            phase=str(report.get("phase", "")),
            milestones=tuple(str(m) for m in report.get("milestones_completed") or ()),
            next_checkpoint=report.get("next_checkpoint"),
            blockers=tuple(str(b) for b in report.get("blockers") or ()),
            finish_at=estimate.get("finish_at"),
            confidence=confidence if isinstance(confidence, (int, float)) else None,
            sequence=report.get("sequence"),
            recorded_at=report.get("recorded_at"),
        )


#: where the owner may still revise its estimate (``work.disclose_schedule``'s states): an
#: item handed in or ended keeps its last disclosure, but a start window for it would mislead
SCHEDULED_STATES = S.allowed_from(DISCLOSE)


@dataclass(frozen=True)
class StartWindow:
    earliest: str  # wire.md timestamps, as disclosed
    latest: str


@dataclass(frozen=True)
class ScheduleEstimate:
    """The line an item's row shows of the owner's latest schedule disclosure (R11.2-01,
    MWP-WRK-012): the start window — or, once the item runs, the estimated completion — the
    confidence and the capacity state.

    Only these keys of the projection's ``schedule`` are kept, a part of what the WorkItem
    page's card shows: the disclosure carries nothing of another group (R11.2-02, by its
    shape), and the mission page cannot come to show more of it than that card does."""

    start: StartWindow
    completion: str
    confidence: float | None
    capacity: str
    running: bool  # active: it has started, so its completion is what is left to estimate

    @classmethod
    def from_projection(cls, schedule: object, state: str) -> ScheduleEstimate | None:
        if not isinstance(schedule, dict) or state not in SCHEDULED_STATES:
            return None
        window = schedule.get("estimated_start")
        window = window if isinstance(window, dict) else {}
        confidence = schedule.get("confidence")
        return cls(
            start=StartWindow(str(window.get("earliest", "")), str(window.get("latest", ""))),
            completion=str(schedule.get("estimated_completion", "")),
            confidence=confidence if isinstance(confidence, (int, float)) else None,
            capacity=str(schedule.get("capacity_state", "")),
            running=state == S.ACTIVE,
        )


@dataclass(frozen=True)
class ItemSummary:
    """One WorkItem of the mission as the page lists it."""

    id: str
    state: str
    goal: str
    depends_on: tuple[str, ...]
    progress: Progress | None  # read only for the rows the page shows (``with_reports``)
    last_sequence: int  # its newest event (0 when the projection holds none)
    schedule: ScheduleEstimate | None = None  # read only for the page's rows
    #: the current revision's refusal of execution (the projection's ``refusal``), while
    #: the item waits on it for a corrected contract or a cancel (R10.2-06)
    refused: dict[str, Any] | None = None
    #: the ended dependencies it waits on, while it has not started (R10.2-20; the
    #: projection's ``ended_dependencies``), and the WorkItem it replaces (R10.2-21)
    ended: tuple[dict[str, Any], ...] = ()
    replaces: str | None = None
    #: the sequence of its latest progress report, ``None`` before one: what orders the
    #: progress list, read for every item without the report itself
    reported: int | None = None

    @property
    def unfinished(self) -> bool:
        return self.state in S.UNFINISHED

    @property
    def work_done(self) -> bool:
        """Submitted or ended: its latest report is history, and its next checkpoint and
        finish estimate no longer say anything (a verified item read "finish by …")."""
        return self.state in S.WORK_DONE


@dataclass(frozen=True)
class TimelineEntry:
    """An event about the mission or one of its WorkItems."""

    sequence: int
    type: str
    actor: str
    work_item: str | None  # None: the mission's own event
    recorded_at: datetime | None = None
    words: str = ""  # the event in a sentence (event_words)
    #: how many events in a row said the same of the same WorkItem (``run_together``), and
    #: the oldest of them; this entry is the newest
    repeats: int = 1
    since: int | None = None

    @property
    def family(self) -> str:
        return event_family(self.type)


def run_together(entries: Iterable[TimelineEntry]) -> tuple[TimelineEntry, ...]:
    """Events in a row that say the same of the same WorkItem as one line, counted: the
    authority's two checks of a submission read "recorded evidence …: pass" twice, and a
    worker's reports filled the list with one sentence."""
    lines: list[TimelineEntry] = []
    for entry in entries:
        last = lines[-1] if lines else None
        if (
            last is not None
            and entry.words
            and entry.words == last.words
            and (entry.work_item == last.work_item)
        ):
            lines[-1] = replace(last, repeats=last.repeats + 1, since=entry.sequence)
        else:
            lines.append(entry)
    return tuple(lines)


@dataclass(frozen=True)
class Ending:
    """How the mission ended: who approved (or cancelled, or failed) it, when, and why."""

    outcome: str  # approved, failed, cancelled
    actor: str
    sequence: int
    recorded_at: datetime | None
    text: str  # the approval's comment, or the reason


@dataclass(frozen=True)
class MissionRef:
    """A parent or child mission: a link in this group; in another group a link only when
    the viewer is a member there (its page is that group's), text otherwise."""

    mission: str
    group: str | None  # None: this group
    state: str | None  # known for this group's missions
    visible: bool = True  # the viewer may open its page
    #: what people call it; "" where the viewer may not read it (another group's, not theirs)
    goal: str = ""

    @classmethod
    def parse(
        cls, notation: str, states: dict[str, str], member_of: frozenset[str] = frozenset()
    ) -> MissionRef:
        """``m`` is a mission of this group, ``group/m`` one in another group."""
        group, _, mission = notation.rpartition("/")
        if group:
            return cls(mission, group, None, visible=group in member_of)
        return cls(mission, None, states.get(mission))


@dataclass(frozen=True)
class Actions:
    """What the viewer may do with the mission, and in words why not (R10.2-16, R10.2-18)."""

    may_approve: bool  # the viewer's role approves missions
    may_cancel: bool
    approve_note: str  # "" when there is nothing to say
    cancel_note: str
    #: every WorkItem has ended: the final approval can be given now (R10.2-22), so it is
    #: the page's primary action; before that it is a link to read the review so far
    approvable: bool = False


@dataclass(frozen=True)
class MissionPage:
    mission: Mission
    items: tuple[ItemSummary, ...]  # authorisation order
    counts: tuple[tuple[str, int], ...]  # per WorkItem state, in the state table's order
    graph: GraphLayout | None  # None: too large to draw inline (``INLINE_GRAPH_LIMIT``)
    charts: tuple[BudgetChart, ...]
    parent: MissionRef | None
    children: tuple[MissionRef, ...]
    timeline: tuple[TimelineEntry, ...]  # newest first
    ending: Ending | None
    actions: Actions
    progress_page: int = 1  # which ``PROGRESS_SHOWN`` rows of ``progress_all`` are shown
    #: those rows, each with its report and schedule (``with_reports``)
    progress_rows: tuple[ItemSummary, ...] = ()
    #: a child mission's parent WorkItem, named as the viewer may read it (R10.4-06)
    unblocks: ParentWork | None = None

    @property
    def is_active(self) -> bool:
        return self.mission.state == MissionStatus.ACTIVE

    @cached_property
    def unfinished(self) -> tuple[str, ...]:
        """The WorkItems that keep the mission from being approved (R10.2-22)."""
        return tuple(item.id for item in self.items if item.unfinished)

    @cached_property
    def progress_all(self) -> tuple[ItemSummary, ...]:
        """Asked several times by the page: sorted once (a page is rendered once)."""
        return progress_rows(self.items)

    @property
    def progress_pages(self) -> int:
        return max(1, -(-len(self.progress_all) // PROGRESS_SHOWN))

    @property
    def progress_first(self) -> int:
        return (self.progress_page - 1) * PROGRESS_SHOWN + 1

    @property
    def progress_last(self) -> int:
        return self.progress_first + len(self.progress_rows) - 1


def progress_rows(items: Iterable[ItemSummary]) -> tuple[ItemSummary, ...]:
    """Items with a report, newest report first, then unfinished ones without one (the
    page shows ``PROGRESS_SHOWN`` of them at a time)."""
    items = list(items)
    reported = sorted(
        (item for item in items if item.reported is not None),
        key=lambda item: -(item.reported or 0),
    )
    silent = [item for item in items if item.reported is None and item.unfinished]
    # a refused execution waits for people: listed first among the silent ones
    silent.sort(key=lambda item: item.refused is None)
    return (*reported, *silent)


# --- saying what is possible -------------------------------------------------------------


def who_may(command: str, verb: str, membership: MembershipState | None) -> str:
    """ "Only mission owners approve a mission; you are a reviewer.", from the command
    table's roles (wire.md §9) — the very roles the write path checks."""
    return who_can(command, f"{verb} a mission", membership.roles if membership else ())


def unfinished_sentence(unfinished: Sequence[str], titles: Mapping[str, str] | None = None) -> str:
    """ "3 WorkItems are not finished: “Gather the sources”, “Write it up”, wi-3." (R10.2-22),
    naming the first few by their goals (``titles``: id -> goal)."""
    noun = "WorkItem is" if len(unfinished) == 1 else "WorkItems are"
    return f"{len(unfinished)} {noun} not finished: {item_names(unfinished, titles)}."


def mission_actions(
    mission: Mission,
    unfinished: Sequence[str],
    viewer: Viewer,
    membership: MembershipState | None,
    titles: Mapping[str, str] | None = None,
) -> Actions:
    """The forms the page offers, and the sentences that replace the ones it does not.

    Roles come from ``preview.permitted_by`` (the viewer's ``may``); unfinished items are
    the projection's, as the decider reads them. The write path judges every submission
    again; the final-approval screen asks ``preview.refusal`` before it shows its form.
    """
    if mission.state != MissionStatus.ACTIVE:
        ended = f"This mission is {mission.state}: there is nothing left to approve or cancel."
        return Actions(False, False, ended, "")
    may_approve = viewer.may_approve_missions
    may_cancel = viewer.may_end_missions
    if not may_approve:
        approve_note = who_may("mission.approve", "approve", membership)
    elif unfinished:
        approve_note = (
            f"{unfinished_sentence(unfinished, titles)} The mission can be approved once every "
            "WorkItem has ended."
        )
    elif not mission.work_items:
        # the protocol would take it (nothing is unfinished), but nothing is done either: the
        # page does not put approving forward, as the inbox does not list it (R10.2-22)
        approve_note = "It has no WorkItems yet: there is no work done to approve."
    else:
        approve_note = ""
    cancel_note = "" if may_cancel else who_may("mission.cancel", "cancel", membership)
    approvable = may_approve and not unfinished and bool(mission.work_items)
    return Actions(may_approve, may_cancel, approve_note, cancel_note, approvable)


# --- reads ------------------------------------------------------------------------------


def _as_tuple(value: object) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


def mission_items(mission: Mission, *, for_graph: bool = True) -> list[ItemSummary]:
    """The mission's WorkItems in authorisation order, each with only the fields the page
    needs of every item, extracted in the database: one indexed query on ``(group,
    mission)`` that decompresses each row's ``data`` once (``json_once``), whatever the
    number of paths, and sends back a few small values per row.

    The goal is the ``title`` column (the contract's goal, copied by the projection), so it
    costs no JSON at all; ``depends_on`` is read only for a graph drawn from these items.
    Of the progress report only its sequence comes, which orders the progress list; the
    report and the schedule disclosure are read for the rows the page shows
    (``with_reports``). The same read gives what waits on ended work and the replacements
    (R10.2-20, R10.2-21), which the page once read in a second pass over the same rows.
    """
    paths = ("depends_on",) if for_graph else ()
    rows = (
        WorkItem.objects.filter(group_id=mission.group_id, mission=mission.mission_id)
        .annotate(
            shown=paths_once(
                *paths,
                "progress__sequence",
                "history__-1__sequence",
                "refusal",
                "ended_dependencies",
                "replaces",
            )
        )
        .values_list("work_item_id", "state", "title", "shown")
    )
    by_id = {}
    for item, state, goal, shown in rows:
        depends_on = shown[0] if for_graph else []
        reported, last, refusal, ended, replaces = shown[len(paths) :]
        by_id[item] = ItemSummary(
            id=item,
            state=state,
            goal=goal or "",
            depends_on=_as_tuple(depends_on),
            progress=None,
            last_sequence=last if isinstance(last, int) else 0,
            refused=refusal if isinstance(refusal, dict) and state == S.QUEUED else None,
            ended=tuple(ended) if isinstance(ended, list) and state in NOT_STARTED else (),
            replaces=str(replaces) if replaces else None,
            reported=reported if isinstance(reported, int) else None,
        )
    ordered = [by_id.pop(item) for item in mission.work_items if item in by_id]
    return [*ordered, *by_id.values()]


def with_reports(group_id: str, items: Sequence[ItemSummary]) -> tuple[ItemSummary, ...]:
    """``items`` (the rows a page shows) each with its latest progress report and schedule
    disclosure: one query by id, of these rows alone."""
    if not items:
        return ()
    found = dict(
        WorkItem.objects.filter(group_id=group_id, work_item_id__in=[item.id for item in items])
        .annotate(shown=paths_once("progress", "schedule"))
        .values_list("work_item_id", "shown")
    )
    return tuple(
        replace(
            item,
            progress=Progress.from_projection(found[item.id][0]),
            schedule=ScheduleEstimate.from_projection(found[item.id][1], item.state),
        )
        if item.id in found
        else item
        for item in items
    )


_LAST_EVENT = KeyTransform("-1", KeyTransform("history", "data"))


def latest_sequence(mission: Mission) -> int:
    """The newest event of any of the mission's WorkItems (0 for none): where its ending
    lies (``mission_ending``), read as one aggregate without building the items."""
    found = (
        WorkItem.objects.filter(group_id=mission.group_id, mission=mission.mission_id)
        .annotate(last=Cast(KeyTextTransform("sequence", _LAST_EVENT), BigIntegerField()))
        .aggregate(latest=Max("last"))
    )
    return found["latest"] or 0


def _recorded(group_id: str, sequences: Iterable[int]) -> dict[int, datetime]:
    wanted = set(sequences)
    if not wanted:
        return {}
    return dict(
        Event.objects.filter(group_id=group_id, sequence__in=wanted).values_list(
            "sequence", "recorded_at"
        )
    )


def mission_ending(mission: Mission, latest: int) -> Ending | None:
    """The event that ended the mission, if it is within reach of a bounded read.

    The Mission projection keeps its state but not the event that set it, so the page looks
    for it in a fixed window of sequences around where it must be: after the mission's
    creation and, for an approval, after its WorkItems ended (R10.2-22). The window is read
    through the ``(group, sequence)`` index and filtered by type, at most
    ``2 * ENDING_WINDOW`` rows; ``None`` when the mission is active or the ending lies
    outside it (the group timeline still shows it). ``latest`` is the newest sequence of
    its WorkItems' events (``latest_sequence``, or the items' own when they are read).
    """
    if mission.state == MissionStatus.ACTIVE:
        return None
    created = mission.created_sequence
    around = max(created, latest)
    rows = (
        Event.objects.filter(
            group_id=mission.group_id,
            sequence__gt=max(created, around - ENDING_WINDOW),
            sequence__lte=around + ENDING_WINDOW,
            type__in=ENDINGS,
        )
        .order_by("sequence")
        .values_list("sequence", "type", "actor", "recorded_at", "document")
    )
    for sequence, type_, actor, recorded_at, document in rows:
        payload = json.loads(document).get("payload", {})
        if payload.get("mission") != mission.mission_id:
            continue
        text = payload.get("comment") if type_ == "mission.approved" else payload.get("reason")
        return Ending(type_.removeprefix("mission."), actor, sequence, recorded_at, str(text or ""))
    return None


def mission_timeline(
    mission: Mission, items: Sequence[ItemSummary], ending: Ending | None
) -> tuple[TimelineEntry, ...]:
    """The newest ``TIMELINE_SHOWN`` events about the mission, newest first.

    Each WorkItem's projection keeps its latest events (``history``). The newest N events
    across all items can only come from the N items whose own newest event is newest (an
    item outside them has N newer events above its newest one), so only those items'
    histories are read. The mission's own events — its creation and ending — join them.
    """
    newest = sorted(items, key=lambda item: -item.last_sequence)[:TIMELINE_SHOWN]
    histories = WorkItem.objects.filter(
        group_id=mission.group_id, work_item_id__in=[item.id for item in newest]
    ).values_list("work_item_id", "data__history")
    entries: dict[int, TimelineEntry] = {
        mission.created_sequence: TimelineEntry(
            mission.created_sequence, "mission.created", mission.created_by, None
        )
    }
    if ending is not None:
        entries[ending.sequence] = TimelineEntry(
            ending.sequence, f"mission.{ending.outcome}", ending.actor, None, ending.recorded_at
        )
    for work_item, history in histories:
        for entry in (history or ())[-TIMELINE_SHOWN:]:
            sequence = entry.get("sequence")
            if isinstance(sequence, int) and sequence not in entries:
                entries[sequence] = TimelineEntry(
                    sequence, str(entry.get("type")), str(entry.get("actor")), work_item
                )
    shown = sorted(entries.values(), key=lambda entry: -entry.sequence)[:TIMELINE_SHOWN]
    times = _recorded(mission.group_id, (entry.sequence for entry in shown))
    said = words_at(mission.group_id, (entry.sequence for entry in shown))
    return run_together(
        TimelineEntry(
            e.sequence,
            e.type,
            e.actor,
            e.work_item,
            times.get(e.sequence),
            said.get(e.sequence, ""),
        )
        for e in shown
    )


def state_counts(states: Iterable[str]) -> tuple[tuple[str, int], ...]:
    """How many WorkItems are in each state, in the state table's order (R10.2)."""
    counts = Counter(states)
    ordered = [(state, counts.pop(state)) for state in S.STATES if state in counts]
    return (*ordered, *sorted(counts.items()))


def _related_missions(
    mission: Mission, viewer: str
) -> tuple[MissionRef | None, tuple[MissionRef, ...], frozenset[str] | None]:
    """The parent and children as refs, and the viewer's groups when a related mission lives
    elsewhere (read once for the page; ``None`` when not read)."""
    related = [n for n in (mission.parent, *mission.children) if n]
    same_group = [n for n in related if "/" not in n]
    rows = Mission.objects.filter(group_id=mission.group_id, mission_id__in=same_group)
    states, goals = {}, {}
    for mission_id, state, goal in rows.values_list("mission_id", "state", "goal"):
        states[mission_id] = state
        goals[(mission.group_id, mission_id)] = goal
    # the viewer's other groups, asked only when a related mission lives in one
    elsewhere = len(same_group) < len(related)
    member_of = frozenset(memberships_of(viewer)) if elsewhere else frozenset()
    refs = [MissionRef.parse(notation, states, member_of) for notation in related]
    # another group's goal only where the viewer is a member there (R10.4-06)
    goals |= child_goals(
        ({"group": ref.group, "mission": ref.mission} for ref in refs if ref.group), member_of
    )
    named = [
        replace(ref, goal=goals.get((ref.group or mission.group_id, ref.mission), ""))
        for ref in refs
    ]
    parent = named[0] if mission.parent else None
    return parent, tuple(named[1:] if mission.parent else named), member_of if elsewhere else None


#: above this many WorkItems the mission page does not draw the graph inline: the picture
#: (hundreds of KB) loads on its own, from ``mission_graph``, as a large pull request's
#: diff does — the page stays quick to load and to refresh live
INLINE_GRAPH_LIMIT = 200


def mission_graph(group_id: str, mission_id: str) -> tuple[Mission, list[ItemSummary]] | None:
    """The mission and its WorkItems for the graph alone, or ``None`` when there is none."""
    mission = Mission.objects.filter(group_id=group_id, mission_id=mission_id).first()
    if mission is None:
        return None
    return mission, mission_items(mission)


def graph_nodes(items: Sequence[ItemSummary]) -> list[GraphNode]:
    return [GraphNode(item.id, item.goal, item.state, item.depends_on) for item in items]


def mission_page(
    group_id: str,
    mission_id: str,
    *,
    viewer: Viewer,
    membership: MembershipState | None,
    progress_page: int = 1,
) -> MissionPage | None:
    """Everything the mission page shows, or ``None`` when the group has no such mission;
    ``progress_page`` picks the rows of the progress list (past the last: the last)."""
    mission = Mission.objects.filter(group_id=group_id, mission_id=mission_id).first()
    if mission is None:
        return None
    inline_graph = len(mission.work_items) <= INLINE_GRAPH_LIMIT
    items = mission_items(mission, for_graph=inline_graph)
    ending = mission_ending(mission, max((item.last_sequence for item in items), default=0))
    parent, children, member_of = _related_missions(mission, viewer.principal)
    unfinished = [item.id for item in items if item.unfinished]
    page = MissionPage(
        mission=mission,
        items=tuple(items),
        counts=state_counts(item.state for item in items),
        graph=layout(graph_nodes(items)) if inline_graph else None,
        charts=budget_charts(mission.limits, mission.used, mission.usage_series),
        parent=parent,
        children=children,
        timeline=mission_timeline(mission, items, ending),
        ending=ending,
        actions=mission_actions(
            mission, unfinished, viewer, membership, {item.id: item.goal for item in items}
        ),
        unblocks=parent_work(mission, viewer.principal, member_of=member_of),
    )
    shown = min(max(progress_page, 1), page.progress_pages)
    start = (shown - 1) * PROGRESS_SHOWN
    rows = with_reports(group_id, page.progress_all[start : start + PROGRESS_SHOWN])
    return replace(page, progress_page=shown, progress_rows=rows)
