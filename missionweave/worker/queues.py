"""A Worker's inbox, work queue and held items in one group, folded from the group's events.

R0-01, R0-02, R11.1-01, R11.1-02 (MWP-WRK-008): per group it belongs to, a Worker keeps its own
inbox, cursor and work queue, and they are projections of that group's accepted events
(wire.md §6), rebuildable by replay. Nothing here is authoritative (R11.1-03): ownership,
leases and WorkItem state live in the group log; the worker acts on this view and the authority
refuses whatever is stale (``STALE_OWNERSHIP``, ``STALE_LEASE``).

One group's state is plain JSON data, ``rows[kind][key] -> row``:

- ``membership`` (key ``""``): this worker's roles and membership epoch, and whether active;
- ``item`` (key: WorkItem id): what the worker must remember of every live WorkItem of the
  group to judge an offer or order its queue: mission, contract revision, scheduling terms,
  the execution approvals of the current revision and the last checkpoint. An offer names
  only the item, so the contract has to be known from ``work.authorized``; verified and
  cancelled items are forgotten (terminal, R10.2-19);
- ``offer`` (key: WorkItem id): the open offer made to this worker (R10.3-01);
- ``work`` (key: WorkItem id): the items this worker owns — ``queued`` (the work queue),
  ``active`` (held under a lease) or ``blocked`` (still owned, R11.4-05) — with what the
  scheduler needs and the checkpoint to resume from (R11.3-12);
- ``inbox`` (key: zero-padded index) and ``inbox_head``: offers to this worker, what happens
  to them, messages and questions on its items, its membership changes, the items and leases
  it loses — the latest ``INBOX_LIMIT`` entries (the log keeps them all).

``evolve(rows, event, worker)`` is the fold: pure, it returns only the rows the event changes
(``None`` deletes one). ``apply``, ``replay`` and the durable ``local_store`` all fold through
it, so a live projection and a replay cannot drift apart (as ``protocol.decider.apply``), and
the store writes exactly those rows in the transaction that moves the cursor. Rows are never
mutated in place: a fold builds new dicts, so a state handed out earlier stays as it was.
Event types this worker has no use for change nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypedDict, cast

from missionweave.client.errors import ChainBroken
from missionweave.protocol import states as S
from missionweave.protocol.canonical import ZERO_HASH, digest, without
from missionweave.protocol.events import chains

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
    #: offer, offer_closed, message, priority, membership, gate, lease_ended, work_lost
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


# --- the fold ----------------------------------------------------------------------------------


class _Draft:
    """The rows one event is changing, read through to the rows it started from."""

    def __init__(self, rows: Rows, event: Event, worker: str) -> None:
        self.rows = rows
        self.event = event
        self.worker = worker
        self.changes: Changes = {}

    def get(self, kind: str, key: str) -> Any:
        if (kind, key) in self.changes:
            return self.changes[kind, key]
        return self.rows.get(kind, {}).get(key)

    def put(self, kind: str, key: str, row: Any) -> None:
        self.changes[kind, key] = row

    def drop(self, kind: str, key: str) -> None:
        if self.get(kind, key) is not None:
            self.changes[kind, key] = None

    def note(self, kind: str, work_item: str | None, **detail: Any) -> None:
        """An inbox entry for this event; the oldest beyond ``INBOX_LIMIT`` drops off."""
        index = (self.get(INBOX_HEAD, "") or {"next": 0})["next"]
        entry: InboxEntry = {
            "index": index,
            "sequence": self.event["sequence"],
            "event_id": self.event["event_id"],
            "type": self.event["type"],
            "kind": kind,
            "work_item": work_item,
            "detail": detail,
        }
        self.put(INBOX, inbox_key(index), entry)
        if index >= INBOX_LIMIT:
            self.drop(INBOX, inbox_key(index - INBOX_LIMIT))
        self.put(INBOX_HEAD, "", {"next": index + 1})


Fold = Callable[[_Draft, dict[str, Any]], None]
_FOLDS: dict[str, Fold] = {}


def _folds(*types: str) -> Callable[[Fold], Fold]:
    def register(fold: Fold) -> Fold:
        for type_ in types:
            if type_ in _FOLDS:  # one fold per event type: a second would silently win
                raise ValueError(f"{type_} is already folded by {_FOLDS[type_].__name__}")
            _FOLDS[type_] = fold
        return fold

    return register


def folded_types() -> frozenset[str]:
    """The event types that can change a worker's projection."""
    return frozenset(_FOLDS)


def inbox_key(index: int) -> str:
    return f"{index:012d}"


def evolve(rows: Rows, event: Event, worker: str) -> Changes:
    """The rows ``event`` changes in ``worker``'s projection ``rows`` of its group (pure)."""
    fold = _FOLDS.get(event["type"])
    if fold is None:
        return {}
    draft = _Draft(rows, event, worker)
    fold(draft, event["payload"])
    return draft.changes


def fold_into(rows: dict[str, dict[str, Any]], changes: Changes) -> None:
    """Write ``changes`` into ``rows`` in place (a kind left empty is removed, so a live state
    and a replayed one compare equal)."""
    for (kind, key), row in changes.items():
        if row is None:
            rows.get(kind, {}).pop(key, None)
            if kind in rows and not rows[kind]:
                del rows[kind]
        else:
            rows.setdefault(kind, {})[key] = row


def _recorded(d: _Draft) -> tuple[str, int]:
    return d.event["recorded_at"], d.event["sequence"]


def gate_of(terms: Terms, item: ItemRow | None) -> Gate:
    """The gate an owned item copies from its terms and the remembered item's decisions."""
    return {
        "requires_execution_approval": terms["requires_execution_approval"],
        "approvals_required": terms["approvals_required"],
        "approvals": list(item["approvals"]) if item else [],
        "refused_by": item["refused_by"] if item else None,
    }


def _set_item(d: _Draft, ident: str, **changes: Any) -> ItemRow | None:
    """Change the remembered item, and what an owned item copies of it (gate, checkpoint)."""
    item: ItemRow | None = d.get(ITEM, ident)
    if item is None:
        return None
    item = cast(ItemRow, {**item, **changes})
    d.put(ITEM, ident, item)
    row: WorkRow | None = d.get(WORK, ident)
    if row is not None:
        d.put(
            WORK,
            ident,
            {**row, "gate": gate_of(row["terms"], item), "resume_from": item["last_checkpoint"]},
        )
    return item


def _lose(d: _Draft, ident: str, reason: str) -> None:
    """The item is no longer this worker's (fenced, reassigned, ended): its slot must stop."""
    row: WorkRow | None = d.get(WORK, ident)
    if row is None:
        return
    d.drop(WORK, ident)
    d.note(
        "work_lost",
        ident,
        reason=reason,
        state=row["state"],
        ownership_epoch=row["ownership_epoch"],
        lease_id=row["lease"]["lease_id"] if row["lease"] else None,
    )


def _close_offer(d: _Draft, ident: str, reason: str) -> None:
    offer: OfferRow | None = d.get(OFFER, ident)
    if offer is None:
        return
    d.drop(OFFER, ident)
    d.note("offer_closed", ident, offer=offer["offer"], reason=reason)


def _requeue(d: _Draft, ident: str, **changes: Any) -> None:
    """Back in the work queue, still owned (R10.2-08, R10.2-10, R11.3-10, R11.4-08)."""
    row: WorkRow | None = d.get(WORK, ident)
    if row is None:
        return
    queued_at, sequence = _recorded(d)
    d.put(
        WORK,
        ident,
        {
            **row,
            "state": S.QUEUED,
            "lease": None,
            "queued_at": queued_at,
            "queued_sequence": sequence,
            **changes,
        },
    )


def _checkpoint(d: _Draft, payload: dict[str, Any]) -> dict[str, Any]:
    """As the WorkItem keeps it (``item_evolvers._checkpoint``): where and when it was taken."""
    at, sequence = _recorded(d)
    return {**payload["checkpoint"], "sequence": sequence, "at": at}


# --- offers and ownership (R10.2-03..06, R10.3) ------------------------------------------------


@_folds("work.authorized")
def _authorized(d: _Draft, p: dict[str, Any]) -> None:
    row: ItemRow = {
        "work_item": p["work_item"],
        "mission": p["mission"],
        "revision": p["revision"],
        "terms": terms_of(p["contract"]),
        "approvals": [],
        "refused_by": None,
        "last_checkpoint": None,
        "attempts": 0,
    }
    d.put(ITEM, p["work_item"], row)


@_folds("work.offered")
def _offered(d: _Draft, p: dict[str, Any]) -> None:
    ident = p["work_item"]
    item: ItemRow | None = d.get(ITEM, ident)
    if item is not None and p["revision"] != item["revision"]:
        # R10.1-05: a corrected contract is a new revision, decided afresh
        contract = p.get("contract")
        item = _set_item(
            d,
            ident,
            revision=p["revision"],
            terms=terms_of(contract) if contract is not None else item["terms"],
            approvals=[],
            refused_by=None,
        )
    # an offer is made only when no owner is active: an owner still holding it was fenced
    _lose(d, ident, "fenced_by_offer")
    mine = [(rank, o) for rank, o in enumerate(p["offers"]) if o["worker"] == d.worker]
    if not mine:
        _close_offer(d, ident, "superseded")
        return
    rank, offer = mine[0]  # a worker appears once per offer (R10.3-04)
    ahead = [
        {"offer": o["offer"], "expires_at": o["expires_at"]}
        for o in (p["offers"][:rank] if p["mode"] == "sequential" else ())
    ]
    offered_at, sequence = _recorded(d)
    row: OfferRow = {
        "group": d.event["group"],
        "work_item": ident,
        "mission": item["mission"] if item else None,
        "offer": offer["offer"],
        "mode": p["mode"],
        "rank": rank,
        "revision": p["revision"],
        "expires_at": offer["expires_at"],
        "offered_at": offered_at,
        "offered_sequence": sequence,
        "start_within_s": p.get("start_within_s"),
        "ahead": ahead,
        "terms": item["terms"] if item else terms_of(None),
    }
    d.put(OFFER, ident, row)
    d.note(
        "offer",
        ident,
        offer=offer["offer"],
        mode=p["mode"],
        revision=p["revision"],
        expires_at=offer["expires_at"],
    )


@_folds("work.offer_accepted")
def _offer_accepted(d: _Draft, p: dict[str, Any]) -> None:
    """R10.2-04, R0-10: this worker's acceptance starts its ownership epoch, queued."""
    ident = p["work_item"]
    if p["worker"] != d.worker:
        return  # this worker's own open offer is withdrawn by the next event
    d.drop(OFFER, ident)
    item: ItemRow | None = d.get(ITEM, ident)
    terms = item["terms"] if item else terms_of(None)
    queued_at, sequence = _recorded(d)
    row: WorkRow = {
        "group": d.event["group"],
        "work_item": ident,
        "mission": item["mission"] if item else None,
        "revision": p["contract_revision"],
        "state": S.QUEUED,
        "ownership_epoch": p["ownership_epoch"],
        "start_deadline": p["start_deadline"],
        "retry_at": None,
        "queued_at": queued_at,
        "queued_sequence": sequence,
        "attempt": item["attempts"] if item else 0,
        "terms": terms,
        "gate": gate_of(terms, item),
        "lease": None,
        "resume_from": item["last_checkpoint"] if item else None,
    }
    d.put(WORK, ident, row)


@_folds("work.offer_withdrawn")
def _offer_withdrawn(d: _Draft, p: dict[str, Any]) -> None:
    offer: OfferRow | None = d.get(OFFER, p["work_item"])
    if offer is not None and offer["offer"] == p["offer"]:
        _close_offer(d, p["work_item"], p.get("reason", "withdrawn"))


@_folds("work.offer_rejected")
def _offer_rejected(d: _Draft, p: dict[str, Any]) -> None:
    """This worker's own rejection closes its offer; another's moves it up the sequence."""
    ident = p["work_item"]
    offer: OfferRow | None = d.get(OFFER, ident)
    if offer is None:
        return
    if offer["offer"] == p["offer"]:
        d.drop(OFFER, ident)
        return
    ahead = [entry for entry in offer["ahead"] if entry["offer"] != p["offer"]]
    if ahead != offer["ahead"]:
        d.put(OFFER, ident, {**offer, "ahead": ahead})


@_folds("approval.execution_granted", "approval.execution_refused")
def _execution_decided(d: _Draft, p: dict[str, Any]) -> None:
    """R10.2-06: grants count toward the gate; a refusal holds the revision and stops its
    start-by clock (issue 34)."""
    ident, actor = p["work_item"], d.event["actor"]
    item: ItemRow | None = d.get(ITEM, ident)
    if item is None:
        return
    granted = d.event["type"] == "approval.execution_granted"
    if granted:
        _set_item(d, ident, approvals=[*item["approvals"], actor])
    else:
        _set_item(d, ident, refused_by=actor)
        row: WorkRow | None = d.get(WORK, ident)
        if row is not None:  # its start-by clock stops: it waits for a corrected contract
            d.put(WORK, ident, {**row, "start_deadline": None})
    if d.get(WORK, ident) is not None:
        decision = "granted" if granted else "refused"
        d.note("gate", ident, decision=decision, by=actor, revision=p["contract_revision"])


@_folds("work.message_posted")
def _message_posted(d: _Draft, p: dict[str, Any]) -> None:
    """Messages and questions on an item this worker owns or is offered (R10.1-02, R10.1-03)."""
    ident, actor = p["work_item"], d.event["actor"]
    if actor == d.worker or (d.get(WORK, ident) is None and d.get(OFFER, ident) is None):
        return
    d.note(
        "message",
        ident,
        message=p.get("message"),
        by=actor,
        text=p["text"],
        essential=bool(p.get("essential", False)),
        in_reply_to=p.get("in_reply_to"),
        resolves=p.get("resolves"),
    )


@_folds("work.reprioritized")
def _reprioritized(d: _Draft, p: dict[str, Any]) -> None:
    """R0-12, R11.3-11: a new urgency or deadline, in the terms of the remembered item and
    of this worker's offer or queue entry, so the scheduler reorders at its next sync."""
    ident, changed = p["work_item"], {"urgency": p["urgency"], "deadline": p["deadline"]}
    item: ItemRow | None = d.get(ITEM, ident)
    if item is not None:
        _set_item(d, ident, terms={**item["terms"], **changed})
    for kind in (OFFER, WORK):
        row = d.get(kind, ident)
        if row is not None:
            d.put(kind, ident, {**row, "terms": {**row["terms"], **changed}})
    if d.get(WORK, ident) is not None or d.get(OFFER, ident) is not None:
        d.note("priority", ident, by=d.event["actor"], reason=p["reason"], **changed)


# --- execution under a lease (R10.2-07..11, R11.3) ---------------------------------------------


@_folds("work.started")
def _started(d: _Draft, p: dict[str, Any]) -> None:
    ident, lease = p["work_item"], p["lease"]
    _set_item(d, ident, attempts=p["attempt"])
    row: WorkRow | None = d.get(WORK, ident)
    if row is None or lease["agent"] != d.worker:
        return
    held: LeaseRow = {
        "lease_id": lease["lease_id"],
        "ownership_epoch": lease["ownership_epoch"],
        "session_epoch": lease.get("session_epoch"),
        "started_at": lease["started_at"],
        "expires_at": lease["expires_at"],
        "status": "active",
    }
    d.put(
        WORK,
        ident,
        {**row, "state": S.ACTIVE, "retry_at": None, "attempt": p["attempt"], "lease": held},
    )


def _with_lease(d: _Draft, p: dict[str, Any], **changes: Any) -> bool:
    """Change this worker's lease named by the payload; whether there was one."""
    row: WorkRow | None = d.get(WORK, p["work_item"])
    lease = row["lease"] if row else None
    if row is None or lease is None or lease["lease_id"] != p["lease_id"]:
        return False
    d.put(WORK, p["work_item"], {**row, "lease": {**lease, **changes}})
    return True


@_folds("lease.renewed")
def _lease_renewed(d: _Draft, p: dict[str, Any]) -> None:
    _with_lease(d, p, expires_at=p["expires_at"])


@_folds("lease.expired")
def _lease_expired(d: _Draft, p: dict[str, Any]) -> None:
    """R11.3-09: the lease ran out; the reassignment in the same command fences the item."""
    if _with_lease(d, p, status="expired"):
        d.note("lease_ended", p["work_item"], reason="expired", lease_id=p["lease_id"])


@_folds("lease.revoked")
def _lease_revoked(d: _Draft, p: dict[str, Any]) -> None:
    """R11.3-10: a replaced session's lease; the item waits queued, with a new start deadline."""
    row: WorkRow | None = d.get(WORK, p["work_item"])
    if row is None:
        return
    _requeue(d, p["work_item"], start_deadline=p.get("start_deadline"))
    d.note("lease_ended", p["work_item"], reason=p.get("reason"), lease_id=p["lease_id"])


@_folds("work.checkpointed")
def _checkpointed(d: _Draft, p: dict[str, Any]) -> None:
    """R10.2-08: a checkpoint releases execution and re-queues, keeping ownership; a buffered
    offline one (R11.5-12) only records where to resume."""
    ident = p["work_item"]
    _set_item(d, ident, last_checkpoint=_checkpoint(d, p))
    row: WorkRow | None = d.get(WORK, ident)
    if row is not None and p.get("offline") is None:
        _requeue(d, ident, start_deadline=p.get("start_deadline", row["start_deadline"]))


@_folds("work.blocked")
def _blocked(d: _Draft, p: dict[str, Any]) -> None:
    ident = p["work_item"]
    _set_item(d, ident, last_checkpoint=_checkpoint(d, p))
    row: WorkRow | None = d.get(WORK, ident)
    if row is not None:
        d.put(WORK, ident, {**row, "state": S.BLOCKED, "lease": None})


@_folds("work.unblocked")
def _unblocked(d: _Draft, p: dict[str, Any]) -> None:
    """R10.2-10: re-queued for its owner, or re-opened (the owner is fenced)."""
    ident = p["work_item"]
    row: WorkRow | None = d.get(WORK, ident)
    if row is None:
        return
    if p["to"] == S.QUEUED:
        _requeue(d, ident, start_deadline=p.get("start_deadline", row["start_deadline"]))
    else:
        _lose(d, ident, "unblocked_to_open")


@_folds("work.retry_scheduled")
def _retry_scheduled(d: _Draft, p: dict[str, Any]) -> None:
    """R11.4-08: the same owner tries again once the backoff has passed."""
    _requeue(d, p["work_item"], retry_at=p["retry_at"], start_deadline=p["start_deadline"])


@_folds("work.submitted")
def _submitted(d: _Draft, p: dict[str, Any]) -> None:
    """R10.2-11: the lease is released; the result is the reviewers' now."""
    d.drop(WORK, p["work_item"])


@_folds("work.reassigned")
def _reassigned(d: _Draft, p: dict[str, Any]) -> None:
    """R11.5-01: the owner is fenced."""
    _lose(d, p["work_item"], p["reason"])


@_folds("mission.child_created")
def _child_created(d: _Draft, p: dict[str, Any]) -> None:
    """R10.2-15: blocked while the child mission runs, ownership protected."""
    ident = p["work_item"]
    _close_offer(d, ident, "child_mission")
    row: WorkRow | None = d.get(WORK, ident)
    if row is not None:
        d.put(WORK, ident, {**row, "state": S.BLOCKED, "lease": None})


@_folds("mission.child_failed")
def _child_failed(d: _Draft, p: dict[str, Any]) -> None:
    """R10.2-17: ``fail_parent`` fails the item; ``block_parent`` leaves it blocked."""
    if p["failure_policy"] == "fail_parent":
        _lose(d, p["work_item"], "child_failed")


@_folds("work.failed")
def _failed(d: _Draft, p: dict[str, Any]) -> None:
    """R10.2-13, R10.2-18: failed, yet remembered — a new offer may revive it (R10.2-20)."""
    _close_offer(d, p["work_item"], "failed")
    _lose(d, p["work_item"], "failed")


@_folds("work.cancelled", "work.result_accepted", "mission.child_approved")
def _ended(d: _Draft, p: dict[str, Any]) -> None:
    """Cancelled or verified: terminal (R10.2-19), so the item is forgotten."""
    ident = p["work_item"]
    reason = "cancelled" if d.event["type"] == "work.cancelled" else "verified"
    _close_offer(d, ident, reason)
    _lose(d, ident, reason)
    d.drop(ITEM, ident)


# --- memberships (wire.md §2) --------------------------------------------------------------------


@_folds("membership.granted", "membership.changed", "membership.revoked")
def _membership(d: _Draft, p: dict[str, Any]) -> None:
    if p["principal"] != d.worker:
        return
    current: MembershipRow | None = d.get(MEMBERSHIP, "")
    revoked = d.event["type"] == "membership.revoked"
    roles = (current["roles"] if current else []) if revoked else list(p["roles"])
    d.put(MEMBERSHIP, "", {"roles": roles, "epoch": p["epoch"], "active": not revoked})
    d.note("membership", None, roles=roles, epoch=p["epoch"], active=not revoked)
    if revoked:
        # wire.md §6 (R11.5-01, R11.3-07): the same command fences every item the member
        # holds queued or under a live lease; a blocked one keeps its bounded blocked lease
        for ident, row in sorted(d.rows.get(WORK, {}).items()):
            live = row["lease"] is not None and row["lease"]["status"] == "active"
            if row["state"] == S.QUEUED or (row["state"] == S.ACTIVE and live):
                _lose(d, ident, "membership_revoked")


# --- one group's state ---------------------------------------------------------------------------


class SnapshotInvalid(ValueError):
    """A local snapshot that is not this projection's, or whose digest does not hold."""


@dataclass(frozen=True, slots=True)
class GroupQueues:
    """One group's projection for one worker, at ``sequence`` (whose hash is ``event_hash``)."""

    group: str
    worker: str
    sequence: int = 0
    event_hash: str = ZERO_HASH
    rows: Rows = field(default_factory=dict)

    def of(self, kind: str) -> Mapping[str, Any]:
        return self.rows.get(kind, {})

    @property
    def membership(self) -> MembershipRow | None:
        return self.of(MEMBERSHIP).get("")

    def _work(self, state: str) -> list[WorkRow]:
        rows = [row for row in self.of(WORK).values() if row["state"] == state]
        return sorted(rows, key=lambda row: (row["queued_sequence"], row["work_item"]))

    def queue(self) -> list[WorkRow]:
        """The work queue: owned items in ``queued``, oldest first (R11.1-01)."""
        return self._work(S.QUEUED)

    def active(self) -> list[WorkRow]:
        """The items held under a lease (R11.3-03)."""
        return self._work(S.ACTIVE)

    def blocked(self) -> list[WorkRow]:
        return self._work(S.BLOCKED)

    def owned(self, work_item: str) -> WorkRow | None:
        return self.of(WORK).get(work_item)

    def item(self, work_item: str) -> ItemRow | None:
        return self.of(ITEM).get(work_item)

    def offers(self) -> list[OfferRow]:
        """Open offers to this worker, oldest first."""
        return sorted(self.of(OFFER).values(), key=lambda row: row["offered_sequence"])

    def inbox(self, after: int = -1) -> list[InboxEntry]:
        """Inbox entries with an index above ``after``, in order."""
        entries = self.of(INBOX)
        return [entries[key] for key in sorted(entries) if entries[key]["index"] > after]

    def checkpoints(self) -> dict[str, dict[str, Any]]:
        """The last checkpoint of each owned item that has one (R11.3-12)."""
        return {
            ident: row["resume_from"]
            for ident, row in sorted(self.of(WORK).items())
            if row["resume_from"] is not None
        }

    def snapshot(self) -> dict[str, Any]:
        """A local snapshot: restoring it and replaying the events after ``sequence`` gives
        the state a full replay gives (R11.1-02, MWP-WRK-029)."""
        document = {
            "format": SNAPSHOT_FORMAT,
            "group": self.group,
            "worker": self.worker,
            "sequence": self.sequence,
            "event_hash": self.event_hash,
            "rows": {kind: dict(rows) for kind, rows in self.rows.items()},
        }
        return {**document, "digest": digest(document)}

    @classmethod
    def from_snapshot(cls, document: Mapping[str, Any]) -> GroupQueues:
        if document.get("format") != SNAPSHOT_FORMAT:
            raise SnapshotInvalid(f"not a {SNAPSHOT_FORMAT} snapshot")
        if digest(without(dict(document), "digest")) != document.get("digest"):
            raise SnapshotInvalid("the snapshot's digest does not hold")
        rows = {kind: dict(found) for kind, found in document["rows"].items() if found}
        group, worker = document["group"], document["worker"]
        return cls(group, worker, document["sequence"], document["event_hash"], rows)


def _require_next(group: str, sequence: int, event_hash: str, event: Event) -> None:
    """Only the next event of this group, chained onto the last one (R16-03, wire.md §6)."""
    if event.get("group") != group:
        raise ChainBroken(group, sequence + 1, f"an event of group {event.get('group')!r}")
    if not chains(dict(event), previous_hash=event_hash, previous_sequence=sequence):
        raise ChainBroken(group, sequence + 1, f"event {event.get('sequence')} does not chain")


def apply(state: GroupQueues, event: Event) -> GroupQueues:
    """The state after ``event``, the next event of the group (pure)."""
    _require_next(state.group, state.sequence, state.event_hash, event)
    changes = evolve(state.rows, event, state.worker)
    touched = {kind for kind, _key in changes}
    rows = {kind: dict(state.rows.get(kind, {})) for kind in touched}
    fold_into(rows, changes)  # copies of the kinds it changes only: the rest is shared
    merged = {kind: found for kind, found in state.rows.items() if kind not in touched}
    merged.update(rows)
    return replace(state, sequence=event["sequence"], event_hash=event["hash"], rows=merged)


def replay(
    events: Iterable[Event], *, group: str, worker: str, start: GroupQueues | None = None
) -> GroupQueues:
    """Fold ``events`` — the group's, in order, after ``start`` (a local snapshot) or from the
    first — into a fresh state: what a rebuild gives (R11.1-02)."""
    state = start or GroupQueues(group, worker)
    if (state.group, state.worker) != (group, worker):
        raise SnapshotInvalid(f"a snapshot of {state.group}/{state.worker}")
    rows = {kind: dict(kind_rows) for kind, kind_rows in state.rows.items()}
    sequence, event_hash = state.sequence, state.event_hash
    for event in events:
        _require_next(group, sequence, event_hash, event)
        fold_into(rows, evolve(rows, event, worker))
        sequence, event_hash = event["sequence"], event["hash"]
    return GroupQueues(group, worker, sequence, event_hash, rows)
