"""Reads behind the People screens (issue 37 §3): each person of a group as a card — their
roles in words, what waits on them now (execution approvals they may grant, R10.2-06; reviews
they may do, R13.2-03; missions they may give final approval to, R10.2-16; what was asked of
them by name, issue 36 §4) and their last decision — and a person's page with the decisions
they took in the group, paged through the log.

Who may act is the protocol core's answer, never decided here: ``asks.approvers`` and
``asks.reviewers`` (the questions ``work.ask`` asks of each member) and
``preview.permitted_by`` for a mission's final approval, each against every member's
membership at once, so the group's waiting WorkItems are read once for all the people.

Every read is a fixed number of indexed queries whatever the number of people, WorkItems or
events: the group's people from the membership projection; the queued, gated WorkItems and
the submitted ones, the oldest :data:`WAITING_READ` of each (a card says when there are
more); the ready missions as the inbox reads them; the newest :data:`RECENT_DECISIONS`
events of each decision type for the cards' last decision; and a person's decisions through
the Timeline's bounded "who" search (``timeline_reads``: at most ``SCAN_LIMIT`` events a
page, saying which it searched).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from django.urls import reverse
from django.utils import timezone

from apps.ledger import preview
from apps.ledger.models import Event
from apps.ledger.write_path import Caller
from apps.registry.models import Membership
from apps.work.models import WorkItem
from missionweave.protocol import states as S
from missionweave.protocol.memberships import Membership as MembershipState
from missionweave.protocol.work import asks
from missionweave.protocol.work.items import WorkItem as WorkItemState
from missionweave.wording import counted

from . import event_words, timeline_reads
from .event_lookup import lookup_for
from .inbox import APPROVE_MISSION, ready_missions
from .inbox_entries import GroupRef, relative_text
from .role_words import one_holder, words
from .work import is_waiting_for_approval

#: what each decision a person takes is, as a short phrase (the log's event types)
DECISIONS: dict[str, str] = {
    "approval.execution_granted": "Approved an execution",
    "approval.execution_refused": "Refused an execution",
    "evidence.recorded": "Recorded a verdict",
    "work.result_accepted": "Accepted a result",
    "work.failed": "Sent a result back",
    "work.cancelled": "Cancelled a WorkItem",
    "mission.approved": "Approved a mission",
    "mission.changes_requested": "Asked for changes",
    "mission.cancelled": "Cancelled a mission",
    "mission.failed": "Failed a mission",
}
DECISION_TYPES = frozenset(DECISIONS)
#: the newest events of each decision type read for the cards' "last decision"
RECENT_DECISIONS = 200
#: the oldest waiting WorkItems of each kind read for what waits on people
WAITING_READ = 300
#: decisions a page of a person's page lists
DECIDED_PAGE = 25
#: what each kind of wait asks of the person
WAIT_WORDS = {
    "approval": "Approve or refuse the execution of",
    "review": "Review the result of",
    "mission": "Give final approval to the mission",
}
#: the event families that change a card (the page script asks again on these)
LIVE_FAMILIES = ("work", "approval", "review", "evidence", "mission", "membership")


def _now() -> datetime:
    """The clock ages are read against (a seam for tests)."""
    return timezone.now()


@dataclass(frozen=True)
class Waiting:
    """One decision that waits on the person now, with the screen where they take it."""

    kind: str  # "approval", "review" or "mission"
    title: str
    group_id: str
    work_item: str = ""
    mission: str = ""
    #: who asked it of the person by name (``work.ask``), and their note
    asked_by: str = ""
    note: str = ""

    @property
    def url(self) -> str:
        """The screen where the person takes it. Worked out only for the entries a page
        lists: the cards count thousands (a thousand ready missions for each mission owner
        cost the People page ~60 ms of ``reverse`` when every entry had its address)."""
        if self.kind == "mission":
            return reverse("dashboard:mission-final-approval", args=[self.group_id, self.mission])
        return reverse(f"dashboard:{self.kind}", args=[self.group_id, self.work_item])

    @property
    def what(self) -> str:
        return WAIT_WORDS[self.kind]


@dataclass(frozen=True)
class LastDecision:
    sequence: int
    recorded_at: datetime
    kind: str
    words: str

    @property
    def when_text(self) -> str:
        return relative_text(self.recorded_at, _now())


@dataclass
class PersonCardView:
    """One person of the group, as their card shows them."""

    principal: str
    roles: tuple[str, ...]
    waiting: list[Waiting] = field(default_factory=list)
    #: more WorkItems wait in the group than were read: the count is a lower bound
    capped: bool = False
    last: LastDecision | None = None

    @property
    def username(self) -> str:
        return self.principal.removeprefix("user:")

    @property
    def roles_text(self) -> str:
        """ "a mission owner and a reviewer"."""
        return words([one_holder(role) for role in self.roles]) or "a member without a role"

    def _of(self, kind: str) -> list[Waiting]:
        return [w for w in self.waiting if w.kind == kind]

    @property
    def approvals(self) -> list[Waiting]:
        return self._of("approval")

    @property
    def reviews(self) -> list[Waiting]:
        return self._of("review")

    @property
    def missions(self) -> list[Waiting]:
        return self._of("mission")

    @property
    def asked(self) -> list[Waiting]:
        return [w for w in self.waiting if w.asked_by]

    @property
    def count_words(self) -> list[tuple[str, int]]:
        """How many of each wait, in words ("2 execution approvals")."""
        pairs = [
            ("execution approval", len(self.approvals)),
            ("review", len(self.reviews)),
            ("final approval", len(self.missions)),
        ]
        return [(counted(n, label), n) for label, n in pairs if n]

    @property
    def technical(self) -> list[tuple[str, str]]:
        return [("principal", self.principal)]


# --- reads ---------------------------------------------------------------------------------


def human_members(group_id: str, *, only: str | None = None) -> list[Membership]:
    """The group's active members who are people (or the one ``only`` names), by principal."""
    rows = Membership.objects.filter(group_id=group_id, active=True, principal__startswith="user:")
    if only is not None:
        rows = rows.filter(principal=only)
    return list(rows.order_by("principal"))


def cards(group_id: str, *, only: str | None = None) -> list[PersonCardView]:
    """Every person's card (or the one ``only`` names: ``user:<username>``)."""
    members = human_members(group_id, only=only)
    views = {m.principal: PersonCardView(m.principal, tuple(m.roles)) for m in members}
    if not views:
        return []
    capped = _fill_waiting(views, group_id, [m.to_state() for m in members])
    for view in views.values():
        view.capped = capped
    for principal, last in last_decisions(group_id, views).items():
        views[principal].last = last
    return list(views.values())


def _items(group_id: str, **filters: Any) -> tuple[list[WorkItemState], bool]:
    """The oldest :data:`WAITING_READ` WorkItems of the group matching ``filters``, and
    whether there were more."""
    rows = WorkItem.objects.filter(group_id=group_id, **filters).order_by("id")
    datas = list(rows.values_list("data", flat=True)[: WAITING_READ + 1])
    return [WorkItemState.from_dict(d) for d in datas[:WAITING_READ]], len(datas) > WAITING_READ


def _asker(item: WorkItemState, principal: str, wanted: str) -> tuple[str, str]:
    """Who last asked ``principal`` by name for ``wanted`` on the item (and their note)."""
    found = [ask for ask in asks.asked_of(item, principal) if ask["for"] == wanted]
    return (str(found[-1]["by"]), str(found[-1].get("note") or "")) if found else ("", "")


def _fill_waiting(
    views: dict[str, PersonCardView], group_id: str, members: Sequence[MembershipState]
) -> bool:
    """What waits on each person; ``True`` when more WorkItems wait than were read."""
    gated, more_gated = _items(
        group_id, state=S.QUEUED, data__contract__risk__requires_execution_approval=True
    )
    submitted, more_submitted = _items(group_id, state=S.SUBMITTED)
    waits = (
        ("approval", [i for i in gated if is_waiting_for_approval(i)], asks.approvers),
        ("review", submitted, asks.reviewers),
    )
    wanted_for = {"approval": asks.EXECUTION_APPROVAL, "review": asks.REVIEW}
    for kind, items, who_may in waits:
        for item in items:
            for principal in who_may(item, members):
                by, note = _asker(item, principal, wanted_for[kind])
                views[principal].waiting.append(
                    Waiting(
                        kind,
                        str(item.contract.get("goal", "")) or item.id,
                        group_id,
                        work_item=item.id,
                        mission=item.mission,
                        asked_by=by,
                        note=note,
                    )
                )
    approvers = [
        m.principal
        for m in members
        if APPROVE_MISSION in preview.permitted_by(_caller(m.principal), m, (APPROVE_MISSION,))
    ]
    if approvers:
        # the inbox's own read of the missions ready for final approval (R10.2-22)
        for entry in ready_missions(GroupRef(group_id, "", (), 0)):
            for principal in approvers:
                views[principal].waiting.append(
                    Waiting(
                        "mission", entry.title or entry.mission, group_id, mission=entry.mission
                    )
                )
    return more_gated or more_submitted


def _caller(principal: str) -> Caller:
    return Caller(principal=principal, kind="user")


def last_decisions(group_id: str, principals: Iterable[str]) -> dict[str, LastDecision]:
    """Each person's newest decision among the group's newest of each decision type (one
    short read of ``event (group, type, sequence)`` per type, then the few documents)."""
    wanted = set(principals)
    newest: dict[str, int] = {}
    for type_ in sorted(DECISION_TYPES):
        rows = (
            Event.objects.filter(group_id=group_id, type=type_)
            .order_by("-sequence")
            .values_list("sequence", "actor")[:RECENT_DECISIONS]
        )
        for sequence, actor in rows:
            if actor in wanted and sequence > newest.get(actor, 0):
                newest[actor] = sequence
    if not newest:
        return {}
    rows = Event.objects.filter(group_id=group_id, sequence__in=newest.values())
    found = {
        sequence: (recorded_at, json.loads(text))
        for sequence, recorded_at, text in rows.values_list("sequence", "recorded_at", "document")
    }
    lookup = lookup_for(group_id, [document for _at, document in found.values()])
    last = {}
    for actor, sequence in newest.items():
        if sequence not in found:
            continue
        recorded_at, document = found[sequence]
        last[actor] = LastDecision(
            sequence=sequence,
            recorded_at=recorded_at,
            kind=DECISIONS.get(str(document.get("type")), ""),
            words=event_words.describe(document, lookup),
        )
    return last


# --- a person's decisions ------------------------------------------------------------------


@dataclass(frozen=True)
class Decided:
    """One decision on the person's page: the Timeline's line, and where it was taken."""

    line: timeline_reads.Line
    url: str
    link_text: str

    @property
    def what(self) -> str:
        return DECISIONS.get(str(self.line.checked.document.get("type")), self.line.kind)

    @property
    def technical(self) -> list[tuple[str, str]]:
        document = self.line.checked.document
        return [("event", f"#{document.get('sequence')} {document.get('type')}")]


def read_paging(group_id: str, principal: str, query: Mapping[str, str]) -> timeline_reads.Filters:
    """The Timeline's filters for ``principal``'s decisions, with ``?before=``/``?after=``."""
    filters = timeline_reads.read_filters(
        group_id,
        {"who": principal, "before": query.get("before", ""), "after": query.get("after", "")},
    )
    return replace(filters, types=DECISION_TYPES)


def decided_by(
    group_id: str, filters: timeline_reads.Filters
) -> tuple[timeline_reads.Page, list[Decided]]:
    """A page of the person's decisions, newest first: the Timeline's bounded "who" search
    (at most ``SCAN_LIMIT`` events examined, the range said), each with a link to its screen."""
    page = timeline_reads.timeline_page(group_id, filters, page_size=DECIDED_PAGE)
    return page, [_decided(group_id, line) for line in page.lines]


def _decided(group_id: str, line: timeline_reads.Line) -> Decided:
    payload = line.checked.document.get("payload") or {}
    item, mission = payload.get("work_item"), payload.get("mission")
    if isinstance(item, str) and item:
        return Decided(line, reverse("dashboard:work-item", args=[group_id, item]), "the WorkItem")
    if isinstance(mission, str) and mission:
        return Decided(line, reverse("dashboard:mission", args=[group_id, mission]), "the mission")
    return Decided(line, "", "")
