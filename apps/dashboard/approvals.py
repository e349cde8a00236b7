"""Reads behind the execution-approval screen: one WorkItem's contract revision as the person
deciding must read it, the decisions already given on it, its start-by deadline and what
happened when that passed, and — when the person may not decide — why, in words.

Whether the person may decide is the write path's question, asked without writing
(``preview.refusal`` for ``approval.grant_execution``, R10.2-06); this module only turns its
refusal into a sentence (the code and the rule go in the page's collapsed technical details).
Refusing takes the same rules as granting (plus a reason), so one preview answers for both
forms. A refused revision is shown once, as the item's ``execution_refused`` says it: who,
why, when, and that it waits for a corrected contract or a cancel (issue 34 §4).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils import timezone

from apps.ledger import preview
from apps.ledger.models import Event
from apps.ledger.write_path import Caller
from apps.registry.models import Membership
from apps.work.models import Mission, WorkItem
from missionweave.protocol import states as S
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.timefmt import parse_timestamp
from missionweave.protocol.work.checks import approvals_required
from missionweave.protocol.work.items import WorkItem as WorkItemState

from .artifact_facts import ArtifactFacts, artifact_facts, contract_inputs
from .names import display_name
from .refusal_words import plain_refusal
from .review_words import roles_text
from .work import GRANT_EXECUTION, grant_body
from .work_item_cards import Countdown, budget_lines

#: the command the screen's second form submits (R10.2-06)
REFUSE_EXECUTION = "approval.refuse_execution"
#: events about the item that the screen shows with their time (read from the log by sequence)
TIMED_EVENTS = frozenset({"work.authorized", "work.reassigned", "work.offer_accepted"})


def _now() -> datetime:
    """The clock the start-by countdown starts from (a seam for tests)."""
    return timezone.now()


def _time(text: object) -> datetime | None:
    try:
        return parse_timestamp(text)
    except (TypeError, ValueError):
        return None


@dataclass(frozen=True)
class Decision:
    """One grant or refusal of an execution, with the person's comment (``approval_log``)."""

    principal: str
    decision: str  # "granted" or "refused"
    comment: str
    revision: int
    sequence: int | None
    recorded_at: str | None  # a wire.md timestamp, as the log recorded it

    @property
    def granted(self) -> bool:
        return self.decision == "granted"


def decisions_of(item: WorkItemState) -> tuple[Decision, ...]:
    """Every decision the projection keeps for ``item``, oldest first."""
    return tuple(
        Decision(
            principal=str(entry.get("principal", "")),
            decision=str(entry.get("decision", "")),
            comment=str(entry.get("comment") or ""),
            revision=int(entry.get("revision") or 0),
            sequence=entry.get("sequence"),
            recorded_at=entry.get("recorded_at"),
        )
        for entry in item.approval_log
    )


@dataclass(frozen=True)
class Reassignment:
    """What the authority did when the owner did not start in time (R11.3-02, R11.5-01)."""

    sequence: int
    reason: str
    from_owner: str | None
    offered_to: str | None
    at: datetime | None


#: why the authority took an item from its owner (``work.reassigned``'s reason), in words
REASSIGN_REASONS = {
    "start_deadline_missed": "not started by its start-by deadline",
    "lease_expired": "its lease ran out",
    "blocked_lease_expired": "blocked for longer than allowed",
    "membership_revoked": "its owner's membership was revoked",
}


@dataclass(frozen=True)
class ApprovalScreen:
    group_id: str
    item: WorkItemState
    mission: Mission | None
    roles: tuple[str, ...]
    principal: str
    #: why the write path would refuse the person's decision now (``None``: it would take it)
    refusal: ProtocolError | None
    decisions: tuple[Decision, ...]
    start_by: Countdown | None
    reassigned: Reassignment | None
    authorized_at: datetime | None
    accepted_at: datetime | None  # when the owner took it (the start window began)
    inputs: tuple[ArtifactFacts, ...] = ()  # the contract's inputs, by their manifest

    @property
    def contract(self) -> dict[str, Any]:
        return self.item.contract

    @property
    def risk(self) -> dict[str, Any]:
        return dict(self.contract.get("risk", {}))

    @property
    def approvals_required(self) -> int:
        return approvals_required(self.item)

    @property
    def gated(self) -> bool:
        return self.approvals_required > 0

    @property
    def approvals(self) -> int:
        return len(self.item.approvals)

    @property
    def quorum_met(self) -> bool:
        return self.gated and self.approvals >= self.approvals_required

    @property
    def current(self) -> tuple[Decision, ...]:
        """Decisions on the revision shown (grants never carry over to a new one)."""
        return tuple(d for d in self.decisions if d.revision == self.item.revision)

    @property
    def current_grants(self) -> tuple[Decision, ...]:
        return tuple(d for d in self.current if d.granted)

    @property
    def earlier(self) -> tuple[Decision, ...]:
        return tuple(d for d in self.decisions if d.revision != self.item.revision)

    @property
    def refused(self) -> Decision | None:
        """The refusal of the revision shown, if any: the item may not start on it."""
        refusal = self.item.refusal
        if not refusal:
            return next((d for d in self.current if not d.granted), None)
        return Decision(
            principal=str(refusal.get("principal", "")),
            decision="refused",
            comment=str(refusal.get("comment") or ""),
            revision=int(refusal.get("revision") or self.item.revision),
            sequence=refusal.get("sequence"),
            recorded_at=refusal.get("recorded_at"),
        )

    @property
    def execution_refused(self) -> bool:
        """The revision shown was refused and the item still waits on it (R10.2-06): it
        waits for a corrected contract or a cancel, not for approval."""
        return self.item.state == S.QUEUED and self.refused is not None

    @property
    def may_decide(self) -> bool:
        return self.item.state == S.QUEUED and self.gated and self.refusal is None

    @property
    def why_not(self) -> str:
        """The refusal in words ("" when the person may decide)."""
        if self.refusal is None:
            return ""
        return why_not(
            self.refusal, item=self.item, roles=self.roles, principal=self.principal, screen=self
        )

    @property
    def reassigned_reason(self) -> str:
        reason = self.reassigned.reason if self.reassigned else ""
        return REASSIGN_REASONS.get(reason, reason.replace("_", " "))

    @property
    def allowed(self) -> dict[str, list[str]]:
        allowed = self.contract.get("allowed", {}) or {}
        return {name: list(allowed.get(name, ())) for name in ("tools", "data", "operations")}

    @property
    def budget_lines(self) -> tuple[Any, ...]:
        return budget_lines(self.item.limits, self.item.used)

    @property
    def deadline_missed(self) -> bool:
        """The start-by deadline passed while the item waited (the sweep has not acted yet)."""
        return self.start_by is not None and self.start_by.passed


def why_not(
    refusal: ProtocolError,
    *,
    item: WorkItemState,
    roles: tuple[str, ...],
    principal: str,
    screen: ApprovalScreen | None = None,
) -> str:
    """The write path's refusal of a person's grant, as that person would say it."""
    code = refusal.code
    if code == ErrorCode.FORBIDDEN:
        return (
            "Only mission owners can approve or refuse an execution; "
            f"you are {roles_text(roles)} in this group."
        )
    if code == ErrorCode.SELF_APPROVAL:
        if principal == item.authorized_by:
            return "You authorised this WorkItem, so someone else must approve it."
        if principal == item.proposed_by:
            return "You proposed this WorkItem, so another mission owner must approve it."
        if principal == item.owner:
            return "You own this WorkItem: its owner never approves its own execution."
        return "You asked for this WorkItem, so someone else must approve it."
    if code == ErrorCode.DUPLICATE_APPROVAL:
        mine = [
            d
            for d in (screen.current if screen else decisions_of(item))
            if d.principal == principal and d.revision == item.revision
        ]
        verb = "refused" if mine and not mine[-1].granted else "approved"
        return f"You already {verb} revision {item.revision}."
    if code == ErrorCode.ILLEGAL_TRANSITION:
        refused = screen.refused if screen else None
        if refused is not None and item.state == S.QUEUED:
            return (
                f"Revision {item.revision} was refused by {display_name(refused.principal)}: "
                "it waits for a corrected contract or a cancel."
            )
        if item.state != S.QUEUED:
            return (
                f"Approvals are given while the WorkItem waits with its owner to start; "
                f"it is {item.state} now, so there is nothing to decide."
            )
    if code == ErrorCode.STALE_REVISION:
        return (
            "The contract changed while you read it (it is now revision "
            f"{item.revision}): read the new one below before you decide."
        )
    return plain_refusal(refusal)


def approval_screen(
    caller: Caller, membership: Membership, work_item: str, *, now: datetime | None = None
) -> ApprovalScreen | None:
    """The screen for ``work_item`` of the membership's group, or ``None`` if it has none."""
    group_id = membership.group_id
    row = WorkItem.objects.filter(group_id=group_id, work_item_id=work_item).first()
    if row is None:
        return None
    item = row.to_state()
    now = now or _now()
    refusal = None
    if item.state == S.QUEUED and approvals_required(item) > 0:
        refusal = preview.refusal(caller, group_id, GRANT_EXECUTION, grant_body(item))
    documents = _documents(group_id, item)
    return ApprovalScreen(
        group_id=group_id,
        item=item,
        mission=Mission.objects.filter(group_id=group_id, mission_id=item.mission).first(),
        roles=tuple(membership.roles),
        principal=caller.principal,
        refusal=refusal,
        decisions=decisions_of(item),
        start_by=(
            Countdown(item.start_deadline, now, "missed")
            if item.start_deadline and item.state == S.QUEUED
            else None
        ),
        reassigned=_reassignment(item, documents),
        authorized_at=_time_of(item, documents, "work.authorized", first=True),
        accepted_at=_time_of(item, documents, "work.offer_accepted"),
        inputs=_inputs(group_id, item),
    )


def _inputs(group_id: str, item: WorkItemState) -> tuple[ArtifactFacts, ...]:
    digests, names = contract_inputs(item.contract)
    return tuple(artifact_facts(group_id, digests, names=names))


def _documents(group_id: str, item: WorkItemState) -> dict[int, dict[str, Any]]:
    """The log's documents of the item's events the screen shows with their time: one read."""
    sequences = [seq for seq, type_, _actor in item.history if type_ in TIMED_EVENTS]
    if not sequences:
        return {}
    return {
        sequence: json.loads(text)
        for sequence, text in Event.objects.filter(
            group_id=group_id, sequence__in=sequences
        ).values_list("sequence", "document")
    }


def _time_of(
    item: WorkItemState, documents: dict[int, dict[str, Any]], type_: str, *, first: bool = False
) -> datetime | None:
    entries = [seq for seq, kind, _actor in item.history if kind == type_]
    if not entries:
        return None
    document = documents.get(entries[0] if first else entries[-1], {})
    return _time(document.get("recorded_at"))


def _reassignment(item: WorkItemState, documents: dict[int, dict[str, Any]]) -> Reassignment | None:
    """The latest ``work.reassigned``, if no owner has accepted the item since."""
    latest = None
    for sequence, type_, _actor in item.history:
        if type_ == "work.reassigned":
            latest = sequence
        elif type_ == "work.offer_accepted":
            latest = None
    if latest is None:
        return None
    document = documents.get(latest, {})
    payload = document.get("payload", {})
    return Reassignment(
        sequence=latest,
        reason=str(payload.get("reason", "")),
        from_owner=payload.get("from_owner"),
        offered_to=payload.get("offered_to"),
        at=_time(document.get("recorded_at")),
    )
