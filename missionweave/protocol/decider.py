"""``decide`` and ``evolve``: the pure heart of the authority.

``decide(view, command)`` refuses (``ProtocolError``) or returns the events to append.
``evolve(key, aggregate, fact)`` folds one appended event into one aggregate. ``routes(fact)``
names the aggregates an event changes. The write path and ``rebuild_projections`` both apply
events with ``evolve``, so a live projection and a replay cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import Any

from . import memberships, missions, offline, workitems
from .commands import COMMANDS
from .facts import Command, Decision, Fact, StateKey, View

_ROUTES: dict[str, Callable[[dict[str, Any]], list[StateKey]]] = {
    **memberships.EVENT_ROUTES,
    **missions.EVENT_ROUTES,
    **workitems.EVENT_ROUTES,
}
# Events that change a Mission besides its own: the WorkItem lists and child links.
_ALSO_MISSION = {
    "mission.child_created": lambda payload: [missions.mission_key(payload["mission"])],
}


def decide(view: View, command: Command) -> Decision:
    """The events ``command`` produces against ``view`` (a ``ProtocolError`` if refused).

    A command carrying the offline binding is judged against its historical lease window
    instead of its type's usual rules (R11.5-10), whatever its type: ``offline`` refuses the
    types that may not be buffered.
    """
    if offline.is_buffered(command):
        return offline.decide_buffered(view, command)
    return COMMANDS[command.type].decide(view, command)


def routes(fact: Fact) -> list[StateKey]:
    """The aggregates ``fact`` changes; events that change none (audit only) route nowhere."""
    route = _ROUTES.get(fact.type)
    keys = route(fact.payload) if route else []
    also = _ALSO_MISSION.get(fact.type)
    return keys + also(fact.payload) if also else keys


def evolve(key: StateKey, current: Any, fact: Fact) -> Any:
    """The aggregate at ``key`` after ``fact``."""
    kind = key[0]
    if kind == "membership":
        return memberships.evolve_membership(current, fact)
    if kind == "mission":
        return missions.evolve_mission(current, fact, key)
    if kind == "work_item":
        return workitems.evolve_work_item(current, fact)
    if kind == "proposal":
        return workitems.evolve_proposal(current, fact)
    if kind == "dependencies":
        return workitems.evolve_graph(current, fact)
    raise ValueError(f"no aggregate of kind {kind!r}")


def apply(state: MutableMapping[StateKey, Any], fact: Fact) -> list[StateKey]:
    """Fold ``fact`` into ``state`` in place; return the keys it changed."""
    changed = routes(fact)
    for key in changed:
        state[key] = evolve(key, state.get(key), fact)
    return changed
