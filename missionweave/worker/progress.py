"""When a running item's progress becomes a ``work.progress``, and what it says (R11.4-01..03).

R11.4-03: workers SHOULD report at meaningful checkpoints, when an estimate changes
materially, or when blocked. The stated cadence (``config.ProgressCadence``):

- the first report right after the start, so the group sees the lease in use;
- **blocked**, or unblocked again: at once, whatever the last report's age (a blocker is what
  a coordinator must act on);
- a new **milestone** (the handler's meaningful checkpoint) or a new phase;
- a **material estimate change**: the expected finish moved by at least ``estimate_shift_s``
  or by ``estimate_shift_fraction`` of the time that was left, or the confidence by
  ``confidence_shift`` (an item that overruns its estimate thus reports once per
  ``estimate_shift_s``, not on every tick);
- otherwise a **heartbeat** once ``max_interval_s`` has passed, so silence means trouble.

Except for a blocker, nothing is sent within ``min_interval_s`` of the previous report: a
handler that calls ``milestone`` in a tight loop costs the group one event per interval, not
one per call. Pure: every time is an argument.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from missionweave.protocol.timefmt import format_timestamp

from .config import ProgressCadence
from .handlers import ProgressState

STARTED = "started"
BLOCKED = "blocked"
UNBLOCKED = "unblocked"
MILESTONE = "milestone"
PHASE = "phase"
ESTIMATE = "estimate"
HEARTBEAT = "heartbeat"


@dataclass(frozen=True, slots=True)
class Estimate:
    finish_at: datetime
    confidence: float


@dataclass(frozen=True, slots=True)
class Reported:
    """The last report sent (or buffered) for an item."""

    at: datetime
    state: ProgressState
    estimate: Estimate


def estimate_of(
    state: ProgressState, *, started_at: datetime, expected_s: float, now: datetime
) -> Estimate:
    """The handler's own estimate, else the start plus the expected slot time (the contract's
    compute estimate or the scheduler's reservation) — never in the past."""
    if state.finish_at is not None and state.confidence is not None:
        return Estimate(max(state.finish_at, now), state.confidence)
    expected = started_at + timedelta(seconds=expected_s)
    if expected >= now:
        return Estimate(expected, 0.5)
    return Estimate(now, 0.3)  # overrunning: the guess is worth less


def report_due(
    last: Reported | None,
    state: ProgressState,
    estimate: Estimate,
    now: datetime,
    cadence: ProgressCadence,
) -> str | None:
    """Why a report is due now, or ``None`` (see the module doc for the order)."""
    if last is None:
        return STARTED
    if state.blockers != last.state.blockers:
        return BLOCKED if state.blockers else UNBLOCKED
    elapsed = (now - last.at).total_seconds()
    if elapsed < cadence.min_interval_s:
        return None
    if state.milestones != last.state.milestones:
        return MILESTONE
    if state.phase != last.state.phase:
        return PHASE
    shift = abs((estimate.finish_at - last.estimate.finish_at).total_seconds())
    left = max(0.0, (last.estimate.finish_at - now).total_seconds())
    # with no time left (an overrun), only the absolute shift counts: a fraction of nothing
    # would make every tick material
    if shift >= cadence.estimate_shift_s or (
        left > 0 and shift >= cadence.estimate_shift_fraction * left
    ):
        return ESTIMATE
    if abs(estimate.confidence - last.estimate.confidence) >= cadence.confidence_shift:
        return ESTIMATE
    if elapsed >= cadence.max_interval_s:
        return HEARTBEAT
    return None


def progress_body(
    *, work_item: str, lease_id: str, state: ProgressState, estimate: Estimate
) -> dict[str, Any]:
    """The ``work.progress`` body (wire.md §9): structured, no percentages (R11.4-02)."""
    return {
        "work_item": work_item,
        "lease_id": lease_id,
        "phase": state.phase,
        "milestones_completed": list(state.milestones),
        "next_checkpoint": state.next_checkpoint,
        "blockers": list(state.blockers),
        "estimate": {
            "finish_at": format_timestamp(estimate.finish_at),
            "confidence": estimate.confidence,
        },
        "evidence_refs": list(state.evidence_refs),
    }
