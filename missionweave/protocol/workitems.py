"""The WorkItem aggregate, its offers and leases, proposals, the dependency graph — and how
each event changes them (``evolve``). Pure: no I/O, time comes in on the facts.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

from . import states as S
from .budgets import add_usage
from .facts import Fact, StateKey
from .timefmt import format_timestamp, parse_timestamp

GRAPH_KEY: StateKey = ("dependencies", "graph")
HISTORY_LIMIT = 200  # the projection keeps the latest events; the log keeps them all
LEASE_HISTORY_LIMIT = 50  # closed leases kept on the projection (the log keeps every one)
LATE_RESULT_LIMIT = 50
#: how long a blocked owner keeps the item before it may be reassigned (R11.4-05)
BLOCKED_LEASE = timedelta(minutes=30)

#: why the authority must act on an item at its ``due`` time (R11.5-01, R11.4-05)
#: the event of offline reconciliation's charge (R11.5-12)
USAGE_RECORDED = "ext.missionweaveprotocol.core.resource_usage_recorded"

#: the events that charge usage to a WorkItem and its mission ancestry
CHARGE_EVENTS = frozenset({"work.usage_recorded", USAGE_RECORDED, "mission.child_usage_recorded"})

LEASE_EXPIRED = "lease_expired"
START_DEADLINE_MISSED = "start_deadline_missed"
BLOCKED_LEASE_EXPIRED = "blocked_lease_expired"


def work_item_key(work_item: str) -> StateKey:
    return ("work_item", work_item)


def proposal_key(proposal: str) -> StateKey:
    return ("proposal", proposal)


@dataclass(frozen=True, slots=True)
class Offer:
    offer: str
    worker: str
    expires_at: str
    mode: str  # "sequential" or "urgent"
    rank: int  # position in a sequential offer
    revision: int
    status: str = "open"  # open, accepted, rejected, withdrawn, superseded
    reason: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "offer": self.offer,
            "worker": self.worker,
            "expires_at": self.expires_at,
            "mode": self.mode,
            "rank": self.rank,
            "revision": self.revision,
            "status": self.status,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class Lease:
    """An execution lease (R11.3-03): bound to agent, session epoch, item and ownership epoch."""

    lease_id: str
    agent: str
    session_epoch: int | None
    ownership_epoch: int
    started_at: str
    expires_at: str
    renewals: tuple[str, ...] = ()
    status: str = "active"  # active, released, expired, revoked
    #: when it stopped being active (authority clock), and why (the closing event's type)
    closed_at: str | None = None
    closed_by: str | None = None
    #: capability tokens (ids) revoked while the lease lives (R11.3-07)
    revoked_tokens: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "lease_id": self.lease_id,
            "agent": self.agent,
            "session_epoch": self.session_epoch,
            "ownership_epoch": self.ownership_epoch,
            "started_at": self.started_at,
            "expires_at": self.expires_at,
            "renewals": list(self.renewals),
            "status": self.status,
            "closed_at": self.closed_at,
            "closed_by": self.closed_by,
            "revoked_tokens": list(self.revoked_tokens),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Lease:
        return cls(
            **{
                **data,
                "renewals": tuple(data["renewals"]),
                "revoked_tokens": tuple(data.get("revoked_tokens", ())),
            }
        )


@dataclass(frozen=True, slots=True)
class WorkItem:
    id: str
    mission: str
    state: str
    revision: int
    contract: dict[str, Any]
    depends_on: tuple[str, ...]
    authorized_by: str
    proposal: str | None = None
    proposed_by: str | None = None
    owner: str | None = None
    ownership_epoch: int = 0
    start_deadline: str | None = None
    former_owners: tuple[str, ...] = ()
    lease: Lease | None = None
    offers: tuple[Offer, ...] = ()
    selection_basis: dict[str, Any] | None = None
    approvals: tuple[str, ...] = ()
    open_questions: tuple[str, ...] = ()
    messages: int = 0
    used: dict[str, float | int] = field(default_factory=dict)
    child: dict[str, Any] | None = None
    submission: dict[str, Any] | None = None
    evidence: tuple[dict[str, Any], ...] = ()
    attempts: int = 0
    late_results: int = 0
    blocked_at: str | None = None
    history: tuple[tuple[int, str, str], ...] = ()
    #: closed execution leases, oldest first (R11.3-03 renewal history; R11.5-10 windows)
    lease_history: tuple[Lease, ...] = ()
    #: a retry's backoff: ``work.start`` waits until then (R11.4-08)
    retry_at: str | None = None
    #: the start window the coordinator's offer asked for, in seconds (None: the default)
    start_window_s: int | None = None
    #: the latest durable checkpoint, where a reassignment resumes (R11.5-01)
    last_checkpoint: dict[str, Any] | None = None
    #: late results of former owners, kept for audit (R11.5-02)
    late_result_log: tuple[dict[str, Any], ...] = ()
    reassignments: int = 0

    @property
    def limits(self) -> dict[str, Any]:
        return dict(self.contract.get("budgets", {}))

    def lease_named(self, lease_id: str) -> Lease | None:
        """The current or a historical lease with this id."""
        if self.lease is not None and self.lease.lease_id == lease_id:
            return self.lease
        return next((lease for lease in self.lease_history if lease.lease_id == lease_id), None)

    def due(self) -> tuple[str, str] | None:
        """When the authority must act on this item, and why — or ``None``.

        An active lease runs out (R11.3-09), a queued owner misses its start deadline
        (R11.3-02) or a blocked owner outstays its bounded blocked lease (R11.4-05); each lets
        the coordinator's policy reassign (R11.5-01). A block while a child mission runs is
        protected (R10.2-15). Sweeps select on this time, copied to an indexed column.
        """
        if self.owner is None:
            return None
        if self.state == S.ACTIVE and self.lease is not None and self.lease.status == "active":
            return self.lease.expires_at, LEASE_EXPIRED
        if self.state == S.QUEUED and self.start_deadline is not None:
            return self.start_deadline, START_DEADLINE_MISSED
        if self.state == S.BLOCKED and self.blocked_at is not None:
            if self.child is not None and self.child.get("status") == "running":
                return None
            until = parse_timestamp(self.blocked_at) + BLOCKED_LEASE
            return format_timestamp(until), BLOCKED_LEASE_EXPIRED
        return None

    def as_dict(self) -> dict[str, Any]:
        """The WorkItem projection of wire.md §4 (and what the projection row stores)."""
        return {
            "id": self.id,
            "mission": self.mission,
            "state": self.state,
            "revision": self.revision,
            "contract": self.contract,
            "owner": self.owner,
            "ownership_epoch": self.ownership_epoch,
            "start_deadline": self.start_deadline,
            "lease": self.lease.as_dict() if self.lease else None,
            "offers": [offer.as_dict() for offer in self.offers],
            "depends_on": list(self.depends_on),
            "budgets": {"limits": self.limits, "used": dict(self.used)},
            "approvals": list(self.approvals),
            "open_questions": list(self.open_questions),
            "messages": self.messages,
            "selection_basis": self.selection_basis,
            "authorized_by": self.authorized_by,
            "proposal": self.proposal,
            "proposed_by": self.proposed_by,
            "former_owners": list(self.former_owners),
            "child": self.child,
            "submission": self.submission,
            "evidence": list(self.evidence),
            "attempts": self.attempts,
            "late_results": self.late_results,
            "blocked_at": self.blocked_at,
            "history": [
                {"sequence": sequence, "type": type_, "actor": actor}
                for sequence, type_, actor in self.history
            ],
            "lease_history": [lease.as_dict() for lease in self.lease_history],
            "retry_at": self.retry_at,
            "start_window_s": self.start_window_s,
            "last_checkpoint": self.last_checkpoint,
            "late_result_log": list(self.late_result_log),
            "reassignments": self.reassignments,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WorkItem:
        lease = data.get("lease")
        return cls(
            id=data["id"],
            mission=data["mission"],
            state=data["state"],
            revision=data["revision"],
            contract=data["contract"],
            depends_on=tuple(data["depends_on"]),
            authorized_by=data["authorized_by"],
            proposal=data.get("proposal"),
            proposed_by=data.get("proposed_by"),
            owner=data.get("owner"),
            ownership_epoch=data["ownership_epoch"],
            start_deadline=data.get("start_deadline"),
            former_owners=tuple(data.get("former_owners", ())),
            lease=Lease.from_dict(lease) if lease else None,
            offers=tuple(Offer(**offer) for offer in data.get("offers", ())),
            selection_basis=data.get("selection_basis"),
            approvals=tuple(data.get("approvals", ())),
            open_questions=tuple(data.get("open_questions", ())),
            messages=data.get("messages", 0),
            used=dict(data["budgets"]["used"]),
            child=data.get("child"),
            submission=data.get("submission"),
            evidence=tuple(data.get("evidence", ())),
            attempts=data.get("attempts", 0),
            late_results=data.get("late_results", 0),
            blocked_at=data.get("blocked_at"),
            history=tuple(
                (entry["sequence"], entry["type"], entry["actor"])
                for entry in data.get("history", ())
            ),
            lease_history=tuple(Lease.from_dict(old) for old in data.get("lease_history", ())),
            retry_at=data.get("retry_at"),
            start_window_s=data.get("start_window_s"),
            last_checkpoint=data.get("last_checkpoint"),
            late_result_log=tuple(data.get("late_result_log", ())),
            reassignments=data.get("reassignments", 0),
        )


@dataclass(frozen=True, slots=True)
class Proposal:
    id: str
    title: str
    contract: dict[str, Any] | None
    proposed_by: str
    state: str = "open"  # open, authorized
    work_item: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "contract": self.contract,
            "proposed_by": self.proposed_by,
            "state": self.state,
            "work_item": self.work_item,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Proposal:
        return cls(**data)


@dataclass(frozen=True, slots=True)
class DependencyGraph:
    """Every declared edge of a group: WorkItem → the WorkItems it depends on (R10.4-01)."""

    edges: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"edges": {item: list(deps) for item, deps in self.edges.items()}}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DependencyGraph:
        return cls({item: tuple(deps) for item, deps in data["edges"].items()})

    def cycle_through(self, item: str, depends_on: tuple[str, ...]) -> list[str] | None:
        """The cycle that adding ``item → depends_on`` would close, as a path, or ``None``."""
        edges = {**self.edges, item: depends_on}
        # depth-first search from each dependency back to ``item``
        stack: list[tuple[str, list[str]]] = [(dep, [item, dep]) for dep in depends_on]
        seen: set[str] = set()
        while stack:
            node, path = stack.pop()
            if node == item:
                return path
            if node in seen:
                continue
            seen.add(node)
            stack.extend((nxt, [*path, nxt]) for nxt in edges.get(node, ()))
        return None


# --- evolve ------------------------------------------------------------------------------


def _with_history(item: WorkItem, fact: Fact) -> WorkItem:
    history = (*item.history, (fact.sequence, fact.type, fact.actor))[-HISTORY_LIMIT:]
    return replace(item, history=history)


def _close_lease(item: WorkItem, status: str, fact: Fact) -> Lease | None:
    """The item's lease after ``fact`` ends it (R11.3-09): released, expired or revoked."""
    if item.lease is None or item.lease.status != "active":
        return item.lease
    return replace(item.lease, status=status, closed_at=fact.recorded_at, closed_by=fact.type)


def _set_offer(item: WorkItem, offer_id: str, **changes: Any) -> tuple[Offer, ...]:
    return tuple(
        replace(offer, **changes) if offer.offer == offer_id else offer for offer in item.offers
    )


def _fence(item: WorkItem, fact: Fact) -> WorkItem:
    """Clear the owner (kept as a former owner): its later commands are STALE_OWNERSHIP."""
    if item.owner is None:
        return item
    former = (
        item.former_owners
        if item.owner in item.former_owners
        else (*item.former_owners, item.owner)
    )
    return replace(
        item,
        owner=None,
        former_owners=former,
        lease=_close_lease(item, "revoked", fact),
        start_deadline=None,
        retry_at=None,
    )


def evolve_work_item(current: WorkItem | None, fact: Fact) -> WorkItem:  # noqa: PLR0915
    p = fact.payload
    kind = fact.type
    if kind == "work.authorized":
        item = WorkItem(
            id=p["work_item"],
            mission=p["mission"],
            state=S.OPEN,
            revision=p["revision"],
            contract=p["contract"],
            depends_on=tuple(p.get("depends_on", ())),
            authorized_by=fact.actor,
            proposal=p.get("proposal"),
            proposed_by=p.get("proposed_by"),
        )
        return _with_history(item, fact)
    assert current is not None, f"{kind} for an unknown WorkItem"
    item = current
    if kind == "work.offered":
        superseded = tuple(
            replace(offer, status="superseded") if offer.status == "open" else offer
            for offer in item.offers
        )
        new_offers = tuple(
            Offer(
                offer=o["offer"],
                worker=o["worker"],
                expires_at=o["expires_at"],
                mode=p["mode"],
                rank=rank,
                revision=p["revision"],
            )
            for rank, o in enumerate(p["offers"])
        )
        item = _fence(item, fact)
        item = replace(
            item,
            state=S.OFFERED,
            offers=(*superseded, *new_offers),
            selection_basis=p["selection_basis"],
            start_deadline=None,
            start_window_s=p.get("start_within_s"),
        )
        if p["revision"] != item.revision:  # a corrected contract (R10.1-05)
            item = replace(
                item,
                revision=p["revision"],
                contract=p["contract"],
                approvals=(),
                open_questions=(),
            )
    elif kind == "work.offer_accepted":
        # A new ownership epoch starts with no lease: a lease of an earlier epoch (a fenced
        # owner's) goes to the history, so it can never pass for the new owner's current
        # lease (R11.3-03 binds a lease to its epoch; R11.3-04, R11.3-05).
        history = item.lease_history
        if item.lease is not None:
            history = (*history, item.lease)[-LEASE_HISTORY_LIMIT:]
        item = replace(
            item,
            state=S.QUEUED,
            owner=p["worker"],
            ownership_epoch=p["ownership_epoch"],
            start_deadline=p["start_deadline"],
            offers=_set_offer(item, p["offer"], status="accepted"),
            lease=None,
            lease_history=history,
        )
    elif kind == "work.offer_withdrawn":
        item = replace(
            item, offers=_set_offer(item, p["offer"], status="withdrawn", reason=p["reason"])
        )
    elif kind == "work.offer_rejected":
        item = replace(
            item, offers=_set_offer(item, p["offer"], status="rejected", reason=p["reason"])
        )
    elif kind == "work.message_posted":
        questions = item.open_questions
        if p.get("essential"):
            questions = (*questions, p["message"])
        if p.get("in_reply_to") in questions:
            questions = tuple(q for q in questions if q != p["in_reply_to"])
        item = replace(item, messages=item.messages + 1, open_questions=questions)
    elif kind == "approval.execution_granted":
        item = replace(item, approvals=(*item.approvals, fact.actor))
    elif kind == "work.started":
        lease = p["lease"]
        history = item.lease_history
        if item.lease is not None:
            history = (*history, item.lease)[-LEASE_HISTORY_LIMIT:]
        item = replace(
            item,
            state=S.ACTIVE,
            attempts=item.attempts + 1,
            retry_at=None,
            lease_history=history,
            lease=Lease(
                lease_id=lease["lease_id"],
                agent=lease["agent"],
                session_epoch=lease["session_epoch"],
                ownership_epoch=lease["ownership_epoch"],
                started_at=lease["started_at"],
                expires_at=lease["expires_at"],
            ),
        )
    elif kind == "lease.renewed":
        assert item.lease is not None
        item = replace(
            item,
            lease=replace(
                item.lease,
                expires_at=p["expires_at"],
                renewals=(*item.lease.renewals, fact.recorded_at),
            ),
        )
    elif kind in CHARGE_EVENTS:
        item = replace(item, used=add_usage(item.used, p["usage"]))
    elif kind == "work.checkpointed":
        checkpoint = {**p["checkpoint"], "sequence": fact.sequence, "at": fact.recorded_at}
        if p.get("offline") is not None:  # a reconciled buffered checkpoint (R11.5-12)
            item = replace(item, last_checkpoint=checkpoint)
        else:
            item = replace(
                item,
                state=S.QUEUED,
                lease=_close_lease(item, "released", fact),
                start_deadline=p.get("start_deadline", item.start_deadline),
                last_checkpoint=checkpoint,
            )
    elif kind == "work.blocked":
        item = replace(
            item,
            state=S.BLOCKED,
            lease=_close_lease(item, "released", fact),
            blocked_at=fact.recorded_at,
            last_checkpoint={**p["checkpoint"], "sequence": fact.sequence, "at": fact.recorded_at},
        )
    elif kind == "work.unblocked":
        item = replace(
            item,
            state=p["to"],
            blocked_at=None,
            start_deadline=p.get("start_deadline", item.start_deadline),
        )
        if p["to"] == S.OPEN:
            item = _fence(item, fact)
    elif kind == "work.submitted":
        item = replace(
            item,
            state=S.SUBMITTED,
            lease=_close_lease(item, "released", fact),
            submission={"artifacts": p["artifacts"], "evidence": p["evidence"]},
        )
    elif kind == "work.late_result_recorded":
        entry = {
            "sequence": fact.sequence,
            "recorded_at": fact.recorded_at,
            "former_owner": p["former_owner"],
            "lease_id": p.get("lease_id"),
            "artifacts": p.get("artifacts", []),
        }
        item = replace(
            item,
            late_results=item.late_results + 1,
            late_result_log=(*item.late_result_log, entry)[-LATE_RESULT_LIMIT:],
        )
    elif kind == "evidence.recorded":
        item = replace(
            item, evidence=(*item.evidence, {**p, "producer": p.get("producer", fact.actor)})
        )
    elif kind == "work.result_accepted":
        item = replace(item, state=S.VERIFIED)
    elif kind == "work.failed":
        item = replace(
            item,
            state=S.FAILED,
            lease=_close_lease(item, "revoked", fact),
            start_deadline=None,
            retry_at=None,
        )
    elif kind == "work.cancelled":
        item = replace(
            item,
            state=S.CANCELLED,
            lease=_close_lease(item, "revoked", fact),
            start_deadline=None,
            retry_at=None,
        )
    elif kind == "mission.child_created":
        item = replace(
            item,
            state=S.BLOCKED,
            lease=_close_lease(item, "released", fact),
            child={
                **p["child"],
                "failure_policy": p["failure_policy"],
                "correlation_id": p["correlation_id"],
                "status": "running",
            },
        )
    elif kind == "mission.child_approved":
        assert item.child is not None
        item = replace(
            item,
            state=S.VERIFIED,
            child={**item.child, "status": "approved"},
            evidence=(*item.evidence, p["evidence"]),
        )
    elif kind == "mission.child_failed":
        assert item.child is not None
        item = replace(
            item,
            state=S.FAILED if p["failure_policy"] == "fail_parent" else S.BLOCKED,
            child={**item.child, "status": p["outcome"]},
        )
    elif kind == "lease.expired":
        item = replace(item, lease=_close_lease(item, "expired", fact))
    elif kind == "lease.revoked":
        # R11.3-10: a replaced session's lease; the item waits in ``queued`` for the owner's
        # new runtime, with a fresh start deadline
        item = replace(
            item,
            state=S.QUEUED,
            lease=_close_lease(item, "revoked", fact),
            start_deadline=p["start_deadline"],
        )
    elif kind == "work.reassigned":
        # R11.5-01: the owner is fenced; the next acceptance raises the ownership epoch
        item = _fence(item, fact)
        item = replace(item, state=S.OPEN, blocked_at=None, reassignments=item.reassignments + 1)
    elif kind == "work.retry_scheduled":
        # R11.4-08: the same owner tries again after the backoff
        item = replace(
            item,
            state=S.QUEUED,
            lease=_close_lease(item, "revoked", fact),
            retry_at=p["retry_at"],
            start_deadline=p["start_deadline"],
        )
    elif kind == "capability.issued":
        if item.lease is not None and item.lease.lease_id == p["lease_id"]:
            revoked = (*item.lease.revoked_tokens, *p.get("revokes", ()))
            item = replace(item, lease=replace(item.lease, revoked_tokens=revoked))
    elif kind in ("work.progress_reported",):
        pass
    else:  # pragma: no cover - routes() only sends WorkItem events here
        raise ValueError(f"a WorkItem does not evolve on {kind}")
    return _with_history(item, fact)


def evolve_proposal(current: Proposal | None, fact: Fact) -> Proposal:
    p = fact.payload
    if fact.type == "work.proposed":
        return Proposal(
            id=p["proposal"], title=p["title"], contract=p.get("contract"), proposed_by=fact.actor
        )
    assert current is not None, "work.authorized for an unknown proposal"
    return replace(current, state="authorized", work_item=p["work_item"])


def evolve_graph(current: DependencyGraph | None, fact: Fact) -> DependencyGraph:
    graph = current or DependencyGraph()
    p = fact.payload
    return DependencyGraph({**graph.edges, p["work_item"]: tuple(p.get("depends_on", ()))})


WORK_ITEM_EVENTS = (
    "work.authorized", "work.offered", "work.offer_accepted", "work.offer_withdrawn",
    "work.offer_rejected", "work.message_posted", "approval.execution_granted", "work.started",
    "lease.renewed", "work.progress_reported", "work.usage_recorded", "work.checkpointed",
    "work.blocked", "work.unblocked", "work.submitted", "work.late_result_recorded",
    "evidence.recorded", "work.result_accepted", "work.failed", "work.cancelled",
    "mission.child_created", "mission.child_approved", "mission.child_failed",
    "lease.expired", "lease.revoked", "work.reassigned", "work.retry_scheduled",
    "capability.issued", USAGE_RECORDED, "mission.child_usage_recorded",
)  # fmt: skip


def _routes(payload: dict[str, Any]) -> list[StateKey]:
    return [work_item_key(payload["work_item"])]


def _routes_of_charge(payload: dict[str, Any]) -> list[StateKey]:
    """A usage charge changes the WorkItem and every mission of its ancestry (R11.5-12)."""
    return [
        work_item_key(payload["work_item"]),
        *(("mission", mission) for mission in payload.get("charged_missions", ())),
    ]


def _routes_of_authorized(payload: dict[str, Any]) -> list[StateKey]:
    keys = [work_item_key(payload["work_item"]), GRAPH_KEY, ("mission", payload["mission"])]
    if payload.get("proposal"):
        keys.append(proposal_key(payload["proposal"]))
    return keys


EVENT_ROUTES = {
    **dict.fromkeys(WORK_ITEM_EVENTS, _routes),
    "work.authorized": _routes_of_authorized,
    **dict.fromkeys(CHARGE_EVENTS, _routes_of_charge),
    "work.proposed": lambda payload: [proposal_key(payload["proposal"])],
}
