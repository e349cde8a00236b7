"""The rows of a Worker's per-group projection (``queues.py``): their kinds and shapes, and
the scheduling terms and approval gate copied from a contract (R0-03, R10.1-01(f),
R10.2-06). Plain JSON data, so the durable store (``local_store.py``) writes them as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

from .resources import needed_amounts

MEMBERSHIP = "membership"
ITEM = "item"
OFFER = "offer"
WORK = "work"
INBOX = "inbox"
INBOX_HEAD = "inbox_head"
KINDS = (MEMBERSHIP, ITEM, OFFER, WORK, INBOX, INBOX_HEAD)
#: inbox entries kept per group; older ones drop off (the group log keeps every event)
INBOX_LIMIT = 500
#: the format of a local snapshot of this projection (``GroupQueues.snapshot``)
SNAPSHOT_FORMAT = "mwp.worker.queues/1"

Key = tuple[str, str]
Rows = Mapping[str, Mapping[str, Any]]
#: the rows one event changes; ``None`` deletes the row
Changes = dict[Key, Any]
Event = Mapping[str, Any]


class Terms(TypedDict):
    """What the contract asks of the schedule (R0-03, R10.1-01(f), R10.1-01(i))."""

    urgency: str | None
    deadline: str | None
    business_impact: str | None
    risk_class: str | None
    requires_execution_approval: bool
    #: distinct mission_owner grants ``work.start`` needs (0 without the gate)
    approvals_required: int
    #: seconds of compute: ``resources.estimated_compute_s`` when the contract declares one
    #: (``compute_source`` "estimate"), else the ``budgets.compute`` ceiling ("budget")
    compute_s: float | None
    compute_source: str | None
    max_concurrency: int | None
    #: named amounts the item holds while it runs (``resources.needed_amounts``, R11.1-09)
    needs: dict[str, float]


class Gate(TypedDict):
    """The execution approval gate of the current revision (R10.2-06, R10.1-01(i))."""

    requires_execution_approval: bool
    approvals_required: int
    approvals: list[str]
    refused_by: str | None


class ItemRow(TypedDict):
    work_item: str
    mission: str | None
    revision: int
    terms: Terms
    approvals: list[str]
    refused_by: str | None
    last_checkpoint: dict[str, Any] | None
    attempts: int


class LeaseRow(TypedDict):
    lease_id: str
    ownership_epoch: int
    session_epoch: int | None
    started_at: str
    expires_at: str
    status: str  # "active", or "expired" until the reassignment that follows


class WorkRow(TypedDict):
    """An item this worker owns (R11.1-01): a work queue entry while ``queued``."""

    group: str
    work_item: str
    mission: str | None
    revision: int
    state: str  # queued, active or blocked
    ownership_epoch: int
    start_deadline: str | None
    #: a retry's backoff: not startable before (R11.4-08)
    retry_at: str | None
    #: the authority time (``recorded_at``) and sequence of the event that queued it
    queued_at: str
    queued_sequence: int
    attempt: int
    terms: Terms
    gate: Gate
    lease: LeaseRow | None
    #: the latest durable checkpoint of the item, where execution resumes (R11.3-12)
    resume_from: dict[str, Any] | None


class OfferRow(TypedDict):
    group: str
    work_item: str
    mission: str | None
    offer: str
    mode: str
    rank: int
    revision: int
    expires_at: str
    offered_at: str
    offered_sequence: int
    start_within_s: int | None
    #: sequential offers ranked before this one and not yet rejected: the offer is live once
    #: each has expired (R10.3-03)
    ahead: list[dict[str, Any]]
    terms: Terms


class MembershipRow(TypedDict):
    roles: list[str]
    epoch: int
    active: bool


class InboxEntry(TypedDict):
    index: int
    sequence: int
    event_id: str
    type: str
    #: offer, offer_closed, message, priority, membership, gate, lease_ended, work_lost,
    #: dependency_ended, dependency_restored
    kind: str
    work_item: str | None
    detail: dict[str, Any]


def terms_of(contract: Mapping[str, Any] | None) -> Terms:
    """The scheduling terms of a Work Contract (wire.md §10); all empty without one.

    Metadata only (R13.3-08): no goal, outputs, criteria, inputs or allowed data reach the
    queue rows the scheduler is fed from."""
    contract = contract or {}
    risk = contract.get("risk") or {}
    requires = bool(risk.get("requires_execution_approval", False))
    resources = contract.get("resources") or {}
    budgets = contract.get("budgets") or {}
    compute, source = resources.get("estimated_compute_s"), "estimate"
    if not _is_number(compute):
        compute, source = budgets.get("compute"), "budget"
    if not _is_number(compute):
        compute, source = None, None
    return {
        "urgency": contract.get("urgency"),
        "deadline": contract.get("deadline"),
        "business_impact": contract.get("business_impact"),
        "risk_class": risk.get("class"),
        "requires_execution_approval": requires,
        # R10.1-01(i): the same count as ``protocol.work.checks.approvals_required``
        "approvals_required": int(risk.get("approvals_required", 1)) if requires else 0,
        "compute_s": compute,
        "compute_source": source,
        "max_concurrency": resources.get("max_concurrency"),
        "needs": needed_amounts(resources),
    }


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def gate_is_open(gate: Gate) -> bool:
    """Whether the approval gate lets ``work.start`` through: enough distinct grants and no
    refusal of the revision (R10.2-06). The authority decides; this only avoids asking early."""
    return gate["refused_by"] is None and len(set(gate["approvals"])) >= gate["approvals_required"]


def gate_of(terms: Terms, item: ItemRow | None) -> Gate:
    """The gate an owned item copies from its terms and the remembered item's decisions."""
    return {
        "requires_execution_approval": terms["requires_execution_approval"],
        "approvals_required": terms["approvals_required"],
        "approvals": list(item["approvals"]) if item else [],
        "refused_by": item["refused_by"] if item else None,
    }
