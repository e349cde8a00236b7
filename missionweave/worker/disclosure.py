"""When a queued item's schedule is disclosed again (R11.2-01, R0-09; MWP-WRK-012).

R11.2-01: on acceptance and on *material* schedule changes the owner publishes the item's
estimated start window, completion, confidence, capacity state and computation time. The body
comes from ``StartEstimate.disclosure`` (the protocol's ``disclosure_body``): only this item's
id, epoch and times, one confidence, one capacity value — nothing of another group can travel
in it (R11.2-02), whatever this module decides.

Material, here: the latest start or the completion moved by at least ``shift_s`` or by
``shift_fraction`` of the time until the previously disclosed latest start (and the waits
themselves changed, below), or the confidence
moved by ``confidence_shift``, or the item stopped (or started) waiting for its execution
approval. A capacity state change alone is not material: it flips each time any slot frees or
fills, and would make every queued item of every group re-disclose on each start; it is sent
with the next time shift instead.

An estimate that only slid with the clock is not news either: an item that waits for a
person's approval is estimated to start a minute after *now*, whatever now is, and the rule
above re-disclosed it every fifteen seconds (on the demo, four events a minute per waiting
item, filling the mission's latest events). When the waits measured from each estimate's own
computation time are the same (within ``shift_fraction`` of the longer wait, at most
``shift_s``), the schedule is disclosed again only once the last disclosure is ``refresh_s``
old, so a shown window is never stale for longer than that.

Nor is an estimate that flaps between two values. A worker whose slots fill and free every few
seconds estimates a queued item "now" while a slot is free and "when the next slot frees"
while none is: the two differ by more than the threshold, and the demo's waiting item
disclosed four times in fifteen seconds, alternating. An estimate back within the threshold
of the one disclosed *before* the last (the same waits, confidence and gate) is a flap: it is
held like a slide, until ``refresh_s``. A change that truly returns to an earlier estimate is
then late by at most ``refresh_s``, the same bound as a slide.

Two more rules came from watching the demo, whose jobs last a minute: an item's estimate
swung by minutes as the jobs ahead of it ran, and a queued item disclosed five times in
forty-five seconds.

- An item waiting for its execution approval starts after a person approves it, whatever the
  worker's slots do: its estimate is conditional, and only the gate opening (or a new
  ownership) is news; it is refreshed every ``refresh_s``.
- A time or confidence change is disclosed at most once per ``settle_s`` (a minute) per item:
  within it the change is held, and once it has passed the estimate of that moment is
  compared with the last one disclosed and sent if it still differs. The gate and a new
  ownership are never held.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .scheduler import StartEstimate

SHIFT_S = 60.0
SHIFT_FRACTION = 0.25
CONFIDENCE_SHIFT = 0.2
REFRESH_S = 600.0
SETTLE_S = 60.0


@dataclass(frozen=True, slots=True)
class Disclosed:
    """The last disclosure of an item: its ownership epoch and the estimate it carried."""

    ownership_epoch: int
    estimate: StartEstimate
    body: dict[str, Any]
    #: the estimate disclosed before ``estimate`` in the same ownership, if any: a new one
    #: back within the threshold of it is a flap, not news
    earlier: StartEstimate | None = None

    def after(
        self, ownership_epoch: int, estimate: StartEstimate, body: dict[str, Any]
    ) -> Disclosed:
        """The disclosure of ``estimate`` that follows this one (``earlier`` kept only in the
        same ownership)."""
        same = ownership_epoch == self.ownership_epoch
        return Disclosed(ownership_epoch, estimate, body, self.estimate if same else None)


def material(
    last: Disclosed | None,
    estimate: StartEstimate,
    *,
    ownership_epoch: int,
    now: datetime,
    shift_s: float = SHIFT_S,
    shift_fraction: float = SHIFT_FRACTION,
    confidence_shift: float = CONFIDENCE_SHIFT,
    refresh_s: float = REFRESH_S,
    settle_s: float = SETTLE_S,
) -> bool:
    """Whether ``estimate`` must be disclosed: a first disclosure (acceptance, or a new
    ownership epoch) always is."""
    if last is None or last.ownership_epoch != ownership_epoch:
        return True
    before = last.estimate
    if estimate.gated != before.gated:
        return True
    age = (now - before.computed_at).total_seconds()
    if estimate.gated:  # waiting for a person: any start is "after the approval"
        return age >= refresh_s
    if age < settle_s:  # a change waits out ``settle_s``, then goes with that moment's estimate
        return False
    if abs(estimate.confidence - before.confidence) >= confidence_shift:
        return True
    horizon = max(0.0, (before.start_latest - now).total_seconds())
    threshold = max(min(shift_s, shift_fraction * horizon) if horizon else shift_s, 1.0)
    moved = max(
        abs((estimate.start_latest - before.start_latest).total_seconds()),
        abs((estimate.finish_expected - before.finish_expected).total_seconds()),
    )
    if moved < threshold:
        return False
    stale = age >= refresh_s
    if _same_waits(before, estimate, shift_s, shift_fraction):
        return stale
    earlier = last.earlier
    flapped_back = (
        earlier is not None
        and earlier.gated == estimate.gated
        and abs(earlier.confidence - estimate.confidence) < confidence_shift
        and _same_waits(earlier, estimate, shift_s, shift_fraction)
    )
    return stale or not flapped_back


def _same_waits(
    before: StartEstimate, estimate: StartEstimate, shift_s: float, shift_fraction: float
) -> bool:
    """Whether the waits (each from its own estimate's computation time) are the same within
    ``shift_fraction`` of the longer wait, at most ``shift_s``: a wait of two minutes that
    comes out eight seconds longer is the same wait. (The moved threshold above shrinks with
    the time left, which for a start always a minute or two ahead is a few seconds.)"""
    waits = list(zip(_waits(before), _waits(estimate), strict=True))
    longest = max(max(pair) for pair in waits)
    tolerance = max(min(shift_s, shift_fraction * longest), 1.0)
    return all(abs(a - b) < tolerance for a, b in waits)


def _waits(estimate: StartEstimate) -> tuple[float, float]:
    """The latest start and the completion, in seconds from when the estimate was made."""
    return (
        (estimate.start_latest - estimate.computed_at).total_seconds(),
        (estimate.finish_expected - estimate.computed_at).total_seconds(),
    )
