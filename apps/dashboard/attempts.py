"""The WorkItem page's "Attempts" card (issue 37 §4): every offer, every lease and every
attempt of one item with how each ended, as Temporal's Web UI shows an activity's pending
attempts — and, for a retry waiting out its backoff, when the next attempt may start and
the last failure in plain words.

Pure shaping: the item's projection (``offers``, ``lease_history``, ``lease``, ``attempts``,
``retry_at``) and the documents of the events its projection lists (its bounded
``history``, which ``work.work_item_page`` reads by sequence anyway) go in; rows of words come
out. The projection keeps the latest ``HISTORY_LIMIT`` events of an item, so an item with a
longer past says "earlier attempts not shown" rather than reading the group's log.

Attempt numbers are the protocol's own (``work.started``'s ``attempt``, counted by
``WorkItem.next_attempt``): a start that resumes after a checkpoint, a block or a replaced
session continues its attempt (docs/protocol.md "What counts as an attempt"), so one attempt
may hold several leases.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.utils import timezone

from missionweave.protocol.timefmt import parse_timestamp
from missionweave.protocol.work.items import Lease
from missionweave.protocol.work.items import WorkItem as WorkItemState

from .event_words import REASONS, REJECTIONS
from .work_item_cards import Countdown

#: how a closed lease ended, by the event that closed it: (kind, words)
LEASE_ENDINGS = {
    "work.submitted": ("completed", "completed: the result was submitted"),
    "work.checkpointed": ("released", "released at a checkpoint"),
    "work.blocked": ("released", "released: the worker was blocked"),
    "mission.child_created": ("released", "released: it waits for a child mission"),
    "lease.expired": ("expired", "expired without a renewal"),
    "lease.revoked": ("revoked", "revoked"),
    "work.retry_scheduled": ("revoked", "revoked: the attempt failed"),
    "work.failed": ("revoked", "revoked: the item failed"),
    "work.cancelled": ("revoked", "revoked: the item was cancelled"),
    "work.reassigned": ("revoked", "revoked: the item was reassigned"),
    "work.offered": ("revoked", "revoked: the item was offered again"),
    "work.unblocked": ("revoked", "revoked: the item was handed back"),
}

#: what an attempt's outcome is called, by kind (the chip on each attempt)
OUTCOMES = {
    "running": "running",
    "waiting": "waiting to resume",
    "submitted": "submitted",
    "failed": "failed",
    "preempted": "paused at a checkpoint",
    "blocked": "blocked",
    "reassigned": "reassigned",
    "cancelled": "cancelled",
    "child": "waiting for a child mission",
}


def _now() -> datetime:
    """The clock countdowns start from (a seam for tests)."""
    return timezone.now()


def duration_words(seconds: float) -> str:
    """ "40 s", "4 min", "2 h 5 min", "3 days": how long a lease was held, roughly."""
    seconds = max(int(seconds), 0)
    if seconds < 60:
        return f"{seconds} s"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    return f"{hours // 24} days"


def times(count: int) -> str:
    """How often, as a person says it: once, twice, 3 times."""
    return {1: "once", 2: "twice"}.get(count, f"{count} times")


def _between(start: str | None, end: str | None) -> str:
    try:
        return duration_words((parse_timestamp(end) - parse_timestamp(start)).total_seconds())
    except (TypeError, ValueError):
        return ""


def failure_words(payload: Mapping[str, Any]) -> str:
    """Why an attempt failed, from the evidence its ``work.fail`` carried: the summaries of
    the failing verdicts (of any verdict, when none failed), or a plain "no reason given"."""
    evidence = [e for e in payload.get("evidence") or () if isinstance(e, Mapping)]
    summaries: list[str] = []
    failing = [e for e in evidence if (e.get("result") or {}).get("verdict") == "fail"]
    for entry in failing or evidence:
        result = entry.get("result") or {}
        summary = result.get("summary") if isinstance(result, Mapping) else None
        if isinstance(summary, str) and summary.strip() and summary not in summaries:
            summaries.append(" ".join(summary.split()))
    return "; ".join(summaries) or "no reason given"


# --- rows ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class OfferRow:
    """One offer to one worker: when it was made and how it was answered."""

    offer: str
    worker: str
    offered_at: str | None
    expires_at: str
    status: str  # waiting, accepted, declined, expired, withdrawn, replaced
    words: str  # "declined: no capacity"
    answered_at: str | None = None
    expiry: Countdown | None = None  # an offer still waiting for its answer
    sequence: int | None = None

    @property
    def technical(self) -> list[tuple[str, str]]:
        return [("offer", self.offer), ("worker", self.worker), ("expires at", self.expires_at)]


@dataclass(frozen=True)
class LeaseRow:
    """One execution lease: who held it, from when, its renewals, and how it ended."""

    lease_id: str
    holder: str
    started_at: str
    expires_at: str
    renewals: int
    last_renewed: str | None
    ended: str  # active, released, expired, revoked, completed
    words: str  # "released at a checkpoint"
    closed_at: str | None = None
    closed_by: str | None = None
    expiry: Countdown | None = None  # the active lease's

    @property
    def renewed_text(self) -> str:
        return times(self.renewals)

    @property
    def held_for(self) -> str:
        return _between(self.started_at, self.closed_at) if self.closed_at else ""

    @property
    def technical(self) -> list[tuple[str, str]]:
        rows = [("lease", self.lease_id), ("holder", self.holder), ("expires at", self.expires_at)]
        if self.closed_by:
            rows.append(("ended by", self.closed_by))
        return rows


@dataclass
class AttemptRow:
    """One attempt: its number, who ran it, its leases (several when it resumed) and how it
    ended. Built oldest event first, so it is mutable while the walk runs."""

    number: int | None
    worker: str
    started_at: str | None
    lease_ids: list[str] = field(default_factory=list)
    resumed: int = 0  # starts that continued it after a checkpoint, a block or a new session
    outcome: str = "running"  # a key of OUTCOMES
    reason: str = ""  # the failure, the reassignment's cause, what the block waits for
    after: str = ""  # what happened to its result afterwards
    ended_at: str | None = None
    events: list[tuple[int, str]] = field(default_factory=list)
    leases: tuple[LeaseRow, ...] = ()

    @property
    def resumed_text(self) -> str:
        return times(self.resumed)

    @property
    def outcome_text(self) -> str:
        return OUTCOMES.get(self.outcome, self.outcome)

    @property
    def ended(self) -> bool:
        return self.outcome not in ("running", "waiting", "preempted", "blocked", "child")


@dataclass(frozen=True)
class PendingRetry:
    """A retry waiting out its backoff (R11.4-08): ``work.start`` is refused before then."""

    attempt: int
    max_attempts: int
    retry_at: Countdown
    last_failure: str  # "" when the failure is older than the events the page reads
    failed_attempt: int | None


@dataclass(frozen=True)
class AttemptsCard:
    offers: tuple[OfferRow, ...]  # oldest first
    attempts: tuple[AttemptRow, ...]  # newest first
    pending: PendingRetry | None
    attempts_used: int  # fresh attempts the protocol counted (``WorkItem.attempts``)
    max_attempts: int
    #: the item's past is longer than the events its projection keeps: earlier offers,
    #: leases and attempts are not shown
    capped: bool

    @property
    def principals(self) -> set[str]:
        named = {offer.worker for offer in self.offers}
        named |= {attempt.worker for attempt in self.attempts}
        named |= {lease.holder for attempt in self.attempts for lease in attempt.leases}
        return {principal for principal in named if principal}

    @property
    def empty(self) -> bool:
        return not self.offers and not self.attempts


# --- the walk ------------------------------------------------------------------------------


class _Walk:
    """Reads the item's events oldest first into offers and attempts."""

    def __init__(self, item: WorkItemState, now: datetime) -> None:
        self.item = item
        self.now = now
        self.offers: dict[str, dict[str, Any]] = {}
        self.attempts: list[AttemptRow] = []
        self.lease_started: dict[str, dict[str, Any]] = {}
        self.lease_renewals: dict[str, list[str]] = {}
        self.lease_ends: dict[str, tuple[str, str]] = {}  # lease -> (closed_by, at)
        self.last_failure: tuple[int | None, str] | None = None

    @property
    def open_attempt(self) -> AttemptRow | None:
        latest = self.attempts[-1] if self.attempts else None
        return latest if latest is not None and not latest.ended else None

    def _close_lease(self, type_: str, at: str | None) -> None:
        attempt = self.open_attempt
        if attempt is None or not attempt.lease_ids:
            return
        lease = attempt.lease_ids[-1]
        if lease not in self.lease_ends:
            self.lease_ends[lease] = (type_, at or "")

    def _end(self, outcome: str, at: str | None, reason: str = "") -> None:
        attempt = self.open_attempt
        if attempt is None:
            return
        attempt.outcome, attempt.reason, attempt.ended_at = outcome, reason, at

    def read(self, document: Mapping[str, Any]) -> None:
        type_ = str(document.get("type") or "")
        payload = document.get("payload") or {}
        at = document.get("recorded_at")
        sequence = document.get("sequence")
        attempt = self.open_attempt
        if attempt is not None and isinstance(sequence, int) and type_ != "work.started":
            attempt.events.append((sequence, type_))
        handler = _HANDLERS.get(type_)
        if handler is not None and isinstance(payload, Mapping):
            handler(self, payload, at, sequence)

    # offers (R10.2-03..05, R10.3)

    def _work_offered(self, p: Mapping[str, Any], at: str | None, sequence: object) -> None:
        if self.open_attempt is not None:  # the coordinator took it back and offered it again
            self._close_lease("work.offered", at)
            self._end("reassigned", at, "the coordinator offered it again")
        for offer in self.offers.values():
            if offer["status"] == "waiting":
                offer["status"], offer["answered_at"] = "replaced", at
        for entry in p.get("offers") or ():
            if isinstance(entry, Mapping) and entry.get("offer"):
                self.offers[str(entry["offer"])] = {
                    "worker": str(entry.get("worker") or ""),
                    "offered_at": at,
                    "expires_at": str(entry.get("expires_at") or ""),
                    "status": "waiting",
                    "answered_at": None,
                    "reason": "",
                    "sequence": sequence,
                }

    def _answer(self, p: Mapping[str, Any], at: str | None, status: str, reason: str = "") -> None:
        offer = self.offers.get(str(p.get("offer") or ""))
        if offer is not None:
            offer.update(status=status, answered_at=at, reason=reason)

    def _work_offer_accepted(self, p: Mapping[str, Any], at: str | None, _s: object) -> None:
        self._answer(p, at, "accepted")

    def _work_offer_rejected(self, p: Mapping[str, Any], at: str | None, _s: object) -> None:
        code = str(p.get("reason") or "")
        reason = REJECTIONS.get(code, code.replace("_", " "))
        detail = " ".join(str(p.get("detail") or "").split())
        self._answer(p, at, "declined", f"{reason} ({detail})" if detail else reason)

    def _work_offer_withdrawn(self, p: Mapping[str, Any], at: str | None, _s: object) -> None:
        taken = p.get("reason") == "accepted_by_another"
        self._answer(p, at, "withdrawn", "someone else took it" if taken else "")

    # attempts and leases (R10.2-07..11, R11.3, R11.4-08)

    def _work_started(self, p: Mapping[str, Any], at: str | None, sequence: object) -> None:
        lease = p.get("lease") or {}
        lease_id = str(lease.get("lease_id") or "")
        number = p.get("attempt") if isinstance(p.get("attempt"), int) else None
        worker = str(lease.get("agent") or self.item.owner or "")
        latest = self.attempts[-1] if self.attempts else None
        resumes = (
            latest is not None
            and latest.outcome in ("waiting", "preempted", "blocked", "child")
            and latest.worker == worker
            and (number is None or number == latest.number)
        )
        if resumes and latest is not None:
            latest.resumed += 1
            latest.outcome, latest.reason, latest.ended_at = "running", "", None
            attempt = latest
        else:
            if number is None:
                known = [a.number for a in self.attempts if a.number is not None]
                number = (known[-1] + 1) if known else None
            attempt = AttemptRow(number=number, worker=worker, started_at=at)
            self.attempts.append(attempt)
        if isinstance(sequence, int):
            attempt.events.append((sequence, "work.started"))
        if lease_id:
            attempt.lease_ids.append(lease_id)
            self.lease_started[lease_id] = dict(lease)

    def _lease_renewed(self, p: Mapping[str, Any], at: str | None, _s: object) -> None:
        attempt = self.open_attempt
        if attempt is not None and attempt.lease_ids and at:
            self.lease_renewals.setdefault(attempt.lease_ids[-1], []).append(at)

    def _work_checkpointed(self, p: Mapping[str, Any], at: str | None, _s: object) -> None:
        if p.get("offline") is not None:  # a reconciled buffered checkpoint moves nothing
            return
        self._close_lease("work.checkpointed", at)
        ref = ((p.get("checkpoint") or {}).get("ref")) or ""
        self._end("preempted", at, f"checkpoint {ref}" if ref else "")

    def _work_blocked(self, p: Mapping[str, Any], at: str | None, _s: object) -> None:
        self._close_lease("work.blocked", at)
        self._end("blocked", at, " ".join(str(p.get("required_resolution") or "").split()))

    def _mission_child_created(self, p: Mapping[str, Any], at: str | None, _s: object) -> None:
        self._close_lease("mission.child_created", at)
        self._end("child", at)

    def _work_unblocked(self, p: Mapping[str, Any], at: str | None, _s: object) -> None:
        if p.get("to") == "open":
            self._end("reassigned", at, "it was handed back to be offered again")

    def _work_submitted(self, p: Mapping[str, Any], at: str | None, _s: object) -> None:
        self._close_lease("work.submitted", at)
        self._end("submitted", at)

    def _work_retry_scheduled(self, p: Mapping[str, Any], at: str | None, _s: object) -> None:
        self._close_lease("work.retry_scheduled", at)
        reason = failure_words(p)
        attempt = self.open_attempt
        self.last_failure = (attempt.number if attempt else None, reason)
        self._end("failed", at, reason)

    def _work_failed(self, p: Mapping[str, Any], at: str | None, _s: object) -> None:
        reason = failure_words(p)
        exhausted = {
            "attempts": "no attempts are left",
            "deadline": "a retry would start after the deadline",
            "cost": "the budget allows no retry",
            "permanent": "the worker said retrying would not help",
        }.get(str(p.get("retries_exhausted") or ""))
        if self.open_attempt is not None:
            self._close_lease("work.failed", at)
            self.last_failure = (self.open_attempt.number, reason)
            self._end("failed", at, f"{reason}; {exhausted}" if exhausted else reason)
        elif self.attempts and self.attempts[-1].outcome == "submitted":
            self.attempts[-1].after = f"its result was sent back: {reason}"

    def _work_result_accepted(self, p: Mapping[str, Any], at: str | None, _s: object) -> None:
        if self.attempts and self.attempts[-1].outcome == "submitted":
            self.attempts[-1].after = "its result was accepted"

    def _work_cancelled(self, p: Mapping[str, Any], at: str | None, _s: object) -> None:
        self._close_lease("work.cancelled", at)
        self._end("cancelled", at)

    def _lease_expired(self, p: Mapping[str, Any], at: str | None, _s: object) -> None:
        self._close_lease("lease.expired", at)

    def _lease_revoked(self, p: Mapping[str, Any], at: str | None, _s: object) -> None:
        self._close_lease("lease.revoked", at)
        if p.get("reason") == "session_replaced":
            self._end("waiting", at, REASONS["session_replaced"])

    def _work_reassigned(self, p: Mapping[str, Any], at: str | None, _s: object) -> None:
        self._close_lease("work.reassigned", at)
        code = str(p.get("reason") or "")
        self._end("reassigned", at, REASONS.get(code, code.replace("_", " ")))

    # rows

    def offer_rows(self) -> tuple[OfferRow, ...]:
        kept = {offer.offer: offer for offer in self.item.offers}
        rows = []
        for offer_id, seen in self.offers.items():
            status, reason = seen["status"], seen["reason"]
            projected = kept.get(offer_id)
            if status == "waiting" and projected is not None and projected.status != "open":
                status = {"rejected": "declined", "superseded": "replaced"}.get(
                    projected.status, projected.status
                )
            expiry = None
            expired = _passed(seen["expires_at"], seen["answered_at"] or self.now)
            if status in ("waiting", "replaced") and expired:
                status = "expired"
            elif status == "waiting":
                expiry = Countdown(seen["expires_at"], self.now)
            rows.append(
                OfferRow(
                    offer=offer_id,
                    worker=seen["worker"],
                    offered_at=seen["offered_at"],
                    expires_at=seen["expires_at"],
                    status=status,
                    words=_offer_words(status, reason),
                    answered_at=seen["answered_at"] if status != "expired" else None,
                    expiry=expiry,
                    sequence=seen["sequence"] if isinstance(seen["sequence"], int) else None,
                )
            )
        return tuple(rows)

    def lease_row(self, lease_id: str) -> LeaseRow:
        projected = self.item.lease_named(lease_id)
        started = self.lease_started.get(lease_id, {})
        renewals = self.lease_renewals.get(lease_id, [])
        closed_by, closed_at = self.lease_ends.get(lease_id, (None, None))
        if projected is not None:
            return _lease_row(projected, self.now, closed_by, closed_at)
        ended, words = LEASE_ENDINGS.get(closed_by or "", ("active", "held"))
        return LeaseRow(
            lease_id=lease_id,
            holder=str(started.get("agent") or ""),
            started_at=str(started.get("started_at") or ""),
            expires_at=str(started.get("expires_at") or ""),
            renewals=len(renewals),
            last_renewed=renewals[-1] if renewals else None,
            ended=ended if closed_by else "active",
            words=words,
            closed_at=closed_at or None,
            closed_by=closed_by,
        )


#: the events that move an offer, a lease or an attempt; every other event of the item is
#: only listed in its attempt's technical details
_HANDLERS: dict[str, Callable[[_Walk, Mapping[str, Any], str | None, object], None]] = {
    "work.offered": _Walk._work_offered,
    "work.offer_accepted": _Walk._work_offer_accepted,
    "work.offer_rejected": _Walk._work_offer_rejected,
    "work.offer_withdrawn": _Walk._work_offer_withdrawn,
    "work.started": _Walk._work_started,
    "lease.renewed": _Walk._lease_renewed,
    "work.checkpointed": _Walk._work_checkpointed,
    "work.blocked": _Walk._work_blocked,
    "mission.child_created": _Walk._mission_child_created,
    "work.unblocked": _Walk._work_unblocked,
    "work.submitted": _Walk._work_submitted,
    "work.retry_scheduled": _Walk._work_retry_scheduled,
    "work.failed": _Walk._work_failed,
    "work.result_accepted": _Walk._work_result_accepted,
    "work.cancelled": _Walk._work_cancelled,
    "lease.expired": _Walk._lease_expired,
    "lease.revoked": _Walk._lease_revoked,
    "work.reassigned": _Walk._work_reassigned,
}


def _passed(target: str, moment: str | datetime) -> bool:
    try:
        when = moment if isinstance(moment, datetime) else parse_timestamp(moment)
        return parse_timestamp(target) <= when
    except (TypeError, ValueError):
        return False


def _offer_words(status: str, reason: str) -> str:
    words = {
        "waiting": "waiting for an answer",
        "accepted": "accepted",
        "declined": "declined",
        "expired": "expired unanswered",
        "withdrawn": "withdrawn",
        "replaced": "replaced by a newer offer before an answer",
    }.get(status, status)
    return f"{words}: {reason}" if reason else words


def _lease_row(
    lease: Lease, now: datetime, closed_by: str | None, closed_at: str | None
) -> LeaseRow:
    """A lease as the projection keeps it (renewals survive a history window that lost
    their events); the event walk only says how it ended when the projection does not."""
    closer = lease.closed_by or closed_by
    if lease.status == "active":
        ended, words = "active", "held"
    else:
        ended, words = LEASE_ENDINGS.get(closer or "", (lease.status, lease.status))
        if ended != "completed":
            ended = lease.status  # the projection's word: released, expired, revoked
    return LeaseRow(
        lease_id=lease.lease_id,
        holder=lease.agent,
        started_at=lease.started_at,
        expires_at=lease.expires_at,
        renewals=len(lease.renewals),
        last_renewed=lease.renewals[-1] if lease.renewals else None,
        ended=ended,
        words=words,
        closed_at=lease.closed_at or closed_at,
        closed_by=closer,
        expiry=Countdown(lease.expires_at, now) if lease.status == "active" else None,
    )


def attempts_card(
    item: WorkItemState,
    documents: Iterable[Mapping[str, Any]],
    *,
    complete: bool,
    now: datetime | None = None,
) -> AttemptsCard:
    """The card for ``item`` from the documents of its events, oldest first.

    ``complete`` says the documents reach back to the item's authorisation: when they do
    not, the card says earlier attempts are not shown.
    """
    now = now or _now()
    walk = _Walk(item, now)
    for document in documents:
        walk.read(document)
    attempts = []
    for attempt in walk.attempts:
        attempt.leases = tuple(walk.lease_row(lease_id) for lease_id in attempt.lease_ids)
        lease_active = item.lease is not None and item.lease.status == "active"
        if attempt.outcome == "running" and not lease_active and attempt.leases:
            attempt.outcome = "waiting"  # a close the window did not hold
        attempts.append(attempt)
    retry = item.contract.get("retry") or {}
    max_attempts = int(retry.get("max_attempts", 1))
    pending = None
    if item.retry_at:
        failed_attempt, last_failure = walk.last_failure or (None, "")
        pending = PendingRetry(
            attempt=item.next_attempt(),
            max_attempts=max_attempts,
            retry_at=Countdown(item.retry_at, now, "due now"),
            last_failure=last_failure,
            failed_attempt=failed_attempt,
        )
    return AttemptsCard(
        offers=walk.offer_rows(),
        attempts=tuple(reversed(attempts)),
        pending=pending,
        attempts_used=item.attempts,
        max_attempts=max_attempts,
        capped=not complete,
    )
