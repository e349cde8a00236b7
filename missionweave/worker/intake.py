"""From the group queues to the scheduler's inputs: queued items, and offers to admit.

Two translations, both pure:

- ``queued_item``: an owned ``WorkRow`` (``queues.py``) as the scheduler's ``QueuedItem``.
  Urgency and deadline are the contract's (a coordinator's input: they order the item inside
  its own group only, R11.1-06); the organisation priority class is the worker's policy for
  the group (config, R11.1-07); the item is risk-gated while its execution approvals are
  missing or refused (R10.2-06); its slot-time estimate is the contract's declared
  ``estimated_compute_s``. A ``budgets.compute`` ceiling is *not* taken as an estimate: the
  scheduler never refunds an inflated reservation, so a ceiling would overcharge the group.
- ``admission_offer``: an open offer plus the WorkItem the authority serves (its contract and
  dependencies, which the offer event does not carry) as ``admission.AdmissionOffer``.

``offer_decidable`` says when an offer may be decided at all: before its expiry, and for a
sequential offer only once every offer ranked ahead of it has expired or been rejected
(R10.3-03): accepting earlier would be refused, rejecting earlier would be premature.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from missionweave.protocol.timefmt import parse_timestamp

from .admission import AdmissionOffer
from .config import GroupConfig
from .queues import OfferRow, WorkRow, gate_is_open
from .resources import needed_amounts, needs_of
from .scheduler import QueuedItem


def _estimate(terms: Mapping[str, Any]) -> float | None:
    compute = terms.get("compute_s")
    if terms.get("compute_source") == "estimate" and compute is not None and compute > 0:
        return float(compute)
    return None


def queued_item(row: WorkRow, group: GroupConfig) -> QueuedItem:
    terms = row["terms"]
    deadline = terms.get("deadline")
    return QueuedItem(
        group=row["group"],
        work_item=row["work_item"],
        mission=row["mission"] or "",
        urgency=terms.get("urgency") or "normal",
        deadline=parse_timestamp(deadline) if deadline else None,
        queued_at=parse_timestamp(row["queued_at"]),
        risk_gated=not gate_is_open(row["gate"]),
        needs=needs_of(terms.get("needs")),  # R11.1-09: held while it runs
        estimated_seconds=_estimate(terms),
        org_priority_class=group.org_priority_class,
    )


def not_before(row: WorkRow) -> datetime | None:
    """A retry's backoff: the item may not start before then (R11.4-08)."""
    return parse_timestamp(row["retry_at"]) if row.get("retry_at") else None


def offer_decidable(offer: OfferRow, now: datetime) -> bool:
    if parse_timestamp(offer["expires_at"]) <= now:
        return False
    return all(parse_timestamp(ahead["expires_at"]) <= now for ahead in offer["ahead"])


def admission_offer(
    offer: OfferRow, document: Mapping[str, Any], *, now: datetime, group: GroupConfig
) -> AdmissionOffer:
    """``document`` is ``GET /groups/{g}/work-items/{id}`` (the WorkItem projection)."""
    return AdmissionOffer.from_contract(
        group=offer["group"],
        work_item=offer["work_item"],
        mission=str(document.get("mission") or offer["mission"] or ""),
        offer=offer["offer"],
        contract=document["contract"],
        queued_at=now,
        depends_on=tuple(document.get("depends_on") or ()),
        estimated_seconds=_estimate(offer["terms"]),
        needs=needs_of(needed_amounts(document["contract"].get("resources"))),
        org_priority_class=group.org_priority_class,
    )


def accept_body(offer: OfferRow) -> dict[str, Any]:
    """``work.accept_offer`` for the revision the offer was made for (R10.1-05)."""
    return {
        "work_item": offer["work_item"],
        "offer": offer["offer"],
        "contract_revision": offer["revision"],
    }
