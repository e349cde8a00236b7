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

from apps.ledger import preview
from apps.ledger.models import Event
from apps.ledger.write_path import Caller
from apps.work.models import Mission, MissionStatus, WorkItem
from missionweave.protocol import states as S
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.memberships import Membership as MembershipState
from missionweave.protocol.timefmt import parse_timestamp
from missionweave.protocol.work.checks import approvals_required
from missionweave.protocol.work.items import Offer
from missionweave.protocol.work.items import WorkItem as WorkItemState

from .timeline import event_family
from .work_item_cards import Execution, execution_of

#: the group page shows this many missions, newest first
MISSIONS_SHOWN = 50
#: event families whose events change what the work sections show (used by the page script)
LIVE_FAMILIES = ("work", "mission", "approval", "lease", "evidence", "membership")
#: the WorkItem page also follows usage reconciled from an offline buffer (R11.5-12), whose
#: event is an extension type (``budgets.USAGE_RECORDED``)
ITEM_LIVE_FAMILIES = (*LIVE_FAMILIES, "ext")
#: the command a page's approval form submits (R10.2-06)
GRANT_EXECUTION = "approval.grant_execution"
#: the mission commands a group page offers (R10.2-16, R10.2-18), whatever the mission
MISSION_COMMANDS = ("mission.approve", "mission.cancel")


@dataclass(frozen=True)
class Viewer:
    """Who looks at the page, and which of the page's mission commands the command table's
    roles let them issue (``preview.permitted``): that decides which forms they see, and the
    write path checks it all again when they submit."""

    caller: Caller
    may: frozenset[str]

    @property
    def principal(self) -> str:
        return self.caller.principal

    @property
    def may_approve_missions(self) -> bool:
        return "mission.approve" in self.may

    @property
    def may_end_missions(self) -> bool:
        return "mission.cancel" in self.may


def viewer_of(caller: Caller, membership: MembershipState) -> Viewer:
    """The viewer whose active ``membership`` the page has read (``access_membership``)."""
    return Viewer(caller, preview.permitted_by(caller, membership, MISSION_COMMANDS))


def grant_body(item: WorkItemState) -> dict[str, Any]:
    """What the approval form submits for ``item``: the revision the page shows."""
    return {"work_item": item.id, "contract_revision": item.revision, "comment": ""}


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
    #: while the item waits for approval: why the write path would refuse the viewer's grant
    #: (``None``: it would accept it); not asked of items that are not waiting
    approval_refusal: ProtocolError | None = None

    @property
    def approvals_required(self) -> int:
        """Distinct mission_owner grants ``work.start`` needs for this revision (0: no gate)."""
        return approvals_required(self.item)

    @property
    def has_approval_gate(self) -> bool:
        return self.approvals_required > 0

    @property
    def waiting_for_approval(self) -> bool:
        return is_waiting_for_approval(self.item)

    @property
    def approved_by_viewer(self) -> bool:
        return self.viewer.principal in self.item.approvals

    @property
    def shows_approval_form(self) -> bool:
        """The item asks for approvals and the protocol core would take this viewer's."""
        return self.waiting_for_approval and self.approval_refusal is None

    @property
    def asked_by_viewer(self) -> bool:
        """A mission owner who asked for the item is refused as SELF_APPROVAL (R10.2-06)."""
        refusal = self.approval_refusal
        return refusal is not None and refusal.code == ErrorCode.SELF_APPROVAL

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
        """R10.2-16, wire§9: as the command table's roles allow (a human mission_owner)."""
        return self.is_active and self.viewer.may_approve_missions

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


def is_waiting_for_approval(item: WorkItemState) -> bool:
    """Queued, gated (R10.2-06), and short of grants for the current revision: the items a
    page asks mission owners to approve (a further grant would be accepted, but is not
    asked for)."""
    needed = approvals_required(item)
    return item.state == S.QUEUED and needed > 0 and len(item.approvals) < needed


def _approval_refusal(group_id: str, item: WorkItemState, viewer: Viewer) -> ProtocolError | None:
    if not is_waiting_for_approval(item):
        return None
    return preview.refusal(viewer.caller, group_id, GRANT_EXECUTION, grant_body(item))


def _states_of(group_id: str, ids: set[str]) -> dict[str, str]:
    if not ids:
        return {}
    return dict(
        WorkItem.objects.filter(group_id=group_id, work_item_id__in=ids).values_list(
            "work_item_id", "state"
        )
    )


def _views(
    group_id: str,
    items: list[WorkItemState],
    viewer: Viewer,
    known: dict[str, str],
    *,
    with_approval: bool = False,
) -> list[WorkItemView]:
    """Wrap ``items``, reading the states of dependencies that ``known`` does not hold;
    ``with_approval`` previews the viewer's grant of each item waiting for approval (a few
    reads each, so only for the sections that show the form)."""
    missing = {dep for item in items for dep in item.depends_on if dep not in known}
    states = {**known, **_states_of(group_id, missing)}
    return [
        WorkItemView(
            item=item,
            dependencies=tuple(Dependency(dep, states.get(dep)) for dep in item.depends_on),
            viewer=viewer,
            approval_refusal=_approval_refusal(group_id, item, viewer) if with_approval else None,
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
    items = [item for item in (row.to_state() for row in rows) if is_waiting_for_approval(item)]
    return _views(group_id, items, viewer, {}, with_approval=True)


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
    view = _views(group_id, [item], viewer, {}, with_approval=True)[0]
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
