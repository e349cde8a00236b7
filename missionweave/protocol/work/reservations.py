"""Review reservations: ``review.reserve`` and ``review.release`` (R13.2-03, issue 34).

A reviewer about to judge a submission says so, so two people do not review one item at once
and a person judging an item is not raced by an agent. A running reservation holds the
decision for its holder: anyone else's ``work.accept_result`` or ``work.fail`` of the
submission, and another person's ``evidence.record``, is ``REVIEW_RESERVED``
(``assessment.decision_refusal``); evidence from the authority and agents stays welcome. It
lasts ``RESERVATION_SECONDS`` from the authority clock and expires by itself (a reader
compares ``expires_at`` with now; nothing sweeps it). While it runs, nobody else may take it
(``ILLEGAL_TRANSITION`` naming the holder); its holder may reserve again to extend it, or
release it, and its holder's decision ends it. So that nothing stalls, a human mission_owner
may end someone else's running reservation, saying why (``reason``): ``review.released``
records who ended it (``ended_by``). A new submission, or the item leaving ``submitted``,
clears it. The item's owner never reserves its own review (R13.2-01).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from .. import states as S
from ..errors import ErrorCode, ProtocolError
from ..facts import Command, Decision, NewEvent, View
from ..identifiers import is_human
from ..timefmt import format_timestamp
from ..validation import check_fields, check_id, check_text, malformed
from .assessment import live_reservation, require_current_submission, require_not_owner
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
    check_fields(body, required=("work_item",), optional=("reason",))
    check_id(body["work_item"], "$.work_item")
    if "reason" in body:
        check_text(body["reason"], "$.reason")


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
    """The holder releases a running reservation; a human mission_owner may end someone
    else's, with a ``reason`` (``MALFORMED`` without one), recorded with ``ended_by``;
    anyone else is ``FORBIDDEN``. An absent or expired reservation has nothing to release
    (``ILLEGAL_TRANSITION``, harmless)."""
    item = _reviewable(view, command)
    held = live_reservation(item, command.now)
    if held is None:
        raise ProtocolError(
            ErrorCode.ILLEGAL_TRANSITION,
            f"nobody holds a running reservation of {item.id}",
            requirement="R13.2-03",
            details={"work_item": item.id, "reservation": None},
        )
    payload: dict[str, Any] = {"work_item": item.id, "reviewer": held["reviewer"]}
    if held["reviewer"] != command.actor:
        if not (is_human(command.actor) and "mission_owner" in command.actor_roles):
            raise ProtocolError(
                ErrorCode.FORBIDDEN,
                f"{held['reviewer']} holds the reservation of {item.id}; only they, or a "
                "mission owner saying why, release it",
                requirement="R13.2-03",
                details={"reserved_by": held["reviewer"], "expires_at": held["expires_at"]},
            )
        if "reason" not in command.body:
            raise malformed("ending someone else's reservation says why", "$.reason", "R13.2-03")
        payload["ended_by"] = command.actor
    if "reason" in command.body:
        payload["reason"] = command.body["reason"]
    return Decision([NewEvent(RELEASED, payload)])


def reservation_entry(payload: dict[str, Any], sequence: int) -> dict[str, Any]:
    """What ``review["reservation"]`` holds after ``review.reserved``."""
    return {
        "reviewer": payload["reviewer"],
        "expires_at": payload["expires_at"],
        "sequence": sequence,
    }
