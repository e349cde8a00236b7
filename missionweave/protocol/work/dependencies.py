"""The dependency graph of a group: one aggregate holding every declared edge (R10.4-01), so
a new edge is checked for a cycle against all of them (R10.4-02), and every replacement
(R10.2-21), so the items that wait on a replaced WorkItem can be found and told."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..evolvers import REGISTRY, evolves
from ..facts import Fact, StateKey

GRAPH_KEY: StateKey = ("dependencies", "graph")
#: ``work.authorize`` with ``replaces`` appends this for the replaced WorkItem (R10.2-21)
REPLACED = "work.replaced"


@dataclass(frozen=True, slots=True)
class DependencyGraph:
    """Every declared edge of a group: WorkItem → the WorkItems it depends on (R10.4-01),
    and every replacement: replaced WorkItem → the one that carries its work on (R10.2-21)."""

    edges: dict[str, tuple[str, ...]] = field(default_factory=dict)
    replacements: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "edges": {item: list(deps) for item, deps in self.edges.items()},
            "replacements": dict(self.replacements),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DependencyGraph:
        return cls(
            {item: tuple(deps) for item, deps in data["edges"].items()},
            dict(data.get("replacements", {})),
        )

    def resolve(self, work_item: str) -> str:
        """The WorkItem that carries ``work_item``'s work now: itself, or the last of its
        replacements (a chain ends: replacing closes no cycle, ``cycle_through``)."""
        seen = {work_item}
        while work_item in self.replacements:
            work_item = self.replacements[work_item]
            if work_item in seen:  # pragma: no cover - refused at authorisation
                break
            seen.add(work_item)
        return work_item

    def dependents_of(self, work_item: str) -> list[str]:
        """The WorkItems that wait on ``work_item``: a declared dependency on it, or on an item
        it replaces (R10.2-21: a dependency names the work, which a replacement carries on)."""
        return sorted(
            item
            for item, deps in self.edges.items()
            if any(self.resolve(dep) == work_item for dep in deps)
        )

    def cycle_through(
        self, item: str, depends_on: tuple[str, ...], *, replaces: str | None = None
    ) -> list[str] | None:
        """The cycle that adding ``item → depends_on`` (and, for a replacement, ``replaces →
        item``: the replaced item now waits on its replacement) would close, as a path, or
        ``None``."""
        edges = {**self.edges, item: depends_on}
        waits = {**self.replacements, **({replaces: item} if replaces is not None else {})}
        for old, new in waits.items():
            edges[old] = (*edges.get(old, ()), new)
        # depth-first search from each dependency back to ``item``
        stack: list[tuple[str, list[str]]] = [(dep, [item, dep]) for dep in edges[item]]
        seen: set[str] = set()
        while stack:
            node, path = stack.pop()
            if node == item:
                return path
            if node in seen:
                continue
            seen.add(node)
            stack.extend((nxt, [*path, nxt]) for nxt in edges.get(node, ()))
        return None


DEPENDENCIES = REGISTRY.aggregate("dependencies", initial=DependencyGraph)


@evolves("work.authorized", aggregate=DEPENDENCIES, keys=lambda fact: [GRAPH_KEY])
def _authorized(graph: DependencyGraph, fact: Fact, key: StateKey) -> DependencyGraph:
    p = fact.payload
    edges = {**graph.edges, p["work_item"]: tuple(p.get("depends_on", ()))}
    return DependencyGraph(edges, graph.replacements)


@evolves(REPLACED, aggregate=DEPENDENCIES, keys=lambda fact: [GRAPH_KEY])
def _replaced(graph: DependencyGraph, fact: Fact, key: StateKey) -> DependencyGraph:
    p = fact.payload
    return DependencyGraph(graph.edges, {**graph.replacements, p["work_item"]: p["replaced_by"]})
