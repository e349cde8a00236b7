"""The WorkItem aggregate with its offers and leases (wire.md §4), and its state key.

Pure data: how each event changes a WorkItem is in ``item_evolvers``; the commands that
decide those events are the other modules of this package.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from .. import states as S
from ..facts import StateKey
from ..timefmt import format_timestamp, parse_timestamp

#: how long a blocked owner keeps the item before it may be reassigned (R11.4-05)
BLOCKED_LEASE = timedelta(minutes=30)

#: why the authority must act on an item at its ``due`` time (R11.5-01, R11.4-05)
LEASE_EXPIRED = "lease_expired"
START_DEADLINE_MISSED = "start_deadline_missed"
BLOCKED_LEASE_EXPIRED = "blocked_lease_expired"


def work_item_key(work_item: str) -> StateKey:
    return ("work_item", work_item)


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
    """An execution lease (R0-11, R11.3-03): bound to agent, session epoch, item and ownership
    epoch, with a stable id and an expiry."""

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
    #: what the owner's ``work.blocked`` waits for, who blocked and when (R11.4-04): the
    #: screens say it in words; cleared when the item is unblocked or reassigned
    blocked_for: dict[str, Any] | None = None
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
    #: the review of the latest submission (``assessment``: R13.2-03), kept after it
    review: dict[str, Any] | None = None
    #: each kept late result by "<former ownership epoch>:<content digest>" → its sequence:
    #: a repeat is answered without being kept again (R11.5-02, bounded)
    late_result_keys: dict[str, int] = field(default_factory=dict)
    #: every execution decision, granted or refused, with its comment, latest last and
    #: bounded: {principal, decision, comment, revision, sequence, recorded_at} (R10.2-06)
    approval_log: tuple[dict[str, Any], ...] = ()
    #: the current revision's refusal (an entry of ``approval_log``), or None: it holds
    #: ``work.start`` until a corrected contract raises the revision (R10.2-06)
    refusal: dict[str, Any] | None = None
    #: the owner's latest structured progress report, never a percentage (R11.4-01, R11.4-02)
    progress: dict[str, Any] | None = None
    #: the review that verified the item: {by, sequence, recorded_at, verdicts, summary}
    #: (R13.2-03 step 5: the mission's final approval lists it)
    accepted_review: dict[str, Any] | None = None
    #: the latest sending back of a submission: {by, sequence, recorded_at, evidence}
    failed_review: dict[str, Any] | None = None
    #: the current owner's latest schedule disclosure (R11.2-01): the body's fields but
    #: ``work_item``, plus {by, sequence, recorded_at}; cleared when the owner is fenced
    schedule: dict[str, Any] | None = None
    #: who asked each open essential question (message id → principal): its asker never
    #: settles it (R10.1-04, ``questions``); a settled question leaves with it
    question_askers: dict[str, str] = field(default_factory=dict)
    #: the urgency and deadline changes since authorisation, oldest first and bounded:
    #: {urgency, deadline, previous {urgency, deadline}, reason, by, sequence, recorded_at}
    #: (R0-12, R11.3-11; ``priorities``). The contract holds the current values.
    priority_changes: tuple[dict[str, Any], ...] = ()
    #: the failed or cancelled WorkItem this one replaces, and the one that replaced this one:
    #: a dependency on a replaced item waits for its replacement (R10.2-21)
    replaces: str | None = None
    replaced_by: str | None = None
    #: dependencies that ended failed or cancelled before this item started, so it cannot
    #: start until a coordinator acts (R10.2-20, R10.2-21): {dependency, outcome, reason,
    #: sequence, recorded_at}; an entry goes when its dependency is offered again or replaced
    #: (``dependents``)
    ended_dependencies: tuple[dict[str, Any], ...] = ()
    #: the owner stopped on purpose (a checkpoint's release, a block, a replaced session), so
    #: its next ``work.started`` resumes the same attempt rather than spending a new one
    resumes_attempt: bool = False
    #: named people asked to act, oldest first and bounded: {for, asked, by, note, revision,
    #: submission, sequence, recorded_at} (R10.2-06, R13.2-03; ``asks``)
    asks: tuple[dict[str, Any], ...] = ()

    @property
    def limits(self) -> dict[str, Any]:
        return dict(self.contract.get("budgets", {}))

    def next_attempt(self) -> int:
        """The attempt a ``work.started`` now would run: the current one when it resumes after
        a deliberate stop, else a fresh one. A retry policy's ``max_attempts`` counts fresh
        attempts only, so a block, a preemption or a replaced session never uses one up
        (R11.4-08, R11.4-04, R11.3-10)."""
        if self.resumes_attempt and self.attempts > 0:
            return self.attempts
        return self.attempts + 1

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
        protected (R10.2-15), and so is a refused revision's queue place: it waits for a
        corrected contract or a cancel, not for another worker (R10.2-06, issue 34). Sweeps
        select on this time, copied to an indexed column.
        """
        if self.owner is None:
            return None
        if self.state == S.QUEUED and self.refusal is not None:
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
            "blocked_for": self.blocked_for,
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
            "review": self.review,
            "late_result_keys": dict(self.late_result_keys),
            "approval_log": list(self.approval_log),
            "refusal": self.refusal,
            "progress": self.progress,
            "accepted_review": self.accepted_review,
            "failed_review": self.failed_review,
            "schedule": self.schedule,
            "question_askers": dict(self.question_askers),
            "priority_changes": list(self.priority_changes),
            "execution_refused": self.execution_refused(),
            "replaces": self.replaces,
            "replaced_by": self.replaced_by,
            "ended_dependencies": list(self.ended_dependencies),
            "resumes_attempt": self.resumes_attempt,
            "asks": list(self.asks),
        }

    def execution_refused(self) -> dict[str, Any] | None:
        """The current revision's refusal in a screen's words — who refused, why, when — or
        ``None`` (R10.2-06): the item waits for a corrected contract or a cancel."""
        if self.refusal is None:
            return None
        return {
            "by": self.refusal["principal"],
            "reason": self.refusal["comment"],
            "at": self.refusal["recorded_at"],
            "revision": self.refusal["revision"],
            "waits_for": "corrected_contract",
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
            blocked_for=data.get("blocked_for"),
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
            review=data.get("review"),
            late_result_keys=dict(data.get("late_result_keys", {})),
            approval_log=tuple(data.get("approval_log", ())),
            refusal=data.get("refusal"),
            progress=data.get("progress"),
            accepted_review=data.get("accepted_review"),
            failed_review=data.get("failed_review"),
            schedule=data.get("schedule"),
            question_askers=dict(data.get("question_askers", {})),
            priority_changes=tuple(data.get("priority_changes", ())),
            replaces=data.get("replaces"),
            replaced_by=data.get("replaced_by"),
            ended_dependencies=tuple(data.get("ended_dependencies", ())),
            resumes_attempt=data.get("resumes_attempt", False),
            asks=tuple(data.get("asks", ())),
        )
