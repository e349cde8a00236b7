"""A mission's dependency graph as server-rendered inline SVG: a layered layout, then markup.

The layout is the classic layered (Sugiyama-style) drawing cut down to what a page can
afford for a 1,000-item mission in a few milliseconds:

1. **Columns**: a WorkItem's column is the length of the longest dependency path from a
   root (an item with no dependency inside the mission), computed in one topological pass
   (Kahn's algorithm, O(n + e)). Every edge therefore points right, from a dependency to the
   item that waits for it (R10.4-04 keeps the graph acyclic; a cycle is still drawn, never
   looped over, should a projection ever hold one).
2. **Rows**: inside a column, items are ordered by the barycentre of their neighbours' rows
   — down the columns, back up, and down again — which removes most edge crossings at
   O((n + e) log n).
3. **Lanes**: a column with more than ``max_rows`` items is folded into several side-by-side
   lanes, so a mission of many independent items is a wide block that scrolls in its box,
   not a page one node wide and a hundred screens tall.

Pure Python with no Django import: the view hands in the link of each node and marks the
returned markup safe; every text that reaches the markup is escaped here.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape
from typing import NamedTuple

from missionweave.wording import counted

#: geometry of one node and of the gaps between them, in SVG user units (CSS pixels)
NODE_WIDTH = 184
NODE_HEIGHT = 54
COLUMN_GAP = 44
ROW_GAP = 12
PADDING = 8
#: a column longer than this is folded into lanes
MAX_ROWS = 16
#: characters of an id and of a goal that fit on a node's lines (the full text is the title)
ID_CHARS = 24
GOAL_CHARS = 28


@dataclass(frozen=True, slots=True)
class GraphNode:
    """A WorkItem as the graph needs it: its id, a title (the contract's goal), its state
    and the ids it depends on (ids outside the mission are kept for the text, not drawn)."""

    id: str
    title: str
    state: str
    depends_on: tuple[str, ...] = ()


class PlacedNode(NamedTuple):
    node: GraphNode
    rank: int  # longest dependency path from a root
    x: int
    y: int
    #: dependencies of this node outside the mission (or unknown), shown in the text only
    outside: tuple[str, ...]


class Edge(NamedTuple):
    dependency: int  # index into ``GraphLayout.nodes``
    dependent: int


@dataclass(frozen=True, slots=True)
class GraphLayout:
    nodes: tuple[PlacedNode, ...]  # by column, then row: the reading order of the list
    edges: tuple[Edge, ...]
    width: int
    height: int
    ranks: int
    has_cycle: bool

    def path(self, edge: Edge) -> str:
        """A cubic curve from the dependency's right side to the dependent's left side."""
        start, end = self.nodes[edge.dependency], self.nodes[edge.dependent]
        x1, y1 = start.x + NODE_WIDTH, start.y + NODE_HEIGHT // 2
        x2, y2 = end.x - 2, end.y + NODE_HEIGHT // 2
        bend = max(abs(x2 - x1) // 2, 24)
        return f"M{x1} {y1}C{x1 + bend} {y1} {x2 - bend} {y2} {x2} {y2}"


def _ranks(
    count: int, dependencies: list[list[int]], dependents: list[list[int]]
) -> tuple[list[int], bool]:
    """Longest path from a root for every node (Kahn's order), and whether a cycle was left.

    Nodes on a cycle never reach in-degree 0; they get one column past their placed
    dependencies, so the drawing stays finite and shows the loop as a backward edge.
    """
    waiting = [len(deps) for deps in dependencies]
    rank = [0] * count
    queue = deque(index for index in range(count) if waiting[index] == 0)
    placed = 0
    while queue:
        index = queue.popleft()
        placed += 1
        for after in dependents[index]:
            rank[after] = max(rank[after], rank[index] + 1)
            waiting[after] -= 1
            if waiting[after] == 0:
                queue.append(after)
    if placed == count:
        return rank, False
    for index in range(count):
        if waiting[index] > 0:
            rank[index] = max([rank[index], *(rank[dep] + 1 for dep in dependencies[index])])
    return rank, True


def _order_layers(
    layers: list[list[int]], dependencies: list[list[int]], dependents: list[list[int]]
) -> None:
    """Barycentre ordering in place: down, up, down. A node's key is the mean relative
    position of its neighbours in the previous sweep's layers; ties (and nodes with no
    neighbour on that side) keep their current place, so the order is stable."""
    position = [0.0] * len(dependencies)

    def record(layer: list[int]) -> None:
        size = len(layer)
        for place, index in enumerate(layer):
            position[index] = (place + 0.5) / size

    for layer in layers:
        record(layer)
    sweeps = (
        (range(1, len(layers)), dependencies),
        (range(len(layers) - 2, -1, -1), dependents),
        (range(1, len(layers)), dependencies),
    )
    for columns, neighbours in sweeps:
        for column in columns:
            layer = layers[column]
            keys = {}
            for index in layer:
                linked = neighbours[index]
                keys[index] = (
                    sum(map(position.__getitem__, linked)) / len(linked)
                    if linked
                    else position[index]
                )
            layer.sort(key=keys.__getitem__)
            record(layer)


def _dependencies(
    nodes: Sequence[GraphNode],
) -> tuple[list[list[int]], list[tuple[str, ...]]]:
    """Each node's dependencies inside the mission (indices, once each, never itself) and
    the ids of those outside it."""
    index = {node.id: position for position, node in enumerate(nodes)}
    find = index.get
    dependencies: list[list[int]] = []
    outside: list[tuple[str, ...]] = []
    for position, node in enumerate(nodes):
        inside: list[int] = []
        elsewhere: tuple[str, ...] = ()
        for dep in node.depends_on:
            other = find(dep)
            if other is None:
                elsewhere += (dep,)
            elif other != position and other not in inside:
                inside.append(other)
        dependencies.append(inside)
        outside.append(elsewhere)
    return dependencies, outside


def layout(nodes: Sequence[GraphNode], *, max_rows: int = MAX_ROWS) -> GraphLayout:
    """Place ``nodes`` (in the mission's authorisation order) in columns and rows."""
    count = len(nodes)
    dependencies, outside = _dependencies(nodes)
    dependents: list[list[int]] = [[] for _ in range(count)]
    for after, deps in enumerate(dependencies):
        for before in deps:
            dependents[before].append(after)

    rank, has_cycle = _ranks(count, dependencies, dependents)
    columns = max(rank, default=-1) + 1
    layers: list[list[int]] = [[] for _ in range(columns)]
    for position in range(count):
        layers[rank[position]].append(position)
    _order_layers(layers, dependencies, dependents)

    column_pitch, row_pitch = NODE_WIDTH + COLUMN_GAP, NODE_HEIGHT + ROW_GAP
    placed: list[PlacedNode] = []
    new_index = [0] * count
    lane_x = PADDING
    tallest = 0
    for layer in layers:
        lanes = max(math.ceil(len(layer) / max_rows), 1)
        rows = math.ceil(len(layer) / lanes) if layer else 0
        tallest = max(tallest, rows)
        for place, position in enumerate(layer):
            lane, row = divmod(place, rows)
            new_index[position] = len(placed)
            placed.append(
                PlacedNode(
                    nodes[position],
                    rank[position],
                    lane_x + lane * column_pitch,
                    PADDING + row * row_pitch,
                    outside[position],
                )
            )
        lane_x += lanes * column_pitch

    edges = [
        Edge(new_index[before], new_index[after])
        for after, deps in enumerate(dependencies)
        for before in deps
    ]
    return GraphLayout(
        nodes=tuple(placed),
        edges=tuple(edges),
        width=lane_x - COLUMN_GAP + PADDING if count else 0,
        height=PADDING * 2 + tallest * row_pitch - ROW_GAP if count else 0,
        ranks=columns,
        has_cycle=has_cycle,
    )


# --- markup -------------------------------------------------------------------------------


def _clip(text: str, size: int) -> str:
    return text if len(text) <= size else text[: size - 1] + "…"


#: where an id may be cut: a shared prefix is dropped up to one of these
_SEPARATORS = "-_.:/"


def _middle(text: str, size: int) -> str:
    """``text`` in ``size`` characters, its start and its end kept (ids tell themselves apart
    by their ends: ``…-part-1``, ``…-part-2``)."""
    if len(text) <= size:
        return text
    head = (size - 1) // 2
    return text[:head] + "…" + text[len(text) - (size - 1 - head) :]


def node_labels(ids: Sequence[str], size: int = ID_CHARS) -> dict[str, str]:
    """What each node's first line says: ids that fit, as they are; longer ones without the
    prefix every id of the mission shares (``demo-wi-``), then cut in the middle, never at
    the end — a cut at the end made ``report-2026-part-1`` and ``…-part-2`` the same box.
    Two labels that still collide keep the ids' ends instead."""
    if all(len(item) <= size for item in ids):
        return {item: item for item in ids}
    shared = ""
    if len(ids) > 1:
        common = ids[0]
        for item in ids[1:]:
            while not item.startswith(common):
                common = common[:-1]
        cut = max(common.rfind(sep) for sep in _SEPARATORS)
        shared = common[: cut + 1] if cut >= 0 else ""
    labels = {}
    for item in ids:
        rest = item[len(shared) :] if shared and len(item) > size else item
        shown = ("…" + rest) if rest != item else rest
        labels[item] = _middle(shown, size)
    seen: dict[str, int] = {}
    for label in labels.values():
        seen[label] = seen.get(label, 0) + 1
    for item, label in labels.items():
        if seen[label] > 1:
            labels[item] = "…" + item[len(item) - (size - 1) :]
    return labels


def summary(graph: GraphLayout, counts: Sequence[tuple[str, int]]) -> str:
    """What the picture shows, in one sentence (the SVG's ``aria-label``)."""
    states = ", ".join(f"{count} {state}" for state, count in counts) or "no WorkItems"
    return (
        f"Dependency graph of {counted(len(graph.nodes), 'WorkItem')} in "
        f"{counted(graph.ranks, 'column')} with "
        f"{counted(len(graph.edges), 'dependency', 'dependencies')}: {states}. "
        "The list below reads the same."
    )


def render_svg(graph: GraphLayout, *, href: Callable[[str], str], label: str) -> str:
    """The graph as a picture with a link on every node, in two stacked layers.

    The drawing is one ``<svg role="img">`` with ``label`` as its text: nodes coloured by
    state *and* labelled with their state in words (colour is never the only signal), and
    an arrow from each dependency to its dependent. An image has no interactive parts for
    assistive technology (axe-core's ``nested-interactive``), so the links lie in a second,
    transparent layer above it: one ``<a href>`` per node to its WorkItem, with the full id,
    goal and state as its ``<title>`` (the tooltip), hidden from assistive technology and
    out of the tab order. Keyboards and screen readers take the same links, in the same
    order, from :func:`render_list`.
    """
    size = (
        f'width="{graph.width}" height="{graph.height}" '
        f'viewBox="0 0 {graph.width} {graph.height}" xmlns="http://www.w3.org/2000/svg"'
    )
    drawing = [
        f'<svg class="graph" role="img" aria-label="{escape(label)}" {size}>',
        '<defs><marker id="graph-arrow" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M0 0L8 4L0 8z"/></marker></defs>',
        '<g class="graph__edges">',
    ]
    drawing.extend(
        f'<path d="{graph.path(edge)}" marker-end="url(#graph-arrow)"/>' for edge in graph.edges
    )
    drawing.append('</g><g class="graph__nodes">')
    links = [f'<svg class="graph-links" aria-hidden="true" focusable="false" {size}>']
    labels = node_labels([placed.node.id for placed in graph.nodes])
    for placed in graph.nodes:
        node = placed.node
        item, state = escape(node.id), escape(node.state)
        x, y = placed.x, placed.y
        box = f'x="{x}" y="{y}" width="{NODE_WIDTH}" height="{NODE_HEIGHT}" rx="6"'
        drawing.append(
            f'<g class="graph__node node--{state}" data-work-item="{item}" data-state="{state}">'
            f"<rect {box}/>"
            f'<text x="{x + 8}" y="{y + 16}" class="graph__id">'
            f"{escape(labels[node.id])}</text>"
            f'<text x="{x + 8}" y="{y + 31}" class="graph__goal">'
            f"{escape(_clip(node.title, GOAL_CHARS))}</text>"
            f'<text x="{x + 8}" y="{y + 46}" class="graph__state">{state}</text></g>'
        )
        links.append(
            f'<a href="{escape(href(node.id))}" tabindex="-1" data-work-item="{item}" '
            f'data-state="{state}"><title>{escape(f"{node.id}: {node.title} — {node.state}")}'
            f"</title><rect {box}/></a>"
        )
    drawing.append("</g></svg>")
    links.append("</svg>")
    return f'<div class="graph-canvas">{"".join(drawing)}{"".join(links)}</div>'


def render_list(graph: GraphLayout, *, href: Callable[[str], str]) -> str:
    """The graph as text, in the picture's reading order: each WorkItem with its state and
    what it waits for — the way keyboards and screen readers take the graph."""
    waits: list[list[str]] = [[] for _ in graph.nodes]
    for edge in graph.edges:
        waits[edge.dependent].append(graph.nodes[edge.dependency].node.id)
    parts = ['<ol class="graph-list">']
    for placed, inside in zip(graph.nodes, waits, strict=True):
        node = placed.node
        parts.append(
            f'<li><a href="{escape(href(node.id))}">{escape(node.id)}</a> '
            f"<span>{escape(node.state)}</span> — {escape(node.title)}"
        )
        waits_for = [*inside, *placed.outside]
        if waits_for:
            parts.append(f"; waits for {escape(', '.join(waits_for))}")
        parts.append("</li>")
    parts.append("</ol>")
    return "".join(parts)
