"""Reads behind the work sections: the items waiting for an execution approval (the group
page's approval queue) and one WorkItem's page; the mission and WorkItem lists are
``listings``.

Everything comes from the projections (``Mission``, ``WorkItem``) that the write path keeps in
the same transaction as the events, plus the events themselves for a WorkItem's history and
conversation. The callers check membership first (non-members get 404).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import BigIntegerField, F, Func, IntegerField, Q, QuerySet, Value
from django.db.models.fields.json import KT
from django.db.models.functions import Cast, Coalesce
from django.db.models.sql.compiler import SQLCompiler

from apps.ledger import preview
from apps.ledger.models import Event
from apps.ledger.projections import load_view
from apps.ledger.write_path import Caller
from apps.work.models import Mission, WorkItem
from missionweave.protocol import states as S
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.memberships import Membership as MembershipState
from missionweave.protocol.memberships import membership_key
from missionweave.protocol.timefmt import parse_timestamp
from missionweave.protocol.work.checks import approvals_required
from missionweave.protocol.work.items import Offer, work_item_key
from missionweave.protocol.work.items import WorkItem as WorkItemState

from .artifact_facts import ArtifactFacts, artifact_facts, contract_inputs
from .attempts import AttemptsCard, attempts_card
from .child_missions import (
    child_key,
    final_approval_url,
    readable_groups,
    ready_children,
    running_child,
)
from .event_lookup import words_for
from .item_names import titles_of
from .timeline import event_family
from .work_item_cards import Execution, execution_of

#: the group page's approval queue previews this many waiting items, oldest first
APPROVALS_SHOWN = 10
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


def is_waiting_for_approval(item: WorkItemState) -> bool:
    """Queued, gated (R10.2-06), short of grants for the current revision, and not refused:
    the items a page asks mission owners to approve (a further grant would be accepted, but
    is not asked for). A refused revision waits for a corrected contract, not for approvals
    (issue 34 §4): nobody decides it again."""
    needed = approvals_required(item)
    return (
        item.state == S.QUEUED
        and needed > 0
        and len(item.approvals) < needed
        and item.refusal is None
    )


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


@dataclass(frozen=True)
class ApprovalQueue:
    """The first waiting items of a group, with the viewer's previewed grant, and how many wait."""

    views: tuple[WorkItemView, ...]
    total: int

    @property
    def more(self) -> int:
        """Waiting items the queue does not show."""
        return self.total - len(self.views)


class _JSONArrayLength(Func):
    """The number of elements of a JSON array (``None`` for a missing key)."""

    function = "jsonb_array_length"
    output_field = IntegerField()

    def as_sqlite(
        self, compiler: SQLCompiler, connection: BaseDatabaseWrapper, **extra_context: Any
    ) -> tuple[str, list[Any]]:
        return self.as_sql(compiler, connection, function="json_array_length", **extra_context)


def _waiting_rows(group_id: str) -> QuerySet[WorkItem]:
    """The rows for which :func:`is_waiting_for_approval` holds (R10.2-06), decided in SQL.

    The same three questions, asked of the row so that a count reads no contract: queued,
    gated, and fewer grants than ``approvals_required`` (1 when absent, as
    ``approvals_required`` defaults it; contract validation keeps it an integer, so the cast
    cannot fail). In a 100,000-item group with 10,000 waiting, reading each candidate's
    contract into Python took ~4 s. On PostgreSQL the partial index
    ``work_item_waiting_approval`` (migration ``0008``) holds exactly these rows, so the count
    decodes no contract and a page reads only its own rows (~25 ms for 10,000 waiting). The
    index's predicate repeats these expressions: change one, change the other
    (``tests/dashboard/test_work_reads.py`` checks the plans, and that this agrees with
    ``is_waiting_for_approval``). "Not refused" (issue 34 §4) is the one condition outside the
    predicate: it is checked on the index's own rows, of which refused ones are few.
    """
    return (
        WorkItem.objects.filter(
            group_id=group_id,
            state=S.QUEUED,
            data__contract__risk__requires_execution_approval=True,
        )
        .alias(
            granted=_JSONArrayLength("data__approvals"),
            needed=Coalesce(
                Cast(KT("data__contract__risk__approvals_required"), BigIntegerField()), Value(1)
            ),
        )
        .filter(granted__lt=F("needed"))
        # a refused revision waits for a corrected contract (JSON null, or no key at all)
        .filter(Q(data__refusal=None) | Q(data__refusal__isnull=True))
    )


def grant_refusals(
    caller: Caller,
    group_id: str,
    items: Sequence[WorkItemState],
    *,
    membership: MembershipState | None,
) -> list[ProtocolError | None]:
    """Why the write path would refuse ``caller``'s execution grant of each of ``items``
    (``None``: it would take it), R10.2-06: one batch (``preview.refusals``) judged against
    the items as the page read them, rather than a preview, and its reads, per item.
    ``membership`` is the caller's, as the page read it."""
    return preview.refusals(
        caller,
        group_id,
        GRANT_EXECUTION,
        [grant_body(item) for item in items],
        membership=membership,
        loaded={work_item_key(item.id): item for item in items},
    )


def approval_queue(group_id: str, *, viewer: Viewer, shown: int = APPROVALS_SHOWN) -> ApprovalQueue:
    """How many WorkItems of the group wait for execution approval (R10.2-06), and the
    oldest ``shown`` of them (in authorisation order), each with the viewer's grant
    previewed.

    Bounded whatever the queue's length: the count, the shown rows, the states of their
    dependencies, the viewer's membership and one batch of previews (whose clock and head it
    reads once) — a fixed number of queries, where :func:`waiting_for_approval` reads every
    waiting item and previews each one with its own reads.
    """
    waiting = _waiting_rows(group_id)
    total = waiting.count()
    items = [
        WorkItemState.from_dict(data)
        for data in waiting.order_by("id").values_list("data", flat=True)[:shown]
    ]
    if not items:
        return ApprovalQueue((), total)
    key = membership_key(viewer.principal)
    refusals = grant_refusals(
        viewer.caller, group_id, items, membership=load_view(group_id, [key])[key]
    )
    views = _views(group_id, items, viewer, {})
    return ApprovalQueue(
        tuple(
            replace(view, approval_refusal=refusal)
            for view, refusal in zip(views, refusals, strict=True)
        ),
        total,
    )


# --- one WorkItem ------------------------------------------------------------------------


@dataclass(frozen=True)
class HistoryEntry:
    sequence: int
    type: str
    actor: str
    recorded_at: datetime | None
    words: str = ""  # the event in a sentence (event_words)

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
    #: a reply to an open question: whether it settled it (R10.1-04); ``None`` otherwise
    resolves: bool | None = None


def _child_approval_url(group_id: str, item: WorkItemState, viewer: str) -> str:
    """The final approval of the running child mission ``item`` is blocked on, once that
    child's work is all finished and the viewer may read it (R10.2-16, R10.4-06)."""
    child = running_child(item.child)
    if item.state != S.BLOCKED or child is None:
        return ""
    ready = ready_children([child], readable_groups(group_id, [child], viewer))
    return final_approval_url(child) if child_key(child) in ready else ""


@dataclass(frozen=True)
class WorkItemPage:
    view: WorkItemView
    mission: Mission | None
    needed_by: tuple[Dependency, ...]
    execution: Execution  # leases, budgets up the ancestry, late results, retries
    history: tuple[HistoryEntry, ...]  # newest first
    messages: tuple[Message, ...]  # oldest first
    #: every artifact the page names (inputs, checkpoint, late results) by digest
    facts: dict[str, ArtifactFacts] = field(default_factory=dict)
    #: offers, leases and attempts with how each ended (issue 37 §4)
    attempts: AttemptsCard | None = None
    #: the goal of each WorkItem the page links to (dependencies, dependents, ended ones),
    #: by id: people know WorkItems by their goals
    related_titles: dict[str, str] = field(default_factory=dict)
    #: blocked on a child mission whose work is all done: its final approval, the one step
    #: left (R10.2-16); "" otherwise
    child_approval_url: str = ""

    @property
    def inputs(self) -> list[ArtifactFacts]:
        """The contract's inputs by what they are (issue 34 §6), in contract order."""
        digests, _names = contract_inputs(self.item.contract)
        return [self.facts[digest] for digest in digests if digest in self.facts]

    @property
    def item(self) -> WorkItemState:
        return self.view.item

    @property
    def technical(self) -> tuple[tuple[str, str], ...]:
        """The protocol's words for the item, for its collapsed technical details (a person
        reads the names and the revision above them)."""
        item = self.item
        return (
            ("work item", item.id),
            ("owner", item.owner or "none"),
            ("ownership epoch", str(item.ownership_epoch)),
            ("authorised by", item.authorized_by),
            ("contract schema", str(item.contract.get("schema", ""))),
        )

    @property
    def principals(self) -> set[str]:
        """Everyone the page names, looked up in one go (``names.prime``)."""
        item = self.item
        named = {item.owner, item.authorized_by, item.proposed_by, *item.former_owners}
        named |= set(item.approvals) | {offer.worker for offer in item.offers}
        named |= {entry.actor for entry in self.history}
        named |= self.attempts.principals if self.attempts is not None else set()
        named |= {str(entry.get("principal")) for entry in item.approval_log}
        if item.refusal:
            named.add(str(item.refusal.get("principal")))
        return {principal for principal in named if principal}


def _recorded_at(document: dict[str, Any]) -> datetime | None:
    try:
        return parse_timestamp(document.get("recorded_at"))
    except ValueError:
        return None


def _needed_by(group_id: str, work_item_id: str) -> list[tuple[str, str]]:
    """The group's WorkItems that depend on ``work_item_id``, with their states, in
    authorisation order.

    On PostgreSQL a JSON containment lookup, answered by the GIN index
    ``work_item_depends_on`` (migration ``0008``): ~ms where reading every item's
    ``depends_on`` took ~2 s at 100,000 items. SQLite (the demo's embedded database, with
    small groups) has no containment lookup, so there the items are filtered here.
    """
    rows = WorkItem.objects.filter(group_id=group_id).order_by("id")
    if connections[rows.db].features.supports_json_field_contains:
        return list(
            rows.filter(data__depends_on__contains=[work_item_id]).values_list(
                "work_item_id", "state"
            )
        )
    return [
        (other, state)
        for other, state, depends_on in rows.values_list(
            "work_item_id", "state", "data__depends_on"
        )
        if work_item_id in (depends_on or ())
    ]


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
    dependents = _needed_by(group_id, item.id)
    related = {
        *item.depends_on,
        *(other for other, _state in dependents),
        *(str(ended.get("dependency")) for ended in item.ended_dependencies or ()),
    }
    related_titles = titles_of(group_id, related, limit=None)
    sequences = [sequence for sequence, _type, _actor in item.history]
    documents = {
        sequence: json.loads(text)
        for sequence, text in Event.objects.filter(
            group_id=group_id, sequence__in=sequences
        ).values_list("sequence", "document")
    }
    said = words_for(group_id, documents, here=item.id)
    history = tuple(
        HistoryEntry(
            sequence,
            type_,
            actor,
            _recorded_at(documents.get(sequence, {})),
            said.get(sequence, ""),
        )
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
                resolves=payload.get("resolves"),
            )
        )
    inputs, input_names = contract_inputs(item.contract)
    named = [*inputs, *((item.last_checkpoint or {}).get("artifacts") or ())]
    named += [digest for late in item.late_result_log for digest in late.get("artifacts", ())]
    facts = artifact_facts(group_id, named, names=input_names)
    return WorkItemPage(
        facts={found.digest: found for found in facts},
        view=view,
        mission=Mission.objects.filter(group_id=group_id, mission_id=item.mission).first(),
        needed_by=tuple(Dependency(other, state) for other, state in dependents),
        related_titles=related_titles,
        execution=execution_of(group_id, item),
        history=history,
        messages=tuple(messages),
        child_approval_url=_child_approval_url(group_id, item, viewer.principal),
        # the item's own events, read above by the sequences its projection lists: complete
        # when they reach back to its authorisation (the projection keeps the latest ones)
        attempts=attempts_card(
            item,
            [documents[sequence] for sequence in sequences if sequence in documents],
            complete=bool(item.history)
            and item.history[0][1] == "work.authorized"
            and len(documents) == len(sequences),
        ),
    )
