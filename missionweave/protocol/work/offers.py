"""Offers and ownership: ``work.offer``, ``work.accept_offer`` and ``work.reject_offer``
(R10.2-03..05, R10.3). The execution approval gate that follows an acceptance is in
``approvals``."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from .. import states as S
from ..contracts import validate_contract
from ..errors import ErrorCode, ProtocolError
from ..facts import Command, Decision, NewEvent, View
from ..timefmt import parse_timestamp
from ..validation import (
    check_choice,
    check_fields,
    check_id,
    check_principal,
    check_text,
    malformed,
)
from .approvals import require_not_refused, require_offerable
from .checks import (
    BLOCKED_LEASE,
    MAX_SEQUENTIAL_OFFERS,
    MAX_START_WINDOW_S,
    MAX_URGENT_OFFERS,
    MIN_START_WINDOW_S,
    REJECT_REASONS,
    SELECTION_BASIS_FIELDS,
    no_private_reasoning,
    optional_seconds,
    require_item,
    start_deadline_for,
    timestamp,
)
from .items import Offer, WorkItem
from .replacements import require_not_replaced

# --- work.offer (R10.2-03, R10.3) ----------------------------------------------------------


def validate_offer(body: dict[str, Any]) -> None:
    check_fields(
        body,
        required=("work_item", "offers", "mode", "selection_basis"),
        optional=("contract", "start_within_s"),
    )
    optional_seconds(body, "start_within_s", MIN_START_WINDOW_S, MAX_START_WINDOW_S)
    check_id(body["work_item"], "$.work_item")
    mode = check_choice(body["mode"], ("sequential", "urgent"), "$.mode")
    offers = body["offers"]
    limit = MAX_URGENT_OFFERS if mode == "urgent" else MAX_SEQUENTIAL_OFFERS
    if not isinstance(offers, list) or not 1 <= len(offers) <= limit:
        raise malformed(f"offers is a list of 1..{limit} offers", "$.offers", "R10.3-04")
    seen: set[str] = set()
    workers: set[str] = set()
    for index, offer in enumerate(offers):
        path = f"$.offers[{index}]"
        if not isinstance(offer, dict):
            raise malformed("an offer is an object", path)
        check_fields(offer, required=("offer", "worker", "expires_at"), path=path)
        check_id(offer["offer"], f"{path}.offer")
        check_principal(offer["worker"], f"{path}.worker")
        timestamp(offer["expires_at"], f"{path}.expires_at")
        if offer["offer"] in seen or offer["worker"] in workers:
            raise malformed("each offer id and worker appears once", path)
        seen.add(offer["offer"])
        workers.add(offer["worker"])
    basis = body["selection_basis"]
    if not isinstance(basis, dict):
        raise malformed("selection_basis is an object", "$.selection_basis", "R10.3-11")
    no_private_reasoning(basis, "$.selection_basis", "R10.3-12")
    check_fields(basis, required=SELECTION_BASIS_FIELDS, path="$.selection_basis")
    if body.get("contract") is not None:
        validate_contract(body["contract"])


def _owner_is_active(item: WorkItem, now: datetime) -> bool:
    """Whether an owner still holds the item (an expired one may be fenced, R10.2-03). An
    owner queued on a refused revision holds nothing: it can never start it (R10.2-06)."""
    if item.owner is None or item.state in (S.OPEN, S.OFFERED, S.FAILED):
        return False
    if item.state == S.QUEUED and item.refusal is not None:
        return False
    if item.state == S.QUEUED:
        return item.start_deadline is None or parse_timestamp(item.start_deadline) > now
    if item.state == S.ACTIVE:
        return item.lease is not None and parse_timestamp(item.lease.expires_at) > now
    if item.state == S.BLOCKED:
        child_running = item.child is not None and item.child.get("status") == "running"
        # R11.4-05: ownership survives a block for a bounded time
        held = (
            item.blocked_at is not None and parse_timestamp(item.blocked_at) + BLOCKED_LEASE > now
        )
        return child_running or held
    return True


def decide_offer(view: View, command: Command) -> Decision:
    body = command.body
    item = require_item(view, body["work_item"])
    S.require_state(command.type, item.state, work_item=item.id)
    corrected = body.get("contract") is not None and (
        validate_contract(body["contract"]) != item.contract
    )
    require_offerable(item, corrected)
    require_not_replaced(item)  # R10.2-21: its replacement carries the work
    if _owner_is_active(item, command.now):
        raise ProtocolError(
            ErrorCode.ILLEGAL_TRANSITION,
            f"{item.id} still has an active owner ({item.owner})",
            requirement="R10.2-03",
            details={"work_item": item.id, "owner": item.owner},
        )
    if item.state == S.BLOCKED and item.child is not None and item.child.get("status") == "running":
        # R10.2-15: blocked while the linked child runs, owner or not (as work.unblock refuses);
        # otherwise the child's approval could no longer verify the item
        raise ProtocolError(
            ErrorCode.ILLEGAL_TRANSITION,
            f"{item.id} is blocked by its running child mission",
            requirement="R10.2-15",
            details={"work_item": item.id, "child": item.child},
        )
    revision = item.revision
    payload: dict[str, Any] = {**body, "revision": revision}
    if body.get("contract") is not None:
        contract = validate_contract(body["contract"])
        if contract != item.contract:
            revision += 1  # R10.1-05: a corrected contract needs renewed acceptance
            payload.update(contract=contract, revision=revision)
        else:
            del payload["contract"]
    if item.owner is not None:
        payload["fenced_owner"] = item.owner
    return Decision(
        [NewEvent("work.offered", payload)],
        {
            "work_item": item.id,
            "revision": revision,
            "offers": [o["offer"] for o in body["offers"]],
        },
    )


# --- work.accept_offer / work.reject_offer (R10.2-04, R10.3) -------------------------------


def validate_accept(body: dict[str, Any]) -> None:
    check_fields(body, required=("work_item", "offer", "contract_revision"))
    check_id(body["work_item"], "$.work_item")
    check_id(body["offer"], "$.offer")
    revision = body["contract_revision"]
    if isinstance(revision, bool) or not isinstance(revision, int) or revision < 1:
        raise malformed("contract_revision is a positive integer", "$.contract_revision")


def _find_offer(item: WorkItem, offer_id: str, actor: str) -> Offer:
    offer = next((o for o in reversed(item.offers) if o.offer == offer_id), None)
    if offer is None:
        raise ProtocolError(
            ErrorCode.NOT_FOUND,
            f"no offer {offer_id!r} on {item.id}",
            requirement="wire§9",
            details={"path": "$.offer"},
        )
    if offer.worker != actor:
        raise ProtocolError(
            ErrorCode.FORBIDDEN,
            f"offer {offer_id} was made to {offer.worker}",
            requirement="wire§9",
        )
    if offer.status in ("withdrawn", "superseded"):
        raise ProtocolError(
            ErrorCode.OFFER_WITHDRAWN,
            f"offer {offer_id} was withdrawn",
            requirement="R10.3-06",
            details={"work_item": item.id, "offer": offer_id},
        )
    return offer


def _live_offer(item: WorkItem, offer: Offer, now: datetime, command: str) -> None:
    """An open offer, not expired (R10.2-05), and — sequential — its turn (R10.3-03)."""
    if offer.status != "open":
        raise ProtocolError(
            ErrorCode.ILLEGAL_TRANSITION,
            f"offer {offer.offer} is already {offer.status}",
            requirement="R10.2-04",
            details={"offer": offer.offer, "status": offer.status},
        )
    if parse_timestamp(offer.expires_at) <= now:
        raise ProtocolError(
            ErrorCode.OFFER_EXPIRED,
            f"offer {offer.offer} expired at {offer.expires_at}",
            requirement="R10.2-05",
            details={"offer": offer.offer, "expires_at": offer.expires_at},
        )
    if offer.mode == "sequential":
        waiting = [
            o.offer
            for o in item.offers
            if o.mode == "sequential"
            and o.revision == offer.revision
            and o.rank < offer.rank
            and o.status == "open"
            and parse_timestamp(o.expires_at) > now
        ]
        if waiting:
            raise ProtocolError(
                ErrorCode.ILLEGAL_TRANSITION,
                f"{command}: offer {offer.offer} is not yet live; {waiting[0]} is offered first",
                requirement="R10.3-03",
                details={"offer": offer.offer, "ahead": waiting},
            )


def decide_accept(view: View, command: Command) -> Decision:
    body = command.body
    item = require_item(view, body["work_item"])
    offer = _find_offer(item, body["offer"], command.actor)
    S.require_state(command.type, item.state, work_item=item.id)
    _live_offer(item, offer, command.now, command.type)
    if body["contract_revision"] != item.revision or offer.revision != item.revision:
        raise ProtocolError(
            ErrorCode.STALE_REVISION,
            f"the contract of {item.id} is at revision {item.revision}",
            requirement="R10.1-05",
            details={"revision": item.revision},
        )
    require_not_refused(item)  # R10.2-06: a refused revision is not taken on
    if item.open_questions:
        raise ProtocolError(
            ErrorCode.ILLEGAL_TRANSITION,
            f"{item.id} has unanswered essential questions",
            requirement="R10.1-03",
            details={"open_questions": list(item.open_questions)},
        )
    epoch = item.ownership_epoch + 1
    start_deadline = start_deadline_for(item, command.now)
    events = [
        NewEvent(
            "work.offer_accepted",
            {
                "work_item": item.id,
                "offer": offer.offer,
                "worker": command.actor,
                "contract_revision": item.revision,
                "ownership_epoch": epoch,
                "start_deadline": start_deadline,
            },
        )
    ]
    # R10.3-05, R10.3-06: the first acceptance wins; every other open offer is withdrawn now.
    for other in item.offers:
        if other.status == "open" and other.offer != offer.offer:
            events.append(
                NewEvent(
                    "work.offer_withdrawn",
                    {
                        "work_item": item.id,
                        "offer": other.offer,
                        "worker": other.worker,
                        "reason": "accepted_by_another",
                    },
                )
            )
    return Decision(events, {"ownership_epoch": epoch, "start_deadline": start_deadline})


def validate_reject(body: dict[str, Any]) -> None:
    check_fields(body, required=("work_item", "offer", "reason", "detail"))
    check_id(body["work_item"], "$.work_item")
    check_id(body["offer"], "$.offer")
    check_choice(body["reason"], REJECT_REASONS, "$.reason")
    check_text(body["detail"], "$.detail", empty=True)
    no_private_reasoning(body, "$", "R10.3-12")


def decide_reject(view: View, command: Command) -> Decision:
    item = require_item(view, command.body["work_item"])
    offer = _find_offer(item, command.body["offer"], command.actor)
    S.require_state(command.type, item.state, work_item=item.id)
    if offer.status != "open":
        raise ProtocolError(
            ErrorCode.ILLEGAL_TRANSITION,
            f"offer {offer.offer} is already {offer.status}",
            requirement="R10.3-09",
        )
    return Decision([NewEvent("work.offer_rejected", dict(command.body))])
