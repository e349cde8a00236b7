"""The WorkItems that wait on another one, told when it ends or comes back (R10.2-20, R10.2-21,
R10.4-03).

A WorkItem whose ``dependency_policy`` is ``all_verified`` cannot start while a dependency is
not verified. When that dependency ends ``cancelled`` (terminal, R10.2-19) or ``failed``
(which only a coordinator's new offer moves on, R10.2-20), the dependent would wait for ever
and nobody would know. The state table has no row that moves a WorkItem nobody has started
(``open``, ``offered``, ``queued``) to ``blocked``: ``work.block`` is its owner's, from
``active`` (R10.2-09), and R10.2-22 refuses any other move. So the dependent keeps its state,
and the command that ended the dependency appends, for each such dependent, a
``work.dependency_ended`` naming the dependency, how it ended and why: every reader of the log
(its owner, the coordinator) is told at once, and the dependent's projection holds the entry
(``ended_dependencies``) for screens and the API. When the dependency is offered again
(R10.2-20) or replaced (R10.2-21), the same command appends ``work.dependency_restored`` and
the entry goes.

A dependency names the work, not the id that first carried it: a replacement carries the
replaced item's work on, so a dependent waits for the replacement (``DependencyGraph.resolve``)
without being authorised again. ``all_terminal`` dependents are not told: a failed or
cancelled dependency already meets their policy.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .. import states as S
from ..evolvers import evolves
from ..facts import Fact, NewEvent, StateKey, View
from ..frozen import replace
from .dependencies import GRAPH_KEY, REPLACED, DependencyGraph
from .item_evolvers import WORK_ITEM
from .items import WorkItem, work_item_key

ENDED = "work.dependency_ended"
RESTORED = "work.dependency_restored"

#: the states of a dependent that has not started: the only ones a dependency still gates
#: (``work.start`` checks the policy, R10.4-03)
NOT_STARTED = frozenset({S.OPEN, S.OFFERED, S.QUEUED})


@dataclass(frozen=True, slots=True)
class Ending:
    """A WorkItem a decision ends (``outcome``: failed or cancelled), and why."""

    work_item: str
    outcome: str
    reason: str


@dataclass(frozen=True, slots=True)
class Restoring:
    """A WorkItem a decision brings back: offered again (``replacement`` None) or replaced."""

    work_item: str
    replacement: str | None = None


def keys_of_dependents(view: View, work_items: Iterable[str]) -> set[StateKey]:
    """The graph, then the WorkItems that wait on any of ``work_items`` (once it is loaded)."""
    keys = {GRAPH_KEY}
    graph: DependencyGraph | None = view.get(GRAPH_KEY)
    if graph is not None:
        for work_item in work_items:
            keys.update(work_item_key(d) for d in graph.dependents_of(work_item))
    return keys


def events_for(
    view: View,
    endings: Iterable[Ending],
    restorings: Iterable[Restoring],
    *,
    ended_here: frozenset[str],
) -> list[NewEvent]:
    """``work.dependency_ended`` for each unstarted ``all_verified`` dependent of an ending
    (not itself ended by the same decision, ``ended_here``), then ``work.dependency_restored``
    for each dependent holding an entry of a restored item."""
    graph: DependencyGraph = view.get(GRAPH_KEY) or DependencyGraph()
    events: list[NewEvent] = []
    for ending in endings:
        for dependent in _waiting(view, graph, ending.work_item, ended_here):
            payload = {
                "work_item": dependent.id,
                "dependency": ending.work_item,
                "outcome": ending.outcome,
                "reason": ending.reason,
            }
            events.append(NewEvent(ENDED, payload))
    for restoring in restorings:
        for dependent in _dependents(view, graph, restoring.work_item):
            entries = dependent.ended_dependencies
            if not any(entry["dependency"] == restoring.work_item for entry in entries):
                continue
            payload = {"work_item": dependent.id, "dependency": restoring.work_item}
            if restoring.replacement is not None:
                payload["replaced_by"] = restoring.replacement
            events.append(NewEvent(RESTORED, payload))
    return events


def _dependents(view: View, graph: DependencyGraph, work_item: str) -> list[WorkItem]:
    found = (view.get(work_item_key(d)) for d in graph.dependents_of(work_item))
    return [item for item in found if item is not None]


def _waiting(
    view: View, graph: DependencyGraph, work_item: str, ended_here: frozenset[str]
) -> list[WorkItem]:
    return [
        item
        for item in _dependents(view, graph, work_item)
        if item.id not in ended_here
        and item.state in NOT_STARTED
        and item.contract.get("dependency_policy", "all_verified") == "all_verified"
    ]


def resolved(view: View, work_item: str) -> WorkItem | None:
    """The WorkItem carrying ``work_item``'s work: itself or its last loaded replacement."""
    item: WorkItem | None = view.get(work_item_key(work_item))
    seen = {work_item}
    while item is not None and item.replaced_by is not None and item.replaced_by not in seen:
        seen.add(item.replaced_by)
        item = view.get(work_item_key(item.replaced_by))
    return item


def keys_of_resolution(view: View, work_items: Iterable[str]) -> set[StateKey]:
    """The keys ``resolved`` reads for each of ``work_items``, as far as they are loaded."""
    keys: set[StateKey] = set()
    for work_item in work_items:
        keys.add(work_item_key(work_item))
        item: WorkItem | None = view.get(work_item_key(work_item))
        seen = {work_item}
        while item is not None and item.replaced_by is not None and item.replaced_by not in seen:
            seen.add(item.replaced_by)
            keys.add(work_item_key(item.replaced_by))
            item = view.get(work_item_key(item.replaced_by))
    return keys


# --- evolvers --------------------------------------------------------------------------------


@evolves(REPLACED, aggregate=WORK_ITEM)
def _replaced(item: WorkItem, fact: Fact, key: StateKey) -> WorkItem:
    return replace(item, replaced_by=fact.payload["replaced_by"])


@evolves(ENDED, aggregate=WORK_ITEM)
def _dependency_ended(item: WorkItem, fact: Fact, key: StateKey) -> WorkItem:
    p = fact.payload
    entry: dict[str, Any] = {
        "dependency": p["dependency"],
        "outcome": p["outcome"],
        "reason": p["reason"],
        "sequence": fact.sequence,
        "recorded_at": fact.recorded_at,
    }
    kept = tuple(e for e in item.ended_dependencies if e["dependency"] != p["dependency"])
    return replace(item, ended_dependencies=(*kept, entry))


@evolves(RESTORED, aggregate=WORK_ITEM)
def _dependency_restored(item: WorkItem, fact: Fact, key: StateKey) -> WorkItem:
    dependency = fact.payload["dependency"]
    kept = tuple(e for e in item.ended_dependencies if e["dependency"] != dependency)
    return replace(item, ended_dependencies=kept)
