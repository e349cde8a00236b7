"""Shared pieces of the WorkItem commands: limits, owner and lease checks, field checkers.

Refusals follow wire.md §8's precedence for an owner's command: a principal that never owned
the item is ``FORBIDDEN``, a former owner ``STALE_OWNERSHIP``, the current owner with an older
lease id ``STALE_LEASE`` whatever the state — and only then is the state checked against the
table in ``states.py`` (``ILLEGAL_TRANSITION``)."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime, timedelta
from typing import Any

from .. import states as S
from ..canonical import is_digest
from ..errors import ErrorCode, ProtocolError
from ..facts import Command, StateKey, View
from ..identifiers import AUTHORITY
from ..timefmt import format_timestamp, parse_timestamp
from ..validation import (
    check_choice,
    check_fields,
    check_principal,
    check_text,
    find_private_reasoning,
    malformed,
)
from .items import BLOCKED_LEASE, Lease, WorkItem, work_item_key

__all__ = ["BLOCKED_LEASE"]  # re-exported: offers decide with it

#: how long an owner has to start after accepting (R11.3-02), capped by the contract deadline
START_WINDOW = timedelta(minutes=10)
#: an execution lease's default length; ``lease.renew`` extends it by as much from now.
#: ``work.start`` and ``lease.renew`` may ask for ``lease_ttl_s`` between the bounds.
LEASE_TTL = timedelta(minutes=5)
MIN_LEASE_TTL_S = 1
MAX_LEASE_TTL_S = 3600
#: the bounds of ``start_within_s`` on ``work.offer`` (the owner's start window, R11.3-02)
MIN_START_WINDOW_S = 1
MAX_START_WINDOW_S = 7 * 24 * 3600
MAX_URGENT_OFFERS = 16
MAX_SEQUENTIAL_OFFERS = 32
SELECTION_BASIS_FIELDS = (
    "capability_match", "authorization_eligibility", "availability_estimate", "expected_cost",
    "reliability_evidence", "policy_rules",
)  # fmt: skip
REJECT_REASONS = ("capacity", "deadline", "capability", "authorization", "dependency", "budget")
VERDICTS = ("pass", "fail", "inconclusive")
REVIEW_VERDICTS = ("pass", "fail", "needs_changes")
METHODS = ("deterministic", "agent_review", "human_review")


# --- shared checks -----------------------------------------------------------------------


def require_item(view: View, work_item: str) -> WorkItem:
    item = view.get(work_item_key(work_item))
    if item is None:
        raise ProtocolError(
            ErrorCode.NOT_FOUND,
            f"no WorkItem {work_item!r} in this group",
            requirement="wire§4",
            details={"path": "$.work_item", "work_item": work_item},
        )
    return item


def require_owner(item: WorkItem, actor: str) -> None:
    """wire.md §8 precedence, first two steps (R11.3-01)."""
    if item.owner == actor:
        return
    if actor in item.former_owners:
        raise ProtocolError(
            ErrorCode.STALE_OWNERSHIP,
            f"{actor} no longer owns {item.id}",
            requirement="R11.3-01",
            details={"work_item": item.id, "ownership_epoch": item.ownership_epoch},
        )
    raise ProtocolError(
        ErrorCode.FORBIDDEN,
        f"{actor} does not own {item.id}",
        requirement="wire§9",
        details={"work_item": item.id},
    )


def check_ownership_epoch(body: dict[str, Any]) -> int:
    """The body's ``ownership_epoch``: a positive integer (a bool or ``"1"`` is MALFORMED)."""
    epoch = body["ownership_epoch"]
    if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 1:
        raise malformed("ownership_epoch is a positive integer", "$.ownership_epoch")
    return epoch


def require_current_epoch(item: WorkItem, epoch: int) -> None:
    """R11.3-01: an owner's command without a lease (``work.start``, a schedule disclosure)
    names the current ownership epoch; an older one is ``STALE_OWNERSHIP``."""
    if epoch != item.ownership_epoch:
        raise ProtocolError(
            ErrorCode.STALE_OWNERSHIP,
            f"ownership epoch {epoch} is not the current one",
            requirement="R11.3-01",
            details={"ownership_epoch": item.ownership_epoch},
        )


def require_current_lease_id(item: WorkItem, lease_id: str) -> None:
    """R11.3-04, R11.3-05: the owner's command carries the current lease id.

    wire.md §8: a lease id that is not the current lease is ``STALE_LEASE`` whatever the
    state — also when the item has no lease now: none yet, or the last one closed because it
    was revoked (a replaced session, a scheduled retry) or released at a checkpoint, the item
    back in ``queued``. One closed lease still counts: the one a ``work.block`` released,
    while the item stays ``blocked``, since its owner fails a blocked item with it (R10.2-13).
    Only then is the state checked; a current lease that ran out by the clock is
    ``require_live_lease``'s, after the state (R11.3-09)."""
    lease = item.lease
    current = lease is not None and (lease.status == "active" or item.state == S.BLOCKED)
    if not current or lease is None or lease.lease_id != lease_id:
        raise ProtocolError(
            ErrorCode.STALE_LEASE,
            f"lease {lease_id!r} is not the current lease of {item.id}",
            requirement="R11.3-05",
            details={"work_item": item.id},
        )


def require_live_lease(item: WorkItem, now: datetime) -> Lease:
    """After the state check: the lease has not run out by the authority clock (R11.3-09)."""
    lease = item.lease
    assert lease is not None
    if lease.status != "active" or parse_timestamp(lease.expires_at) <= now:
        raise ProtocolError(
            ErrorCode.STALE_LEASE,
            f"lease {lease.lease_id} of {item.id} has expired",
            requirement="R11.3-09",
            details={"work_item": item.id, "expires_at": lease.expires_at},
        )
    return lease


def owner_with_lease(view: View, command: Command) -> tuple[WorkItem, Lease]:
    """The owner's execution command: ownership, lease id, state, live lease — in that order."""
    item = require_item(view, command.body["work_item"])
    require_owner(item, command.actor)
    require_current_lease_id(item, command.body["lease_id"])
    S.require_state(command.type, item.state, work_item=item.id)
    return item, require_live_lease(item, command.now)


def item_keys(command: Command, view: View) -> set[StateKey]:
    return {work_item_key(command.body["work_item"])}


def strings(value: object, path: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise malformed("expected a list of strings", path)
    return value


def digests(value: object, path: str) -> list[str]:
    if not isinstance(value, list):
        raise malformed("expected a list of sha256 digests", path)
    for index, item in enumerate(value):
        if not is_digest(item):
            raise malformed("expected sha256:<64 lowercase hex>", f"{path}[{index}]", "wire§1")
    return value


def timestamp(value: object, path: str) -> datetime:
    try:
        return parse_timestamp(value)
    except (ValueError, OverflowError):
        raise malformed("expected an RFC 3339 UTC timestamp ending in Z", path, "wire§1") from None


def no_private_reasoning(value: object, path: str, requirement: str) -> None:
    found = find_private_reasoning(value, path)
    if found is not None:
        raise malformed("private reasoning is never recorded", found, requirement)


def check_evidence_item(value: object, path: str) -> dict[str, Any]:
    """An evidence item (wire.md §9, R13.2-04) with no private reasoning (R13.2-05)."""
    if not isinstance(value, dict):
        raise malformed("an evidence item is an object", path, "R13.2-04")
    no_private_reasoning(value, path, "R13.2-05")
    check_fields(
        value, required=("criterion", "method", "result", "producer", "artifacts"), path=path
    )
    check_text(value["criterion"], f"{path}.criterion", max_length=200)
    check_choice(value["method"], METHODS, f"{path}.method")
    result = value["result"]
    if not isinstance(result, dict):
        raise malformed("result is an object", f"{path}.result", "R13.2-04")
    check_fields(result, required=("verdict", "summary", "data"), path=f"{path}.result")
    check_choice(result["verdict"], VERDICTS, f"{path}.result.verdict")
    check_text(result["summary"], f"{path}.result.summary", empty=True)
    if value["producer"] != AUTHORITY:  # the authority's own evidence (R13.2-03)
        check_principal(value["producer"], f"{path}.producer")
    digests(value["artifacts"], f"{path}.artifacts")
    return value


def evidence_list(value: object, path: str) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise malformed("evidence is a list of evidence items", path, "R13.2-02")
    return [check_evidence_item(item, f"{path}[{index}]") for index, item in enumerate(value)]


def uncovered_criteria(item: WorkItem, covered: Collection[str]) -> list[str]:
    """The ids of the contract's acceptance criteria that ``covered`` leaves out, in order."""
    return [c["id"] for c in item.contract.get("acceptance_criteria", []) if c["id"] not in covered]


def evidence_missing(
    missing: list[str], message: str, requirement: str = "R13.2-02"
) -> ProtocolError:
    """``EVIDENCE_MISSING`` naming what is missing: a submission, a review or a failure
    without the evidence the protocol asks of it (R13.2-02, R10.2-13)."""
    return ProtocolError(
        ErrorCode.EVIDENCE_MISSING, message, requirement=requirement, details={"missing": missing}
    )


def start_deadline_for(item: WorkItem, now: datetime) -> str:
    """When a queued owner must have started (R11.3-02): ``START_WINDOW`` from ``now``,
    capped by the contract deadline. Set on acceptance, and again when a checkpoint or an
    unblock re-queues the item, which keeps a bounded ownership lease (R10.2-08, R10.2-10)."""
    window = START_WINDOW
    if item.start_window_s is not None:
        window = timedelta(seconds=item.start_window_s)
    deadline = now + window
    contract_deadline = item.contract.get("deadline")
    if contract_deadline is not None:
        deadline = min(deadline, parse_timestamp(contract_deadline))
    return format_timestamp(deadline)


def optional_seconds(body: dict[str, Any], name: str, low: int, high: int) -> int | None:
    """An optional whole number of seconds within bounds (``lease_ttl_s``, ``start_within_s``)."""
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise malformed(f"{name} is a whole number of seconds from {low} to {high}", f"$.{name}")
    return value


def lease_ttl(body: dict[str, Any]) -> timedelta:
    seconds = optional_seconds(body, "lease_ttl_s", MIN_LEASE_TTL_S, MAX_LEASE_TTL_S)
    return LEASE_TTL if seconds is None else timedelta(seconds=seconds)


def approvals_required(item: WorkItem) -> int:
    """How many distinct mission_owner grants ``work.start`` needs (R10.1-01(i))."""
    risk = item.contract.get("risk", {})
    return int(risk.get("approvals_required", 1)) if risk.get("requires_execution_approval") else 0
