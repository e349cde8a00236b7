"""Contract resources as admission and the scheduler see them (R10.3-08, R11.1-09, R0-06).

A Work Contract's ``resources`` (R10.1-01(d), wire.md §10) holds ``max_concurrency`` and any
further named non-negative amounts. Two names describe the item rather than something it
holds: ``max_concurrency`` (how parallel the item itself may be) and ``estimated_compute_s``
(the scheduler's slot-time estimate, ``intake``). Every other name (``gpu``, ``memory_gb``,
``licence.matlab``) is an amount the item *holds while it runs*.

The worker declares what it has in its config's ``[resources]`` table (``config``). Then:

- admission refuses an offer whose amounts this worker can never provide — a name it has
  none of, or more than it has in all — with the reason ``capability`` (R10.3-10). Not
  ``capacity``: that reason may pass on a retry (a full queue empties), this one never does,
  and ``admission.PRECEDENCE`` ranks the lasting reasons first so a coordinator stops
  re-offering such work;
- the scheduler is given only the amounts free *now* (``ResourceLedger.free``): an item whose
  amounts are held by running work waits, while work that fits takes the slot (the scheduler
  is work-conserving by need class). What a pick needs is held until its slot is released
  (the runtime's ``scheduler.finish``), then freed.

Pure: no clock, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .scheduler import Needs, Resources

#: names in a contract's ``resources`` that describe the item, not an amount it holds
DESCRIPTIVE = ("max_concurrency", "estimated_compute_s")

Key = tuple[str, str]


def needed_amounts(resources: Mapping[str, Any] | None) -> dict[str, float]:
    """The amounts a contract's ``resources`` holds while the item runs (zero ones left out)."""
    return {
        str(name): float(amount)
        for name, amount in (resources or {}).items()
        if name not in DESCRIPTIVE
        and isinstance(amount, int | float)
        and not isinstance(amount, bool)
        and amount > 0
    }


def needs_of(amounts: Mapping[str, float] | None) -> Needs:
    """The scheduler's ``Needs`` for these amounts; equal amounts make one need class."""
    return Needs(amounts=tuple((name, value) for name, value in (amounts or {}).items() if value))


def shortfall(needs: Needs, have: Mapping[str, float]) -> list[str]:
    """What this worker can never provide, in words for a rejection's detail (R10.3-10)."""
    missing = []
    for name, amount in needs.amounts:
        total = have.get(name, 0.0)
        if total <= 0:
            missing.append(f"needs {name} {amount:g}, this worker has none")
        elif total < amount:
            missing.append(f"needs {name} {amount:g}, this worker has {total:g} in all")
    return missing


class ResourceLedger:
    """What this worker has, and what each running item holds of it.

    Not thread-safe: the runtime's control loop is its only caller (picks and finishes happen
    there)."""

    def __init__(self, have: Mapping[str, float]) -> None:
        self.have = {str(name): float(amount) for name, amount in have.items()}
        self._held: dict[Key, tuple[tuple[str, float], ...]] = {}

    def totals(self, slots: int) -> Resources:
        """Everything the worker has, busy or not: admission's yardstick (R10.3-08)."""
        return Resources(slots=slots, amounts=dict(self.have))

    def free(self, slots: int) -> Resources:
        """What is free now, for ``Scheduler.pick`` with ``slots`` free slots (R11.1-09)."""
        free = dict(self.have)
        for amounts in self._held.values():
            for name, amount in amounts:
                free[name] = free.get(name, 0.0) - amount
        return Resources(slots=slots, amounts=free)

    def hold(self, key: Key, needs: Needs) -> None:
        """A picked item takes its amounts until ``release``; more than is free is a bug of
        the caller (the scheduler picks only what fits), so it raises."""
        if not needs.amounts:
            return
        if not needs.fits(self.free(1)):
            raise ValueError(f"{key[1]} needs more than is free: {dict(needs.amounts)}")
        self._held[key] = needs.amounts

    def release(self, key: Key) -> None:
        """The item left its slot: its amounts are free again (idempotent)."""
        self._held.pop(key, None)

    def held(self) -> dict[str, float]:
        """What running work holds now, by name (Presence reports it, R11.1-11)."""
        held: dict[str, float] = {}
        for amounts in self._held.values():
            for name, amount in amounts:
                held[name] = held.get(name, 0.0) + amount
        return held
