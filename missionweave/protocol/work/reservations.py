"""Review reservations: ``review.reserve`` and ``review.release`` (advisory, R13.2-03).

A reviewer about to judge a submission says so, so two people do not review one item at
once. A reservation is advice, not a lock: it changes no state and nobody's right to record
evidence, accept or fail the item. It lasts ``RESERVATION_SECONDS`` from the authority clock
and expires by itself (a reader compares ``expires_at`` with now; nothing sweeps it). While it
runs, nobody else may take it (``ILLEGAL_TRANSITION`` naming the holder); its holder may
reserve again to extend it, or release it. A new submission, or the item leaving
``submitted``, clears it. The item's owner never reserves its own review (R13.2-01).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from .. import states as S
from ..errors import ErrorCode, ProtocolError
from ..facts import Command, Decision, NewEvent, View
from ..timefmt import format_timestamp, parse_timestamp
from ..validation import check_fields, check_id, malformed
from .assessment import require_current_submission, require_not_owner
from .checks import require_item
from .items import WorkItem

RESERVE = "review.reserve"
RESERVED = "review.reserved"
RELEASE = "review.release"
RELEASED = "review.released"
#: how long a reservation lasts from the command (the holder may extend it by reserving again)
RESERVATION_SECONDS = 600


def validate_reserve(body: dict[str, Any]) -> None:
    check_fields(body, required=("work_item",), optional=("submission",))
    check_id(body["work_item"], "$.work_item")
    if "submission" in body and (
        isinstance(body["submission"], bool) or not isinstance(body["submission"], int)
    ):
        raise malformed("submission is the sequence of work.submitted", "$.submission")


def validate_release(body: dict[str, Any]) -> None:
    check_fields(body, required=("work_item",))
    check_id(body["work_item"], "$.work_item")


def live_reservation(item: WorkItem, now: datetime) -> dict[str, Any] | None:
    """The item's reservation while it runs at ``now``, else ``None`` (expiry is by itself)."""
    reservation = (item.review or {}).get("reservation")
    if reservation is None or parse_timestamp(reservation["expires_at"]) <= now:
        return None
    return reservation


def _reviewable(view: View, command: Command) -> WorkItem:
    """A submitted item (beside the state table: it changes no state), not judged by its
    owner."""
    item = require_item(view, command.body["work_item"])
    if item.state != S.SUBMITTED:
        raise ProtocolError(
            ErrorCode.ILLEGAL_TRANSITION,
            f"{item.id} is {item.state}: only a submission is reviewed",
            requirement="R13.2-03",
            details={"work_item": item.id, "state": item.state, "allowed_from": [S.SUBMITTED]},
        )
    require_not_owner(item, command.actor, "reserve the review of")
    return item


def decide_reserve(view: View, command: Command) -> Decision:
    item = _reviewable(view, command)
    require_current_submission(item, command.body)
    held = live_reservation(item, command.now)
    if held is not None and held["reviewer"] != command.actor:
        raise ProtocolError(
            ErrorCode.ILLEGAL_TRANSITION,
            f"{held['reviewer']} is reviewing {item.id} until {held['expires_at']}",
            requirement="R13.2-03",
            details={"reserved_by": held["reviewer"], "expires_at": held["expires_at"]},
        )
    expires_at = format_timestamp(command.now + timedelta(seconds=RESERVATION_SECONDS))
    payload = {
        "work_item": item.id,
        "reviewer": command.actor,
        "expires_at": expires_at,
        "submission": (item.review or {}).get("submission"),
    }
    return Decision(
        [NewEvent(RESERVED, payload)],
        {"reservation": {"reviewer": command.actor, "expires_at": expires_at}},
    )


def decide_release(view: View, command: Command) -> Decision:
    """Only the holder releases a running reservation (``FORBIDDEN`` for anyone else); an
    absent or expired one has nothing to release (``ILLEGAL_TRANSITION``, harmless)."""
    item = _reviewable(view, command)
    held = live_reservation(item, command.now)
    if held is None:
        raise ProtocolError(
            ErrorCode.ILLEGAL_TRANSITION,
            f"nobody holds a running reservation of {item.id}",
            requirement="R13.2-03",
            details={"work_item": item.id, "reservation": None},
        )
    if held["reviewer"] != command.actor:
        raise ProtocolError(
            ErrorCode.FORBIDDEN,
            f"{held['reviewer']} holds the reservation of {item.id}; only they release it",
            requirement="R13.2-03",
            details={"reserved_by": held["reviewer"], "expires_at": held["expires_at"]},
        )
    return Decision([NewEvent(RELEASED, {"work_item": item.id, "reviewer": command.actor})])


def reservation_entry(payload: dict[str, Any], sequence: int) -> dict[str, Any]:
    """What ``review["reservation"]`` holds after ``review.reserved``."""
    return {
        "reviewer": payload["reviewer"],
        "expires_at": payload["expires_at"],
        "sequence": sequence,
    }
