"""The dependency graph of a group: one aggregate holding every declared edge (R10.4-01), so
a new edge is checked for a cycle against all of them (R10.4-02)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..evolvers import REGISTRY, evolves
from ..facts import Fact, StateKey

GRAPH_KEY: StateKey = ("dependencies", "graph")


@dataclass(frozen=True, slots=True)
class DependencyGraph:
    """Every declared edge of a group: WorkItem → the WorkItems it depends on (R10.4-01)."""

    edges: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"edges": {item: list(deps) for item, deps in self.edges.items()}}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DependencyGraph:
        return cls({item: tuple(deps) for item, deps in data["edges"].items()})

    def cycle_through(self, item: str, depends_on: tuple[str, ...]) -> list[str] | None:
        """The cycle that adding ``item → depends_on`` would close, as a path, or ``None``."""
        edges = {**self.edges, item: depends_on}
        # depth-first search from each dependency back to ``item``
        stack: list[tuple[str, list[str]]] = [(dep, [item, dep]) for dep in depends_on]
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
    return DependencyGraph({**graph.edges, p["work_item"]: tuple(p.get("depends_on", ()))})
