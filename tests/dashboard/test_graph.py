"""The mission page's dependency-graph layout and markup (``apps.dashboard.graph``): pure
functions, no database."""

from __future__ import annotations

import random
import re

from apps.dashboard.graph import (
    MAX_ROWS,
    NODE_HEIGHT,
    NODE_WIDTH,
    GraphLayout,
    GraphNode,
    layout,
    node_labels,
    render_list,
    render_svg,
    summary,
)


def node(item: str, *depends_on: str, state: str = "open", title: str = "") -> GraphNode:
    return GraphNode(item, title or f"goal of {item}", state, tuple(depends_on))


def ranks(graph: GraphLayout) -> dict[str, int]:
    return {placed.node.id: placed.rank for placed in graph.nodes}


def rows(graph: GraphLayout, rank: int) -> list[str]:
    """The ids of one column, top to bottom."""
    column = [placed for placed in graph.nodes if placed.rank == rank]
    return [placed.node.id for placed in sorted(column, key=lambda p: (p.x, p.y))]


def href(item: str) -> str:
    return f"/groups/g/work-items/{item}/"


def test_a_column_is_the_longest_dependency_path_from_a_root() -> None:
    """R10.4-04: a depends on nothing; d waits for a directly and through b -> c, so it
    stands after c, not beside b."""
    graph = layout([node("a"), node("b", "a"), node("c", "b"), node("d", "a", "c")])
    assert ranks(graph) == {"a": 0, "b": 1, "c": 2, "d": 3}
    assert graph.ranks == 4
    assert not graph.has_cycle


def test_every_edge_points_right_from_the_dependency_to_its_dependent() -> None:
    graph = layout([node("a"), node("b", "a"), node("c", "a"), node("d", "b", "c")])
    for edge in graph.edges:
        before, after = graph.nodes[edge.dependency], graph.nodes[edge.dependent]
        assert before.x + NODE_WIDTH < after.x
    assert {(graph.nodes[e.dependency].node.id, graph.nodes[e.dependent].node.id) for e in
            graph.edges} == {("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")}  # fmt: skip


def test_dependencies_outside_the_mission_are_kept_for_the_text_but_not_drawn() -> None:
    graph = layout([node("a", "elsewhere"), node("b", "a", "b")])
    assert ranks(graph) == {"a": 0, "b": 1}
    assert len(graph.edges) == 1  # b -> b (itself) is dropped, elsewhere is not a node
    assert graph.nodes[0].outside == ("elsewhere",)
    listed = render_list(graph, href=href)
    assert "waits for elsewhere" in listed


def test_rows_follow_the_barycentre_of_their_dependencies_to_avoid_crossings() -> None:
    """Authorisation order would cross the edges (x waits for b, y for a); the barycentre
    pass puts x level with b and y level with a."""
    graph = layout([node("a"), node("b"), node("x", "b"), node("y", "a")])
    assert rows(graph, 0) == ["a", "b"]
    assert rows(graph, 1) == ["y", "x"]


def test_a_cycle_never_loops_and_is_reported() -> None:
    """The protocol refuses cycles (R10.4-04), but a drawing must end even if a projection
    held one: the nodes on it get a column and the layout says it found a cycle."""
    graph = layout([node("root"), node("a", "root", "c"), node("b", "a"), node("c", "b")])
    assert graph.has_cycle
    assert len(graph.nodes) == 4
    assert ranks(graph)["root"] == 0
    assert all(rank >= 1 for item, rank in ranks(graph).items() if item != "root")


def test_a_long_column_is_folded_into_lanes() -> None:
    graph = layout([node(f"i{n}") for n in range(MAX_ROWS * 2 + 1)])
    xs = sorted({placed.x for placed in graph.nodes})
    assert len(xs) == 3
    assert graph.height < (MAX_ROWS + 1) * (NODE_HEIGHT + 20)
    assert len({(p.x, p.y) for p in graph.nodes}) == len(graph.nodes)  # nothing overlaps


def test_an_empty_mission_has_an_empty_layout() -> None:
    graph = layout([])
    assert (graph.nodes, graph.edges, graph.width, graph.height) == ((), (), 0, 0)


def random_mission(size: int, seed: int = 7) -> list[GraphNode]:
    rng = random.Random(seed)
    nodes = []
    for index in range(size):
        earlier = rng.sample(range(index), min(index, rng.randint(0, 3)))
        state = rng.choice(["open", "queued", "active", "verified"])
        nodes.append(
            GraphNode(f"wi-{index}", f"goal {index}", state, tuple(f"wi-{e}" for e in earlier))
        )
    return nodes


def test_a_thousand_work_items_are_laid_out_in_rank_order() -> None:
    """Issue 12 §4: a 1,000-item mission is laid out whole, every dependency ranked before
    its dependents. How fast is the benchmark's to say (the mission graph page, section 10
    of docs/benchmarks.md), not a timed test's."""
    nodes = random_mission(1000)
    graph = layout(nodes)
    assert len(graph.nodes) == 1000
    assert not graph.has_cycle
    for edge in graph.edges:
        assert graph.nodes[edge.dependency].rank < graph.nodes[edge.dependent].rank


def test_the_svg_labels_each_node_with_its_state_in_words_and_escapes_every_text() -> None:
    """Colour is never the only signal: the state is written on the node and in its link's
    title; a goal with markup in it stays text."""
    nodes = [node("a", state="verified", title='<script>alert("x")</script> & more')]
    graph = layout(nodes)
    svg = render_svg(graph, href=href, label=summary(graph, [("verified", 1)]))
    assert "<script>" not in svg
    assert "&lt;script&gt;" in svg
    assert 'class="graph__node node--verified" data-work-item="a" data-state="verified"' in svg
    assert ">verified</text>" in svg
    title = re.search(r"<title>(.*?)</title>", svg)
    assert title is not None
    assert title.group(1).endswith("— verified")


def test_the_picture_is_an_image_and_its_links_lie_in_a_layer_above_it() -> None:
    """An image has no interactive children (axe-core ``nested-interactive``): the drawing
    is ``role="img"`` with a summary and no link; every node's link is in a transparent
    layer hidden from assistive technology and out of the tab order (the list has them)."""
    graph = layout([node("a"), node("b", "a")])
    svg = render_svg(graph, href=href, label=summary(graph, [("open", 2)]))
    drawing, links = re.findall(r"<svg .*?</svg>", svg)
    assert drawing.startswith('<svg class="graph" role="img" aria-label="Dependency graph of 2')
    assert "<a " not in drawing
    assert links.startswith('<svg class="graph-links" aria-hidden="true" focusable="false"')
    assert links.count('tabindex="-1"') == 2
    assert '<a href="/groups/g/work-items/b/" tabindex="-1" data-work-item="b"' in links
    for layer in (drawing, links):
        assert re.search(r'width="(\d+)" height="(\d+)"', layer).groups() == (  # type: ignore[union-attr]
            str(graph.width),
            str(graph.height),
        )


def test_the_list_reads_the_graph_in_the_same_order_with_what_each_waits_for() -> None:
    graph = layout([node("a"), node("b", "a"), node("c", "a", "b")])
    listed = render_list(graph, href=href)
    entries = re.findall(r"<li>(.*?)</li>", listed)
    assert [re.search(r">([a-c])</a>", entry).group(1) for entry in entries] == ["a", "b", "c"]  # type: ignore[union-attr]
    assert entries[2].endswith("; waits for a, b")
    assert '<a href="/groups/g/work-items/c/">c</a>' in entries[2]


def test_nodes_whose_ids_share_a_long_prefix_stay_distinguishable() -> None:
    """Issue 34 §7: ids that differ only at the end are cut in the middle, the prefix every
    node shares dropped, so no two boxes read the same."""
    ids = [f"demo-wi-quarterly-incident-report-part-{n}" for n in range(1, 13)]
    ids += ["demo-wi-quarterly-incident-report-summary", "demo-wi-x"]
    graph = layout([node(item) for item in ids])
    markup = render_svg(graph, href=href, label="graph")
    shown = re.findall(r'class="graph__id">([^<]*)</text>', markup)
    assert len(shown) == len(ids)
    assert len(set(shown)) == len(ids), shown
    assert all(len(label) <= 24 for label in shown)
    assert "demo-wi-x" in shown  # a short id stays as it is
    assert any(label.endswith("part-12") for label in shown)


def test_node_labels_keep_short_ids_whole_and_fall_back_to_the_ends_on_a_collision() -> None:
    assert node_labels(["a", "b"]) == {"a": "a", "b": "b"}
    twins = ["x" * 30 + "-1", "x" * 30 + "-2"]
    labels = node_labels(twins)
    assert labels[twins[0]] != labels[twins[1]]
