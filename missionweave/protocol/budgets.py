"""Budgets in the six dimensions of R10.1-01(g), charged up the whole ancestry.

A charge (``work.usage``, or a buffered command's offline delta at reconciliation) adds to the
WorkItem's ``used`` and to every Mission above it: its own Mission, that Mission's parent, and
so on. It is checked against every limit on the way *before* anything is appended, so an
overflow anywhere refuses the whole command with no event and no state change (R11.5-13).
The group lock makes check-then-charge atomic.

Ancestry stops at a group boundary: a child mission in another group (``group/m`` notation)
has its own budget, set by the coordinator who created it (docs/protocol.md, "Budgets").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from .errors import ErrorCode, ProtocolError
from .facts import StateKey, View

#: deepest same-group mission chain a charge follows (a guard against a corrupt cycle)
MAX_ANCESTRY = 64
#: the most any ``used`` may count, in a limited dimension or an unlimited one (R11.5-13):
#: past 2**53-1 a JSON number is no longer exact (wire.md §1), PostgreSQL's jsonb writes such a
#: double back as an integer that RFC 8785 refuses, and repeated charges of huge doubles reach
#: infinity, which no JSON can hold. A charge that would pass it is refused like any overflow.
MAX_USED = 2**53 - 1

#: the event of offline reconciliation's charge (R11.5-12)
USAGE_RECORDED = "ext.missionweaveprotocol.core.resource_usage_recorded"
#: the events that charge usage to a WorkItem and its mission ancestry
CHARGE_EVENTS = frozenset({"work.usage_recorded", USAGE_RECORDED, "mission.child_usage_recorded"})


class Budgeted(Protocol):
    id: str
    limits: dict[str, Any]
    used: dict[str, Any]


def add_usage(used: Mapping[str, Any], usage: Mapping[str, Any]) -> dict[str, Any]:
    """``used`` plus a usage delta, dimension by dimension (absent = 0)."""
    total = dict(used)
    for dimension, amount in usage.items():
        total[dimension] = total.get(dimension, 0) + amount
    return total


def _mission_key(mission_id: str) -> StateKey:
    return ("mission", mission_id)


def _same_group_parent(mission: Any) -> str | None:
    parent = getattr(mission, "parent", None)
    if parent is None or "/" in parent:
        return None
    return parent


def ancestry_keys(view: View, mission_id: str) -> set[StateKey]:
    """The mission keys to load for a charge: as far up as what is loaded reveals.

    The write path asks again until nothing new appears, so a chain loads one level a round.
    """
    keys = {_mission_key(mission_id)}
    current = view.get(_mission_key(mission_id))
    seen = {mission_id}
    while current is not None and len(seen) < MAX_ANCESTRY:
        parent = _same_group_parent(current)
        if parent is None or parent in seen:
            break
        seen.add(parent)
        keys.add(_mission_key(parent))
        current = view.get(_mission_key(parent))
    return keys


def ancestry(view: View, mission_id: str) -> list[Any]:
    """The mission and its same-group ancestors, nearest first (all loaded by ``ancestry_keys``)."""
    chain: list[Any] = []
    current = view.get(_mission_key(mission_id))
    seen: set[str] = set()
    while current is not None and current.id not in seen and len(chain) < MAX_ANCESTRY:
        chain.append(current)
        seen.add(current.id)
        parent = _same_group_parent(current)
        current = view.get(_mission_key(parent)) if parent is not None else None
    return chain


def check_charge(holders: list[tuple[str, Budgeted]], usage: Mapping[str, Any]) -> None:
    """``BUDGET_EXCEEDED`` naming the first (kind, id, dimension) a charge would overflow.

    ``holders`` is [("work_item", item), ("mission", m), ("mission", parent), ...].
    """
    for kind, holder in holders:
        for dimension, amount in usage.items():
            if not amount:
                continue
            # a dimension left out is unlimited (wire.md §10) up to what can be counted
            limit = holder.limits.get(dimension)
            if limit is None or limit > MAX_USED:
                limit = MAX_USED
            used = holder.used.get(dimension, 0)
            if not used + amount <= limit:  # also refuses a sum that overflowed to infinity
                raise ProtocolError(
                    ErrorCode.BUDGET_EXCEEDED,
                    f"{dimension}: {used} used + {amount} would exceed the {kind} "
                    f"{holder.id}'s limit of {limit}",
                    requirement="R11.5-13",
                    details={
                        "dimension": dimension,
                        "budget": {"kind": kind, "id": holder.id, "limit": limit, "used": used},
                        "requested": amount,
                    },
                )


def non_zero(usage: Mapping[str, Any]) -> dict[str, Any]:
    return {dimension: amount for dimension, amount in usage.items() if amount}
