"""Schedule disclosure: ``work.disclose_schedule`` → ``work.schedule_disclosed`` (MWP-WRK-012).

R11.2-01 (R0-09): on acceptance and on material schedule changes the owner of a WorkItem
publishes an estimated start window, an estimated completion, a confidence, its capacity
state and its computation time. R0-09 leaves "computation time" ambiguous (the time the
estimate was computed, or how long computing takes), so the body carries both:
``computed_at`` (required) and ``compute_seconds`` (optional).

R11.2-02: a disclosure must never expose another group's names, content, assignments or exact
global queue position. That is enforced by the shape, not by a filter: the body holds only
this item's id, its ownership epoch, timestamps, one number in [0, 1], one value of a closed
vocabulary and an optional number of seconds — no free text and no field beyond those
(``additionalProperties: false``), so nothing a worker knows of its other groups has
anywhere to ride along, and a queue position has no field to travel in.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from .. import states as S
from ..envelope import CLOCK_SKEW
from ..facts import Command, Decision, NewEvent, View
from ..timefmt import format_timestamp
from ..validation import check_choice, check_fields, check_id, is_number, malformed
from .checks import (
    check_ownership_epoch,
    require_current_epoch,
    require_item,
    require_owner,
    timestamp,
)

DISCLOSE = "work.disclose_schedule"
DISCLOSED = "work.schedule_disclosed"

#: the worker's capacity as a whole, never broken down by group (R11.1-11, R11.2-02)
CAPACITY_STATES = ("available", "busy", "saturated")

REQUIRED = (
    "work_item", "ownership_epoch", "estimated_start", "estimated_completion", "confidence",
    "capacity_state", "computed_at",
)  # fmt: skip
OPTIONAL = ("compute_seconds",)
#: every field a disclosure may carry: the event payload is the body, so these are also all
#: it can ever hold (R11.2-02)
FIELDS = (*REQUIRED, *OPTIONAL)
WINDOW_FIELDS = ("earliest", "latest")


def validate_disclose(body: dict[str, Any]) -> None:
    """Exactly the declared fields, each in its wire format (wire.md §1), windows in order.

    Order: ``earliest ≤ latest ≤ estimated_completion`` — an item cannot be estimated to
    finish before the latest time it may start (R11.2-01)."""
    check_fields(body, required=REQUIRED, optional=OPTIONAL)
    check_id(body["work_item"], "$.work_item")
    check_ownership_epoch(body)
    window = body["estimated_start"]
    if not isinstance(window, dict):
        raise malformed("estimated_start is {earliest, latest}", "$.estimated_start", "R11.2-01")
    check_fields(window, required=WINDOW_FIELDS, path="$.estimated_start")
    earliest = timestamp(window["earliest"], "$.estimated_start.earliest")
    latest = timestamp(window["latest"], "$.estimated_start.latest")
    if latest < earliest:
        raise malformed("the start window ends before it begins", "$.estimated_start", "R11.2-01")
    completion = timestamp(body["estimated_completion"], "$.estimated_completion")
    if completion < latest:
        raise malformed(
            "estimated_completion is before the latest estimated start",
            "$.estimated_completion",
            "R11.2-01",
        )
    confidence = body["confidence"]
    if not is_number(confidence) or not 0 <= confidence <= 1:
        raise malformed("confidence is a number from 0 to 1", "$.confidence", "R11.2-01")
    check_choice(body["capacity_state"], CAPACITY_STATES, "$.capacity_state")
    timestamp(body["computed_at"], "$.computed_at")
    if "compute_seconds" in body:
        seconds = body["compute_seconds"]
        if not is_number(seconds) or seconds < 0:
            raise malformed(
                "compute_seconds is a non-negative number", "$.compute_seconds", "R11.2-01"
            )


def decide_disclose(view: View, command: Command) -> Decision:
    """The owner of the current ownership epoch discloses; the item's state does not move.

    wire.md §8 precedence, as for ``work.start``: never the owner → ``FORBIDDEN``, a former
    owner → ``STALE_OWNERSHIP``, the owner naming an older epoch → ``STALE_OWNERSHIP``
    (R11.3-01), then the state (``states.IN_STATE``: queued, active, blocked). An estimate
    computed later than the authority clock allows (beyond the envelope's skew window) is
    refused: the dashboard shows ``computed_at`` as when the worker worked it out.
    """
    body = command.body
    item = require_item(view, body["work_item"])
    require_owner(item, command.actor)
    require_current_epoch(item, body["ownership_epoch"])
    S.require_state(command.type, item.state, work_item=item.id)
    if timestamp(body["computed_at"], "$.computed_at") > command.now + CLOCK_SKEW:
        raise malformed(
            "computed_at is later than the authority clock allows", "$.computed_at", "R11.2-01"
        )
    return Decision([NewEvent(DISCLOSED, dict(body))])


def disclosure_body(
    *,
    work_item: str,
    ownership_epoch: int,
    earliest_start: datetime,
    latest_start: datetime,
    estimated_completion: datetime,
    confidence: float,
    capacity_state: str,
    computed_at: datetime,
    compute_seconds: float | None = None,
) -> dict[str, Any]:
    """A ``work.disclose_schedule`` body from aware datetimes, in the wire's one time format:
    what a worker runtime sends (it builds the body here rather than restating the shape)."""
    body: dict[str, Any] = {
        "work_item": work_item,
        "ownership_epoch": ownership_epoch,
        "estimated_start": {
            "earliest": format_timestamp(earliest_start),
            "latest": format_timestamp(latest_start),
        },
        "estimated_completion": format_timestamp(estimated_completion),
        "confidence": confidence,
        "capacity_state": capacity_state,
        "computed_at": format_timestamp(computed_at),
    }
    if compute_seconds is not None:
        body["compute_seconds"] = compute_seconds
    return body
