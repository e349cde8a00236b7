"""What waits for the signed-in person, across every group of theirs: the inbox at ``/``.

Four sections, each an answer to "what must I do?":

- **execution approvals** they may grant: queued, gated WorkItems short of their quorum
  (R10.2-06) whose grant the write path would take from them now (``preview.refusals``);
  an item they may not grant — their own request, a decision they already gave, a role that
  may not — is not listed, its approval screen says why;
- **reviews** they may do: ``submitted`` WorkItems in groups where their role may record a
  verdict (``evidence.record``: reviewer, coordinator, mission_owner, R13.2-03) and that they
  do not own (R13.2-01), with the criteria still waiting for a person's verdict and who holds
  the (advisory) review reservation;
- **missions** they may approve (``mission.approve``, R10.2-16): active missions whose every
  WorkItem has finished (R10.2-22);
- **blocked** work in the missions they own: ``blocked`` WorkItems, queued ones whose
  execution was refused (shown as "needs a corrected contract": a refused revision never
  starts, only a new revision or a cancel moves it, issue 34 §4), and ones waiting on a
  dependency that failed or was cancelled.
  A person owns the missions they created and, as a group's mission_owner, every mission of
  that group: missions are usually created by a coordinator agent on the owners' behalf.

Reads stay per group, never per item: the queued gated WorkItems, the submitted ones, the
active missions and which missions still have unfinished work, the blocked and refused ones,
the waiting ones when a dependency failed, then one read of the log by sequence for when each
entry began to wait. Every section is counted in full, but only its first ``SHOWN`` entries
(the most urgent, then the oldest) are rendered, and only the shown reviews' criteria and
reservations are read: with a 1,000-item mission the page stays within its 150 ms (p95).
Everything comes from the projections the write path keeps.
"""

from __future__ import annotations

import json
from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from math import ceil
from typing import Any

from django.db import connection
from django.db.models import Case, F, Func, IntegerField, JSONField, Q, Value, When
from django.db.models.fields.json import KT
from django.utils import timezone

from apps.ledger import preview
from apps.ledger.models import Event
from apps.ledger.write_path import Caller
from apps.registry.models import Membership
from apps.work.models import Mission, MissionStatus, WorkItem
from missionweave.protocol import states as S
from missionweave.protocol.memberships import Membership as MembershipState
from missionweave.protocol.work.items import WorkItem as WorkItemState

from .child_missions import (
    child_goals,
    child_key,
    child_mission_words,
    final_approval_url,
    readable_groups,
    ready_children,
    running_child,
)
from .inbox_asks import AskedEntry, asked_entries
from .inbox_entries import (
    SHOWN,
    ApprovalEntry,
    BlockedEntry,
    Criterion,
    Entry,
    GroupRef,
    Inbox,
    MissionEntry,
    Reservation,
    ReviewEntry,
    Section,
)
from .item_names import item_names, titles_of
from .names import display_name
from .snooze import EntryKey
from .triage import PAGE, Triage
from .work import GRANT_EXECUTION, grant_refusals, is_waiting_for_approval
from .work_item_cards import Countdown

#: the commands whose roles decide which sections a group contributes to
RECORD_EVIDENCE = "evidence.record"
APPROVE_MISSION = "mission.approve"
INBOX_COMMANDS = (GRANT_EXECUTION, RECORD_EVIDENCE, APPROVE_MISSION)
#: event families whose events may change what the inbox shows (the page script's filter)
LIVE_FAMILIES = ("work", "approval", "mission", "review", "evidence", "membership")
#: events that put a WorkItem in ``queued``: it has waited for approval since the latest
QUEUED_SINCE = frozenset(
    {"work.offer_accepted", "work.unblocked", "work.checkpointed", "work.retry_scheduled"}
)
#: statuses of a criterion that no longer waits for anyone's verdict
JUDGED = frozenset({"pass", "fail", "inconclusive"})
HUMAN_REVIEW = "human_review"
SECTION_KEYS = ("asked", "approvals", "reviews", "missions", "blocked")


def _now() -> datetime:
    """The clock countdowns and reservations are read against (a seam for tests)."""
    return timezone.now()


@dataclass
class _Found:
    asked: list[AskedEntry] = field(default_factory=list)  # first: asked by name (issue 36)
    approvals: list[ApprovalEntry] = field(default_factory=list)
    reviews: list[ReviewEntry] = field(default_factory=list)
    missions: list[MissionEntry] = field(default_factory=list)
    blocked: list[BlockedEntry] = field(default_factory=list)

    def all(self) -> Iterable[Entry]:
        yield from self.asked
        yield from self.approvals
        yield from self.reviews
        yield from self.missions
        yield from self.blocked

    def add(self, other: _Found) -> None:
        self.asked += other.asked
        self.approvals += other.approvals
        self.reviews += other.reviews
        self.missions += other.missions
        self.blocked += other.blocked


#: each section's title and what would appear in it, said when nothing does
_SECTIONS = {
    "asked": (
        "Asked of you",
        "What someone asks of you by name — an execution approval, a review — appears here "
        "first, with who asked and their note.",
    ),
    "approvals": (
        "Execution approvals",
        "WorkItems that wait for your approval before they may start appear here: queued, "
        "gated by their contract's risk, and asking a mission owner like you.",
    ),
    "reviews": (
        "Reviews",
        "Submitted results you may review appear here, with the criteria that wait for a "
        "person's verdict.",
    ),
    "missions": (
        "Missions to approve",
        "Active missions whose every WorkItem has finished appear here, for your final approval.",
    ),
    "blocked": (
        "Blocked in your missions",
        "WorkItems of your missions that cannot move appear here: blocked ones, refused "
        "executions and ones waiting on a failed dependency.",
    ),
}


def inbox_of(
    caller: Caller,
    *,
    now: datetime | None = None,
    show: str = "",
    triage: Triage | None = None,
    snoozed: Mapping[EntryKey, datetime] | None = None,
) -> Inbox:
    """Everything waiting for ``caller`` in the groups where they are an active member:
    every section counted in full, the first :data:`SHOWN` entries of each shown (a page of
    :data:`~.triage.PAGE` of the section ``show`` names).

    ``triage`` narrows the reads to one group or one kind (issue 37 §5): a group or a kind
    the person filtered out is not read at all. ``snoozed`` (the person's live snoozes)
    hides those entries and counts them, unless the triage asks to see them."""
    now = now or _now()
    triage = triage or Triage(show=show)
    snoozed = snoozed or {}
    rows = (
        Membership.objects.filter(principal=caller.principal, active=True)
        .select_related("group", "group__log")
        .order_by("group__name", "group_id")
    )
    found = _Found()
    groups = []
    kinds = tuple(key for key in SECTION_KEYS if triage.wants_kind(key))
    for row in rows:
        log = getattr(row.group, "log", None)
        ref = GroupRef(
            row.group_id, row.group.name, tuple(row.roles), log.head_sequence if log else 0
        )
        groups.append(ref)
        if triage.wants_group(ref.id):
            found.add(_collect(caller, ref, row.to_state(), now, kinds=kinds))
    sections = []
    for key in kinds:
        listed, asleep = _awake(key, triage.order(getattr(found, key)), snoozed, triage)
        pages = max(1, ceil(len(listed) / PAGE))
        page = min(triage.page, pages) if key == triage.show else 1
        offset = (page - 1) * PAGE if key == triage.show else 0
        shown = listed[offset : offset + PAGE] if key == triage.show else listed[:SHOWN]
        for entry in shown:
            entry.now = now
        if key == "reviews":
            _review_details(caller, shown, now)
        title, empty = _SECTIONS[key]
        sections.append(
            Section(
                key,
                title,
                tuple(shown),
                len(listed),
                empty,
                key == triage.show,
                snoozed=asleep,
                page=page,
                pages=pages,
                offset=offset,
                links=_links(triage, key, page, pages),
            )
        )
    return Inbox(
        principal=caller.principal,
        groups=tuple(groups),
        sections=tuple(sections),
        show=triage.show if triage.show in kinds else "",
        snoozed=sum(section.snoozed for section in sections),
        showing_snoozed=triage.show_snoozed,
        snoozed_url=(triage.query(snoozed="") or "?") + "#inbox-sections"
        if triage.show_snoozed
        else triage.query(snoozed="show") + "#inbox-sections",
    )


def _links(triage: Triage, key: str, page: int, pages: int) -> dict[str, str]:
    """A section's "show more", "back", "previous" and "next" addresses, filters kept."""
    anchor = f"#inbox-{key}"
    links = {
        "more": triage.query(show=key, page="") + anchor,
        "less": (triage.query(show="", page="") or "?") + anchor,
    }
    if page > 1:
        links["previous"] = triage.query(show=key, page=page - 1) + anchor
    if page < pages:
        links["next"] = triage.query(show=key, page=page + 1) + anchor
    return links


def _awake(
    kind: str, entries: list[Entry], snoozed: Mapping[EntryKey, datetime], triage: Triage
) -> tuple[list[Entry], int]:
    """The entries listed and how many of them the person snoozed: the snoozed ones are
    left out, or kept and marked when the person asked to see them."""
    if not snoozed:
        return entries, 0
    listed, asleep = [], 0
    for entry in entries:
        until = snoozed.get(EntryKey(entry.group.id, kind, entry.subject))
        if until is not None:
            asleep += 1
            entry.snoozed_until = until
            if not triage.show_snoozed:
                continue
        listed.append(entry)
    return listed, asleep


def _collect(
    caller: Caller,
    group: GroupRef,
    membership: MembershipState,
    now: datetime,
    *,
    with_times: bool = True,
    kinds: Container[str] = SECTION_KEYS,
) -> _Found:
    """One group's entries of the sections ``kinds`` names, then (``with_times``) the times
    their waits began (one read of the log), which only the inbox shows."""
    may = preview.permitted_by(caller, membership, INBOX_COMMANDS)
    found = _Found()
    if "asked" in kinds:
        found.asked = asked_entries(caller.principal, group, membership)
    if GRANT_EXECUTION in may and "approvals" in kinds:
        found.approvals = _approvals(caller, group, membership, now)
    if RECORD_EVIDENCE in may and "reviews" in kinds:
        found.reviews = _reviews(caller, group)
    if APPROVE_MISSION in may and "missions" in kinds:
        found.missions = ready_missions(group)
    if "blocked" in kinds:
        found.blocked = _blocked(caller, group, _owned_missions(caller, group))
    if with_times:
        _read_times(group.id, found)
    return found


def _owned_missions(caller: Caller, group: GroupRef) -> set[str] | None:
    """The missions of ``group`` the person owns; ``None`` for all of them (a mission_owner)."""
    if "mission_owner" in group.roles:
        return None
    return set(
        Mission.objects.filter(group_id=group.id, created_by=caller.principal).values_list(
            "mission_id", flat=True
        )
    )


def _contract_terms(contract: dict[str, Any]) -> dict[str, Any]:
    return {
        "title": str(contract.get("goal", "")),
        "urgency": contract.get("urgency"),
        "deadline": contract.get("deadline"),
    }


#: the contract fields an entry shows, read alone as text (a whole contract is far larger,
#: and decoding it per entry costs more than the query)
TERMS = (KT("data__contract__goal"), KT("data__contract__urgency"), KT("data__contract__deadline"))


def _terms(goal: object, urgency: object, deadline: object) -> dict[str, Any]:
    return {"title": str(goal or ""), "urgency": urgency, "deadline": deadline}


def _latest(item: WorkItemState, types: Iterable[str]) -> int | None:
    wanted = frozenset(types)
    return next((seq for seq, type_, _a in reversed(item.history) if type_ in wanted), None)


def _approvals(
    caller: Caller, group: GroupRef, membership: MembershipState, now: datetime
) -> list[ApprovalEntry]:
    """R10.2-06: the waiting items whose grant the write path would take from the person,
    each judged by the decider against the row read here (``preview.refusals``)."""
    gated = WorkItem.objects.filter(
        group_id=group.id,
        state=S.QUEUED,
        data__contract__risk__requires_execution_approval=True,
    ).order_by("id")
    items = (WorkItemState.from_dict(data) for data in gated.values_list("data", flat=True))
    waiting = [item for item in items if is_waiting_for_approval(item)]
    refusals = grant_refusals(caller, group.id, waiting, membership=membership)
    return [
        ApprovalEntry(
            group=group,
            mission=item.mission,
            **_contract_terms(item.contract),
            since_sequence=_latest(item, QUEUED_SINCE) or _first(item),
            item=item,
            start_by=Countdown(item.start_deadline, now, "missed") if item.start_deadline else None,
        )
        for item, refused in zip(waiting, refusals, strict=True)
        if refused is None
    ]


def _first(item: WorkItemState) -> int | None:
    return item.history[0][0] if item.history else None


def _reviews(caller: Caller, group: GroupRef) -> list[ReviewEntry]:
    """R13.2-03: submitted results the person may judge, never their own (R13.2-01). Only
    what sorting needs is read here; the criteria and reservations of the entries shown are
    read once the sections are cut (``_review_details``)."""
    rows = (
        WorkItem.objects.filter(group_id=group.id, state=S.SUBMITTED)
        .exclude(owner=caller.principal)
        .order_by("id")
        .values_list("work_item_id", "mission", *TERMS, KT("data__review__submission"))
    )
    return [
        ReviewEntry(
            group=group,
            mission=mission,
            **_terms(goal, urgency, deadline),
            since_sequence=int(submission) if submission else None,
            work_item=work_item,
        )
        for work_item, mission, goal, urgency, deadline, submission in rows
    ]


def _review_details(caller: Caller, entries: Sequence[ReviewEntry], now: datetime) -> None:
    """The shown reviews' criteria awaiting a person and their reservations: one read per
    group among the entries."""
    by_group: dict[str, dict[str, ReviewEntry]] = {}
    for entry in entries:
        by_group.setdefault(entry.group.id, {})[entry.work_item] = entry
    for group_id, shown in by_group.items():
        rows = WorkItem.objects.filter(group_id=group_id, work_item_id__in=shown).values_list(
            "work_item_id",
            "data__contract__acceptance_criteria",
            "data__review__criteria",
            "data__review__reservation",
        )
        for work_item, criteria, status_of, reserved in rows:
            entry = shown[work_item]
            statuses = status_of or {}
            entry.awaiting_human = tuple(
                Criterion(str(c.get("id")), str(c.get("description", "")))
                for c in criteria or ()
                if c.get("method") == HUMAN_REVIEW
                and statuses.get(c.get("id"), {}).get("status") not in JUDGED
            )
            reservation = _reservation(reserved, now)
            if reservation is not None and reservation.reviewer == caller.principal:
                entry.reserved_by_viewer = reservation
            else:
                entry.reserved_by_other = reservation


def _reservation(value: object, now: datetime) -> Reservation | None:
    """An unexpired reservation; an expired one ends by itself (no sweep)."""
    if not isinstance(value, dict):
        return None
    try:
        reservation = Reservation(str(value["reviewer"]), str(value["expires_at"]))
        return reservation if reservation.until > now else None
    except (KeyError, ValueError):
        return None


def ready_missions(group: GroupRef) -> list[MissionEntry]:
    """R10.2-16, R10.2-22: active missions with WorkItems, none of them unfinished."""
    unfinished = set(
        WorkItem.objects.filter(group_id=group.id, state__in=S.UNFINISHED)
        .values_list("mission", flat=True)
        .distinct()
    )
    # the number of WorkItems, counted by the database: a group may hold a thousand ready
    # missions, and decoding every one's list of ids cost the owner's inbox ~15 ms a page
    # (issue 37); the change requests are decoded only where there are some
    rows = (
        Mission.objects.filter(group_id=group.id, state=MissionStatus.ACTIVE)
        .annotate(
            item_count=JSONArrayLength("work_items"),
            requests_found=Case(
                When(~Q(change_requests=[]), then=F("change_requests")),
                default=Value(None, output_field=JSONField()),
            ),
        )
        .values_list("mission_id", "goal", "created_sequence", "item_count", "requests_found")
    )
    ready = [row for row in rows if row[3] and row[0] not in unfinished]
    held = _held_for_changes(group, ready)
    return [
        MissionEntry(
            group=group,
            mission=mission,
            title=goal,
            since_sequence=created,
            items=count,
        )
        for mission, goal, created, count, _requests in ready
        if mission not in held
    ]


class JSONArrayLength(Func):
    """The length of a JSON array column, computed where it is stored."""

    function = "JSONB_ARRAY_LENGTH"
    output_field = IntegerField()

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> tuple[str, Any]:
        return super().as_sql(compiler, connection, function="JSON_ARRAY_LENGTH", **extra)


def _held_for_changes(group: GroupRef, rows: list[tuple[Any, ...]]) -> set[str]:
    """The missions a mission owner asked changes of that wait for their replacements: not
    ready for final approval until the coordinator has replaced every item named (issue 36
    §5; ``missions.changes``: a request is open while an item it names has no replacement)."""
    named = {
        mission: {item for request in requests for item in request["work_items"]}
        for mission, _goal, _created, _items, requests in rows
        if requests
    }
    if not named:
        return set()
    everything = set().union(*named.values())
    rows_found = WorkItem.objects.filter(group_id=group.id, work_item_id__in=everything)
    unreplaced = {
        work_item
        for work_item, replaced_by in rows_found.values_list("work_item_id", "data__replaced_by")
        if not replaced_by
    }
    return {mission for mission, items in named.items() if items & unreplaced}


def _blocked(caller: Caller, group: GroupRef, owned: set[str] | None) -> list[BlockedEntry]:
    """WorkItems of the person's missions that cannot move without someone acting."""
    entries: list[BlockedEntry] = []
    if owned is not None and not owned:
        return entries
    blocked = WorkItem.objects.filter(group_id=group.id, state=S.BLOCKED)
    if owned is not None:
        blocked = blocked.filter(mission__in=owned)
    rows = list(
        blocked.order_by("id").values_list(
            "work_item_id", "mission", *TERMS, "data__child", "data__history"
        )
    )
    readable = readable_groups(group.id, (row[5] for row in rows), caller.principal)
    goals = child_goals((row[5] for row in rows), readable)
    running = {row[0]: row[5] for row in rows if running_child(row[5]) is not None}
    ready = ready_children(running.values(), readable)
    for work_item, mission, goal, urgency, deadline, child, history in rows:
        since = next(
            (e["sequence"] for e in reversed(history or ()) if e["type"] == "work.blocked"), None
        )
        child_ready = work_item in running and child_key(child) in ready
        if child_ready:
            reason = (
                f"waiting for {child_mission_words(child, goals)}, whose work is all done: "
                "it waits for its final approval"
            )
        elif work_item in running:
            reason = f"waiting for {child_mission_words(child, goals)}"
        else:
            reason = "stopped by the agent working on it"
        entries.append(
            BlockedEntry(
                group=group,
                mission=mission,
                **_terms(goal, urgency, deadline),
                since_sequence=since,
                work_item=work_item,
                state=S.BLOCKED,
                reason=reason,
                wants_resolution=work_item not in running and since is not None,
                next_step_url=final_approval_url(child) if child_ready else "",
            )
        )
    # R10.2-06: a refused revision cannot start, gated or not (work.start: APPROVAL_REQUIRED);
    # the mission's owners correct the contract (a new revision) or cancel it
    refused = WorkItem.objects.filter(
        group_id=group.id, state__in=S.UNFINISHED, data__refusal__principal__isnull=False
    )
    if owned is not None:
        refused = refused.filter(mission__in=owned)
    rows = refused.order_by("id").values_list(
        "work_item_id", "mission", "state", *TERMS, "data__refusal"
    )
    for work_item, mission, state, goal, urgency, deadline, refusal in rows:
        entries.append(
            BlockedEntry(
                group=group,
                mission=mission,
                **_terms(goal, urgency, deadline),
                since_sequence=refusal.get("sequence"),
                work_item=work_item,
                state=state,
                reason="needs a corrected contract",
                refusal=refusal,
            )
        )
    entries += _waiting_on_failures(group, owned)
    return entries


def _waiting_on_failures(group: GroupRef, owned: set[str] | None) -> list[BlockedEntry]:
    """Items that wait on a dependency that failed or was cancelled: it will not be verified
    unless someone offers it again (R10.2-20), replaces it (R10.2-21) or changes the plan
    (R10.4-03). The write path records each on the waiting item (``ended_dependencies``,
    ``missionweave.protocol.work.dependents``), its policy and replacements judged there."""
    waiting = WorkItem.objects.filter(
        group_id=group.id, state__in=(S.OPEN, S.OFFERED, S.QUEUED)
    ).order_by("id")
    if owned is not None:
        waiting = waiting.filter(mission__in=owned)
    stuck = {
        work_item: {entry["dependency"]: entry["outcome"] for entry in ended}
        for work_item, ended in waiting.values_list("work_item_id", "data__ended_dependencies")
        if ended
    }
    if not stuck:
        return []
    entries = []
    # the dependencies named by their goals, as people know them (one query)
    dependencies = {dep for ended in stuck.values() for dep in ended}
    titles = titles_of(group.id, dependencies, limit=None)
    rows = WorkItem.objects.filter(group_id=group.id, work_item_id__in=stuck).order_by("id")
    for work_item, mission, state, goal, urgency, deadline in rows.values_list(
        "work_item_id", "mission", "state", *TERMS
    ):
        names = ", ".join(
            f"{item_names([dep], titles)} ({outcome})" for dep, outcome in stuck[work_item].items()
        )
        entries.append(
            BlockedEntry(
                group=group,
                mission=mission,
                **_terms(goal, urgency, deadline),
                work_item=work_item,
                state=state,
                reason=f"waiting on {names}",
            )
        )
    return entries


def _events_at(group_id: str, sequences: list[int]) -> Any:
    """The group's events at ``sequences``. On PostgreSQL the list goes as one array
    parameter (``= ANY(%s)``): an ``IN`` of 1,250 placeholders cost psycopg ~12 ms a page to
    split the query text alone (the owner's inbox in the benchmark's group, issue 37)."""
    rows = Event.objects.filter(group_id=group_id)
    if connection.vendor == "postgresql":
        return rows.extra(where=["ledger_event.sequence = ANY(%s)"], params=[sequences])
    return rows.filter(sequence__in=sequences)


def _read_times(group_id: str, found: _Found) -> None:
    """When each entry began to wait: one read of the log for all of a group's entries (and
    one more for what blocked owners asked for, when the group has any)."""
    entries = [entry for entry in found.all() if entry.since_sequence]
    if not entries:
        return
    wanted = sorted({entry.since_sequence for entry in entries if entry.since_sequence})
    times = dict(_events_at(group_id, wanted).values_list("sequence", "recorded_at"))
    for entry in entries:
        entry.since = times.get(entry.since_sequence)
    asked = {e.since_sequence: e for e in found.blocked if e.wants_resolution}
    if not asked:
        return
    for sequence, document in Event.objects.filter(
        group_id=group_id, sequence__in=asked
    ).values_list("sequence", "document"):
        event = json.loads(document)
        resolution = event.get("payload", {}).get("required_resolution")
        if resolution:
            # the agent's own words, quoted: they are a question or a need, in any case
            who = display_name(event.get("actor")) or "the agent working on it"
            asked[sequence].reason = f"stopped by {who}, who needs: \u201c{resolution}\u201d"


def waiting_on(caller: Caller, membership: Membership) -> _Found:
    """What waits on ``caller`` in one group (``membership``, theirs and active): the entries
    the inbox would list for that group, for the lists' "waiting on me" filter."""
    log = getattr(membership.group, "log", None)
    ref = GroupRef(
        membership.group_id,
        membership.group.name,
        tuple(membership.roles),
        log.head_sequence if log else 0,
    )
    # the lists filter on ids: when each wait began is not read
    return _collect(caller, ref, membership.to_state(), _now(), with_times=False)
