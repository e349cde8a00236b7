"""``decide`` and ``evolve``: the pure heart of the authority.

``decide(view, command)`` refuses (``ProtocolError``) or returns the events to append.
``evolve(key, aggregate, fact)`` folds one appended event into one aggregate. ``routes(fact)``
names the aggregates an event changes. The write path and ``rebuild_projections`` both apply
events with ``evolve``, so a live projection and a replay cannot drift apart.

Routing and evolving are looked up in the evolver registry (``evolvers.REGISTRY``), which the
modules below fill as they are imported.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from . import context, memberships, offline, snapshots
from .artifacts import evolvers as artifact_evolvers
from .artifacts.citations import named_by
from .artifacts.naming import require_nameable
from .commands import COMMANDS
from .evolvers import REGISTRY
from .facts import Command, Decision, Fact, StateKey, View
from .missions import cleanup
from .missions import evolvers as mission_evolvers
from .work import dependencies, dependents, item_evolvers, proposals

#: the modules whose evolvers (and audit-only declarations) this decider routes with
EVOLVER_MODULES = (
    memberships,
    mission_evolvers,
    item_evolvers,
    dependencies,
    dependents,
    cleanup,
    proposals,
    snapshots,
    artifact_evolvers,
    context,
)


def decide(view: View, command: Command) -> Decision:
    """The events ``command`` produces against ``view`` (a ``ProtocolError`` if refused).

    A command carrying the offline binding is judged against its historical lease window
    instead of its type's usual rules (R11.5-10), whatever its type: ``offline`` refuses the
    types that may not be buffered.
    """
    if offline.is_buffered(command):
        decision = offline.decide_buffered(view, command)
    else:
        decision = COMMANDS[command.type].decide(view, command)
    # R10.2-14: whatever the command, what it ends is cleaned up — a running child mission
    # cancelled, the items waiting on it told (R10.2-20, R10.2-21)
    decision = cleanup.clean_up(view, command, decision)
    # Last: a command otherwise accepted may still name no artifact its sender may not name,
    # refused like a digest never stored (wire.md §9), after every rule of its own (wire.md §8
    # precedence is unchanged)
    require_nameable(view, named_by(command.type, command.body))
    return decision


def routes(fact: Fact) -> list[StateKey]:
    """The aggregates ``fact`` changes; events that change none (audit only) route nowhere."""
    return REGISTRY.routes(fact)


def evolve(key: StateKey, current: Any, fact: Fact) -> Any:
    """The aggregate at ``key`` after ``fact``."""
    return REGISTRY.evolve(key, current, fact)


def events_changing(kind: str) -> frozenset[str]:
    """The event types that change aggregates of ``kind`` (``"work_item"``, ``"mission"``…)."""
    return REGISTRY.events_changing(kind)


def apply(
    state: MutableMapping[StateKey, Any], fact: Fact, keys: list[StateKey] | None = None
) -> list[StateKey]:
    """Fold ``fact`` into ``state`` in place; return the keys it changed (``keys``, when the
    caller has already asked ``routes``)."""
    changed = routes(fact) if keys is None else keys
    for key in changed:
        state[key] = evolve(key, state.get(key), fact)
    return changed
