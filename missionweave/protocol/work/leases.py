"""What the authority does with leases over time: reassignment after a missed start deadline,
an expired execution lease or an outstayed blocked lease (R11.5-01, R11.3-09, R11.4-05), the
revocation of a replaced session's leases (R11.3-10), and retry backoff (R11.4-08).

These are *authority* commands: Celery sweeps and session opening submit them through the same
write path as any client, with deterministic command ids, so running one twice — two beats,
a retried task — appends nothing the second time. Each re-checks its condition on the
authority clock under the group lock: a sweep that read a stale candidate is refused
(``ILLEGAL_TRANSITION``) and changes nothing.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Any

from .. import states as S
from ..canonical import digest
from ..errors import ErrorCode, ProtocolError
from ..facts import Command, Decision, NewEvent, View
from ..timefmt import format_timestamp, parse_timestamp
from ..validation import check_choice, check_fields, check_id, malformed
from .checks import require_item, start_deadline_for
from .items import BLOCKED_LEASE_EXPIRED, LEASE_EXPIRED, START_DEADLINE_MISSED, WorkItem

REASSIGN = "work.reassign"
REVOKE = "lease.revoke"
REASONS = (LEASE_EXPIRED, START_DEADLINE_MISSED, BLOCKED_LEASE_EXPIRED)
#: why a reassignment (and a lease revocation) followed a revoked membership (wire.md §4)
MEMBERSHIP_REVOKED = "membership_revoked"
#: how long the authority's re-offer to the next eligible worker stays open
REOFFER_WINDOW = timedelta(minutes=10)


def reassign_command_id(work_item: str, ownership_epoch: int) -> str:
    """Once per ownership epoch: a reassignment fences that epoch for good (R11.5-01)."""
    return f"reassign:{digest({'w': work_item, 'e': ownership_epoch})[7:47]}"


def revoke_command_id(lease_id: str, session_epoch: int) -> str:
    return f"revoke:{lease_id}:{session_epoch}"


def _positive_int(value: object, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise malformed("expected a positive integer", path)
    return value


# --- work.reassign (authority) -------------------------------------------------------------


def validate_reassign(body: dict[str, Any]) -> None:
    check_fields(body, required=("work_item", "ownership_epoch", "reason"))
    check_id(body["work_item"], "$.work_item")
    _positive_int(body["ownership_epoch"], "$.ownership_epoch")
    check_choice(body["reason"], REASONS, "$.reason")


def _not_due(item: WorkItem, message: str) -> ProtocolError:
    return ProtocolError(
        ErrorCode.ILLEGAL_TRANSITION,
        message,
        requirement="R11.5-01",
        details={"work_item": item.id, "state": item.state, "due": item.due()},
    )


def next_eligible_worker(item: WorkItem) -> str | None:
    """The coordinator's standing policy (R11.5-01): the next worker the coordinator offered
    this revision to, in offer order, who neither held it before nor rejected it — nobody
    for a refused revision, which waits for a corrected contract (R10.2-06)."""
    if item.refusal is not None:
        return None
    excluded = {*item.former_owners, item.owner}
    rejected = {o.worker for o in item.offers if o.status == "rejected"}
    for offer in item.offers:
        if offer.revision != item.revision:
            continue
        if offer.worker in excluded or offer.worker in rejected:
            continue
        return offer.worker
    return None


def decide_reassign(view: View, command: Command) -> Decision:
    body = command.body
    item = require_item(view, body["work_item"])
    S.require_state(command.type, item.state, work_item=item.id)
    due = item.due()
    if item.ownership_epoch != body["ownership_epoch"] or due is None or due[1] != body["reason"]:
        raise _not_due(item, f"{item.id} is not waiting for a {body['reason']} reassignment")
    if parse_timestamp(due[0]) > command.now:
        raise _not_due(item, f"{item.id} is not due before {due[0]}")
    events: list[NewEvent] = []
    lease = item.lease
    if body["reason"] == LEASE_EXPIRED and lease is not None:
        events.append(
            NewEvent(
                "lease.expired",
                {
                    "work_item": item.id,
                    "lease_id": lease.lease_id,
                    "agent": lease.agent,
                    "ownership_epoch": lease.ownership_epoch,
                    "expires_at": lease.expires_at,
                },
            )
        )
    reassigned, result = reassignment_events(item, body["reason"], command.now)
    return Decision([*events, *reassigned], result)


def reassignment_events(
    item: WorkItem, reason: str, now: datetime
) -> tuple[list[NewEvent], dict[str, Any]]:
    """``work.reassigned``, then ``work.offered`` to the next eligible worker if there is one
    (R11.5-01): the same move after an expired lease, a missed start deadline, an outstayed
    blocked lease or the owner's membership revocation (wire.md §4)."""
    lease = item.lease
    worker = next_eligible_worker(item)
    events = [
        NewEvent(
            "work.reassigned",
            {
                "work_item": item.id,
                "reason": reason,
                "from_owner": item.owner,
                "ownership_epoch": item.ownership_epoch,
                "lease_id": lease.lease_id if lease is not None else None,
                "resume_from": item.last_checkpoint,
                "offered_to": worker,
            },
        )
    ]
    result: dict[str, Any] = {"work_item": item.id, "offered_to": worker}
    if worker is not None:
        offer_id = "reoffer-" + digest({"w": item.id, "e": item.ownership_epoch})[7:31]
        expires_at = format_timestamp(now + REOFFER_WINDOW)
        basis = dict(item.selection_basis or {})
        basis["policy_rules"] = ["R11.5-01: reassigned to the next offered worker", reason]
        offered: dict[str, Any] = {
            "work_item": item.id,
            "offers": [{"offer": offer_id, "worker": worker, "expires_at": expires_at}],
            "mode": "sequential",
            "selection_basis": basis,
            "revision": item.revision,
        }
        if item.start_window_s is not None:
            offered["start_within_s"] = item.start_window_s
        events.append(NewEvent("work.offered", offered))
        result["offer"] = offer_id
    return events, result


# --- fencing a revoked member's work (wire.md §4, membership changes) -----------------------


def fenced_by_revocation(item: WorkItem, principal: str) -> bool:
    """Whether revoking ``principal`` must take ``item`` back at once: it owns the item and
    either holds its active lease or waits, queued, to start it (R11.5-01, R11.3-07)."""
    if item.owner != principal:
        return False
    if item.state == S.ACTIVE:
        return item.lease is not None and item.lease.status == "active"
    return item.state == S.QUEUED


def revocation_events(
    item: WorkItem, principal: str, membership_epoch: int, now: datetime
) -> list[NewEvent]:
    """What a membership revocation appends for one item the member owns, right after
    ``membership.revoked``: ``lease.revoked`` for an active lease — its capability tokens then
    fail ``capabilities:check`` (R11.3-06..08) — then the reassignment of an expired lease
    (R11.5-01) with reason ``membership_revoked``, so nothing waits for the sweep."""
    events: list[NewEvent] = []
    lease = item.lease
    if item.state == S.ACTIVE and lease is not None and lease.status == "active":
        events.append(
            NewEvent(
                "lease.revoked",
                {
                    "work_item": item.id,
                    "lease_id": lease.lease_id,
                    "agent": lease.agent,
                    "reason": MEMBERSHIP_REVOKED,
                    "session_epoch": lease.session_epoch,
                    "membership_epoch": membership_epoch,
                    "start_deadline": None,
                },
            )
        )
    reassigned, _result = reassignment_events(item, MEMBERSHIP_REVOKED, now)
    return [*events, *reassigned]


# --- lease.revoke (authority, on session replacement) ------------------------------------


def validate_revoke(body: dict[str, Any]) -> None:
    check_fields(body, required=("work_item", "lease_id", "session_epoch"))
    check_id(body["work_item"], "$.work_item")
    check_id(body["lease_id"], "$.lease_id")
    _positive_int(body["session_epoch"], "$.session_epoch")


def decide_revoke(view: View, command: Command) -> Decision:
    """R11.3-10: a new session revokes the agent's active leases and re-queues the items."""
    body = command.body
    item = require_item(view, body["work_item"])
    lease = item.lease
    if lease is None or lease.lease_id != body["lease_id"] or lease.status != "active":
        raise ProtocolError(
            ErrorCode.ILLEGAL_TRANSITION,
            f"lease {body['lease_id']} of {item.id} is not active",
            requirement="R11.3-10",
            details={"work_item": item.id},
        )
    S.require_state(command.type, item.state, work_item=item.id)
    if lease.session_epoch is not None and lease.session_epoch >= body["session_epoch"]:
        raise ProtocolError(
            ErrorCode.ILLEGAL_TRANSITION,
            f"lease {lease.lease_id} belongs to session epoch {lease.session_epoch}, not older",
            requirement="R11.3-10",
            details={"work_item": item.id},
        )
    payload = {
        "work_item": item.id,
        "lease_id": lease.lease_id,
        "agent": lease.agent,
        "reason": "session_replaced",
        "session_epoch": lease.session_epoch,
        "replaced_by_session_epoch": body["session_epoch"],
        "start_deadline": start_deadline_for(item, command.now),
    }
    return Decision([NewEvent("lease.revoked", payload)], {"work_item": item.id})


# --- retries (R11.4-08..10) ----------------------------------------------------------------


def retry_plan(item: WorkItem, now: datetime) -> tuple[dict[str, Any] | None, str]:
    """The next automatic attempt, or ``None`` with the reason retries are exhausted.

    Bounded by the contract's attempts, backoff, cost and deadline (R11.4-08): attempt n+1
    waits ``initial_backoff_s × multiplier^(n-1)``, capped at ``max_backoff_s``; no retry
    would start after the deadline or with the money budget spent, nor past the contract's
    ``cost_policy`` (``_past_cost_policy``).
    """
    policy = item.contract.get("retry") or {}
    max_attempts = policy.get("max_attempts", 1)
    if item.attempts >= max_attempts:
        return None, "attempts"
    backoff = _backoff_s(policy, item.attempts)
    try:
        retry_at = now + timedelta(seconds=backoff)
    except OverflowError:
        # a valid policy may ask for more than any representable time (max_backoff_s has no
        # upper bound): such a retry never starts before the contract's deadline (year ≤ 9999)
        return None, "deadline"
    deadline = item.contract.get("deadline")
    if deadline is not None and retry_at >= parse_timestamp(deadline):
        return None, "deadline"
    money = item.limits.get("money")
    if money is not None and item.used.get("money", 0) >= money:
        return None, "cost"
    if _past_cost_policy(item):
        return None, "cost"
    start_deadline = start_deadline_for(item, retry_at)
    return {
        "attempt": item.attempts + 1,
        "max_attempts": max_attempts,
        "backoff_s": backoff,
        "retry_at": format_timestamp(retry_at),
        "start_deadline": start_deadline,
    }, ""


def _past_cost_policy(item: WorkItem) -> bool:
    """R10.1-01(h): with ``cost_policy.retry_below`` (a share of each budget), no retry
    starts once any budgeted dimension is used to that share of its limit, so a failing
    item does not spend the rest of its budget on attempts likely to fail again."""
    share = (item.contract.get("cost_policy") or {}).get("retry_below")
    if share is None:
        return False
    # a zero limit (no side effects allowed) is never "used to its share": nothing was used
    return any(
        limit > 0 and item.used.get(dimension, 0) >= share * limit
        for dimension, limit in item.limits.items()
    )


def _backoff_s(policy: dict[str, Any], attempts: int) -> float:
    """``initial × multiplier^(attempts-1)`` capped at ``max_backoff_s``; a power too large
    for a float is simply "more than the cap" (never an ``OverflowError``, so never a 5xx)."""
    initial = float(policy.get("initial_backoff_s", 0))
    multiplier = float(policy.get("backoff_multiplier", 1.0))
    try:
        backoff = initial * multiplier ** max(attempts - 1, 0)
    except OverflowError:
        backoff = math.inf if initial > 0 else 0.0
    if "max_backoff_s" in policy:
        backoff = min(backoff, float(policy["max_backoff_s"]))
    return backoff


def require_retry_due(item: WorkItem, now: datetime) -> None:
    """``work.start`` waits out a retry's backoff (R11.4-08)."""
    if item.retry_at is not None and parse_timestamp(item.retry_at) > now:
        raise ProtocolError(
            ErrorCode.ILLEGAL_TRANSITION,
            f"{item.id} retries at {item.retry_at}",
            requirement="R11.4-08",
            details={"work_item": item.id, "retry_at": item.retry_at},
        )


def owner_failure(item: WorkItem, command: Command) -> NewEvent:
    """The owner's ``work.fail``: another attempt after backoff while the contract allows,
    else ``work.failed`` with the evidence and why retries ended (R11.4-10)."""
    body = command.body
    if not body.get("permanent"):
        plan, exhausted = retry_plan(item, command.now)
        if plan is not None:
            return NewEvent("work.retry_scheduled", {**body, **plan})
    else:
        exhausted = "permanent"
    return NewEvent("work.failed", {**body, "retries_exhausted": exhausted})
