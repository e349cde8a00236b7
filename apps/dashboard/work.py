"""Reads behind the work sections: missions with their WorkItems, the items waiting for an
execution approval, and one WorkItem's page.

Everything comes from the projections (``Mission``, ``WorkItem``) that the write path keeps in
the same transaction as the events, plus the events themselves for a WorkItem's history and
conversation. The callers check membership first (non-members get 404).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from apps.ledger.models import Event
from apps.work.models import Mission, MissionStatus, WorkItem
from missionweave.protocol import states as S
from missionweave.protocol.timefmt import parse_timestamp
from missionweave.protocol.work.checks import approvals_required
from missionweave.protocol.workitems import Offer
from missionweave.protocol.workitems import WorkItem as WorkItemState

from .execution import Execution, execution_of
from .timeline import event_family

#: the group page shows this many missions, newest first
MISSIONS_SHOWN = 50
#: event families whose events change what the work sections show (used by the page script)
LIVE_FAMILIES = ("work", "mission", "approval", "lease", "evidence", "membership")
#: the WorkItem page also follows usage reconciled from an offline buffer (R11.5-12), whose
#: event is an extension type (``workitems.USAGE_RECORDED``)
ITEM_LIVE_FAMILIES = (*LIVE_FAMILIES, "ext")


@dataclass(frozen=True)
class Viewer:
    """Who looks at the page: what they may do there decides which forms they see."""

    principal: str
    roles: tuple[str, ...]

    @property
    def is_mission_owner(self) -> bool:
        return "mission_owner" in self.roles

    @property
    def may_end_missions(self) -> bool:
        """``mission.cancel``'s roles (wire§9); the write path checks them again."""
        return bool({"mission_owner", "coordinator"} & set(self.roles))


@dataclass(frozen=True)
class Dependency:
    work_item: str
    state: str | None  # None: not a WorkItem of this group (yet)


@dataclass(frozen=True)
class WorkItemView:
    """A WorkItem as one viewer sees it, with the states of the items it depends on."""

    item: WorkItemState
    dependencies: tuple[Dependency, ...]
    viewer: Viewer

    @property
    def approvals_required(self) -> int:
        """Distinct mission_owner grants ``work.start`` needs for this revision (0: no gate)."""
        return approvals_required(self.item)

    @property
    def has_approval_gate(self) -> bool:
        return self.approvals_required > 0

    @property
    def waiting_for_approval(self) -> bool:
        """Queued, gated (R10.2-06), and short of grants for the current revision."""
        return (
            self.item.state == S.QUEUED
            and self.has_approval_gate
            and len(self.item.approvals) < self.approvals_required
        )

    @property
    def approved_by_viewer(self) -> bool:
        return self.viewer.principal in self.item.approvals

    @property
    def asked_by_viewer(self) -> bool:
        """The proposer or authoriser may not approve their own request (SELF_APPROVAL)."""
        return self.viewer.principal in (self.item.authorized_by, self.item.proposed_by)

    @property
    def shows_approval_form(self) -> bool:
        return (
            self.viewer.is_mission_owner
            and self.waiting_for_approval
            and not self.approved_by_viewer
            and not self.asked_by_viewer
        )

    @property
    def current_offers(self) -> tuple[Offer, ...]:
        """The offers of the latest round (earlier rounds are ``superseded``)."""
        return tuple(offer for offer in self.item.offers if offer.status != "superseded")

    @property
    def earlier_offers(self) -> int:
        return len(self.item.offers) - len(self.current_offers)

    @property
    def risk(self) -> dict[str, Any]:
        return dict(self.item.contract.get("risk", {}))


@dataclass(frozen=True)
class MissionWork:
    mission: Mission
    items: tuple[WorkItemView, ...]
    viewer: Viewer

    @property
    def is_active(self) -> bool:
        return self.mission.state == MissionStatus.ACTIVE

    @property
    def shows_approve_form(self) -> bool:
        """R10.2-16, wire§9: only a mission_owner approves (people are always human here)."""
        return self.is_active and self.viewer.is_mission_owner

    @property
    def shows_cancel_form(self) -> bool:
        return self.is_active and self.viewer.may_end_missions

    @property
    def unfinished(self) -> tuple[str, ...]:
        """WorkItems that keep the mission from being approved (R10.2-22)."""
        return tuple(view.item.id for view in self.items if view.item.state in S.UNFINISHED)


@dataclass(frozen=True)
class GroupWork:
    missions: tuple[MissionWork, ...]
    more_missions: int  # missions older than the ones shown
    waiting: tuple[WorkItemView, ...]


def _states_of(group_id: str, ids: set[str]) -> dict[str, str]:
    if not ids:
        return {}
    return dict(
        WorkItem.objects.filter(group_id=group_id, work_item_id__in=ids).values_list(
            "work_item_id", "state"
        )
    )


def _views(
    group_id: str, items: list[WorkItemState], viewer: Viewer, known: dict[str, str]
) -> list[WorkItemView]:
    """Wrap ``items``, reading the states of dependencies that ``known`` does not hold."""
    missing = {dep for item in items for dep in item.depends_on if dep not in known}
    states = {**known, **_states_of(group_id, missing)}
    return [
        WorkItemView(
            item=item,
            dependencies=tuple(Dependency(dep, states.get(dep)) for dep in item.depends_on),
            viewer=viewer,
        )
        for item in items
    ]


def group_work(group_id: str, *, viewer: Viewer) -> GroupWork:
    """The newest missions with their WorkItems (in authorisation order) and the approval queue."""
    total = Mission.objects.filter(group_id=group_id).count()
    missions = list(
        Mission.objects.filter(group_id=group_id).order_by("-created_sequence")[:MISSIONS_SHOWN]
    )
    rows = WorkItem.objects.filter(
        group_id=group_id, mission__in=[mission.mission_id for mission in missions]
    )
    items = {row.work_item_id: row.to_state() for row in rows}
    views = {
        view.item.id: view
        for view in _views(
            group_id, list(items.values()), viewer, {i: s.state for i, s in items.items()}
        )
    }
    return GroupWork(
        missions=tuple(
            MissionWork(
                mission,
                tuple(views[item] for item in mission.work_items if item in views),
                viewer,
            )
            for mission in missions
        ),
        more_missions=max(total - len(missions), 0),
        waiting=tuple(waiting_for_approval(group_id, viewer=viewer)),
    )


def waiting_for_approval(group_id: str, *, viewer: Viewer) -> list[WorkItemView]:
    """Queued WorkItems whose contract asks for execution approval and that have fewer grants
    than it requires for the current revision (R10.2-06), oldest authorisation first."""
    rows = WorkItem.objects.filter(
        group_id=group_id,
        state=S.QUEUED,
        data__contract__risk__requires_execution_approval=True,
    ).order_by("id")
    views = _views(group_id, [row.to_state() for row in rows], viewer, {})
    return [view for view in views if view.waiting_for_approval]


# --- one WorkItem ------------------------------------------------------------------------


@dataclass(frozen=True)
class HistoryEntry:
    sequence: int
    type: str
    actor: str
    recorded_at: datetime | None

    @property
    def family(self) -> str:
        return event_family(self.type)


@dataclass(frozen=True)
class Message:
    """A ``work.message_posted`` event: the conversation about a WorkItem (R10.2-02)."""

    sequence: int
    message: str  # the id of the command that posted it
    actor: str
    recorded_at: datetime | None
    text: str
    essential: bool
    in_reply_to: str | None
    open: bool  # an essential question nobody has answered yet


@dataclass(frozen=True)
class WorkItemPage:
    view: WorkItemView
    mission: Mission | None
    needed_by: tuple[Dependency, ...]
    execution: Execution  # leases, budgets up the ancestry, late results, retries
    history: tuple[HistoryEntry, ...]  # newest first
    messages: tuple[Message, ...]  # oldest first

    @property
    def item(self) -> WorkItemState:
        return self.view.item


def _recorded_at(document: dict[str, Any]) -> datetime | None:
    try:
        return parse_timestamp(document.get("recorded_at"))
    except ValueError:
        return None


def work_item_page(group_id: str, work_item_id: str, *, viewer: Viewer) -> WorkItemPage | None:
    """Everything the WorkItem page shows, or ``None`` when the group has no such item.

    History and conversation come from the item's recent history (the projection keeps its
    latest ``HISTORY_LIMIT`` events); their documents are read from the log by sequence.
    """
    row = WorkItem.objects.filter(group_id=group_id, work_item_id=work_item_id).first()
    if row is None:
        return None
    item = row.to_state()
    view = _views(group_id, [item], viewer, {})[0]
    # filtered here, not with a JSON ``__contains`` lookup: SQLite (the demo) has none
    dependents = [
        (other, state)
        for other, state, depends_on in WorkItem.objects.filter(group_id=group_id)
        .order_by("id")
        .values_list("work_item_id", "state", "data__depends_on")
        if item.id in (depends_on or ())
    ]
    sequences = [sequence for sequence, _type, _actor in item.history]
    documents = {
        sequence: json.loads(text)
        for sequence, text in Event.objects.filter(
            group_id=group_id, sequence__in=sequences
        ).values_list("sequence", "document")
    }
    history = tuple(
        HistoryEntry(sequence, type_, actor, _recorded_at(documents.get(sequence, {})))
        for sequence, type_, actor in reversed(item.history)
    )
    messages = []
    for sequence, type_, actor in item.history:
        if type_ != "work.message_posted" or sequence not in documents:
            continue
        document = documents[sequence]
        payload = document.get("payload", {})
        messages.append(
            Message(
                sequence=sequence,
                message=str(payload.get("message", "")),
                actor=actor,
                recorded_at=_recorded_at(document),
                text=str(payload.get("text", "")),
                essential=bool(payload.get("essential")),
                in_reply_to=payload.get("in_reply_to"),
                open=payload.get("message") in item.open_questions,
            )
        )
    return WorkItemPage(
        view=view,
        mission=Mission.objects.filter(group_id=group_id, mission_id=item.mission).first(),
        needed_by=tuple(Dependency(other, state) for other, state in dependents),
        execution=execution_of(group_id, item),
        history=history,
        messages=tuple(messages),
    )
