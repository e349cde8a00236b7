"""The mission page's budget charts (``apps.dashboard.charts``): pure functions over the
Mission projection's ``usage_series``, no database."""

from __future__ import annotations

import re

from apps.dashboard.charts import (
    PLOT_BOTTOM,
    PLOT_TOP,
    axis_labels,
    budget_charts,
    chart_summary,
    number,
    render_chart,
    series_by_dimension,
)
from apps.dashboard.work_item_cards import BudgetLine
from missionweave.protocol.timefmt import parse_timestamp

SERIES = [
    [12, "2026-12-01T10:00:00Z", {"tokens": 1000}],
    [15, "2026-12-01T10:30:00Z", {"tokens": 4000, "money": 0.25}],
    [19, "2026-12-01T11:00:00Z", {"tokens": 4500, "money": 0.5}],
]


def charts_by_dimension(limits: dict, used: dict, series: list | None) -> dict:
    return {chart.dimension: chart for chart in budget_charts(limits, used, series)}


def test_numbers_read_as_people_write_them() -> None:
    assert number(200000) == "200,000"
    assert number(0.1 + 0.2) == "0.3"
    assert number(2.0) == "2"
    assert number(1.25) == "1.25"


def test_the_series_is_split_per_dimension_in_order() -> None:
    points = series_by_dimension(SERIES)
    assert [(p.sequence, p.used) for p in points["tokens"]] == [(12, 1000), (15, 4000), (19, 4500)]
    assert [(p.sequence, p.used) for p in points["money"]] == [(15, 0.25), (19, 0.5)]
    assert points["tokens"][0].recorded_at is not None


def test_malformed_points_are_skipped_not_fatal() -> None:
    points = series_by_dimension([[1, "x", {"tokens": 5}], "junk", [2], [3, None, {"t": "a"}]])
    assert [(p.sequence, p.used, p.recorded_at) for p in points["tokens"]] == [(1, 5, None)]
    assert "t" not in points
    assert series_by_dimension(None) == {}


def test_every_dimension_is_charted_in_wire_order_and_unlimited_ones_say_so() -> None:
    """R10.1-01(g): the six dimensions in their wire order; an absent limit is unlimited
    (wire.md §10) and has no limit line."""
    charts = budget_charts({"tokens": 10000}, {"tokens": 4500, "money": 0.5}, SERIES)
    assert [c.dimension for c in charts][:6] == [
        "money",
        "tokens",
        "tool_calls",
        "compute",
        "wall_clock",
        "side_effects",
    ]
    by = {c.dimension: c for c in charts}
    assert by["money"].limit_text == "unlimited"
    assert "chart__limit" not in by["money"].svg
    assert by["money"].summary == "money: 0.5 used, unlimited; 2 recorded changes."
    assert by["compute"].svg == ""  # nothing used, nothing to draw


def test_the_used_line_is_a_staircase_under_the_limit_line() -> None:
    chart = charts_by_dimension({"tokens": 10000}, {"tokens": 4500}, SERIES)["tokens"]
    svg = chart.svg
    assert svg.startswith('<svg class="chart" role="img" aria-label="tokens: 4,500 of 10,000 used')
    assert "limit 10,000" in svg
    path = re.search(r'class="chart__used" d="([^"]+)"', svg)
    assert path is not None
    steps = re.findall(r"V([\d.]+)", path.group(1))
    levels = [float(level) for level in steps]
    assert levels == sorted(levels, reverse=True)  # use only rises (y grows downwards)
    assert all(PLOT_TOP <= level <= PLOT_BOTTOM for level in levels)
    limit = re.search(r'class="chart__limit" x1="\S+" y1="([\d.]+)"', svg)
    assert limit is not None
    assert float(limit.group(1)) < min(levels)
    assert "chart__over" not in svg
    assert ">12-01 10:00<" in svg
    assert ">11:00 UTC<" in svg  # one day: the day once, the zone once


def test_use_above_the_limit_is_drawn_again_and_said_in_words() -> None:
    """R11.5-13 refuses a charge past a limit, but reconciled offline usage may exceed it
    (R11.5-12): the chart marks what lies above the limit and its summary says so."""
    series = [[3, "2026-12-01T10:00:00Z", {"side_effects": 2}]]
    chart = charts_by_dimension({"side_effects": 0}, {"side_effects": 2}, series)["side_effects"]
    assert chart.line.exceeded
    assert 'class="chart__over"' in chart.svg
    assert 'clip-path="url(#budget-chart-side_effects-over)"' in chart.svg
    assert "over the limit" in chart.summary


def test_time_budgets_read_in_seconds_with_their_dimension_in_words() -> None:
    """wire.md §10: compute and wall clock are counted in seconds; the caption, the summary,
    the limit's label and the screen reader's table all say "s", and name the dimension in
    words ("wall clock", never ``wall_clock``), as the WorkItem page's budget table does."""
    series = [[4, "2026-12-01T10:00:00Z", {"wall_clock": 90.5}]]
    chart = charts_by_dimension({"wall_clock": 3600}, {"wall_clock": 90.5}, series)["wall_clock"]
    assert (chart.used_text, chart.limit_text) == ("90.5 s", "3,600 s")
    assert chart.summary == "wall clock: 90.5 s of 3,600 s used (2.5%); 1 recorded change."
    assert "limit 3,600 s" in chart.svg
    assert "<caption>wall clock used after each charge</caption>" in chart.table
    assert "<td>90.5 s</td>" in chart.table
    assert "wall_clock" not in chart.summary + chart.table


def test_a_total_without_a_series_is_one_point() -> None:
    """Before any series was kept the current total still shows, as a single step."""
    chart = charts_by_dimension({"tokens": 100}, {"tokens": 40}, [])["tokens"]
    assert chart.points == ()
    assert 'class="chart__used"' in chart.svg


def test_the_summary_escapes_and_names_every_part() -> None:
    line = BudgetLine('to"ks', 5, 10)
    svg = render_chart(line, (), chart_id='x" onload="alert(1)')
    assert 'onload="' not in svg
    assert "to&quot;ks: 5 of 10 used (50%)" in svg
    assert chart_summary(BudgetLine("tokens", 0, 10), ()) == (
        "tokens: 0 of 10 used (0%); no charge recorded yet."
    )


def _labels(svg: str) -> list[str]:
    return [label for label in re.findall(r'class="chart__label"[^>]*>([^<]*)<', svg)
            if not label.startswith("limit")]  # fmt: skip


def test_the_time_axis_never_says_the_same_thing_at_both_ends() -> None:
    """Issue 34 §7: charges within one minute are told apart by their seconds; within one
    day the day is said once; one moment alone is one label."""
    at = parse_timestamp
    assert axis_labels(at("2026-12-01T10:00:05Z"), at("2026-12-01T10:00:40Z")) == (
        "12-01 10:00:05",
        "10:00:40 UTC",
    )
    assert axis_labels(at("2026-12-01T10:00:00Z"), at("2026-12-02T09:00:00Z")) == (
        "12-01 10:00",
        "12-02 09:00 UTC",
    )
    assert axis_labels(at("2026-12-01T10:00:00Z"), at("2026-12-01T10:00:00Z")) == (
        "12-01 10:00:00 UTC",
    )
    same_minute = [
        [3, "2026-12-01T10:00:05Z", {"tokens": 10}],
        [4, "2026-12-01T10:00:40Z", {"tokens": 20}],
    ]
    labels = _labels(
        charts_by_dimension({"tokens": 100}, {"tokens": 20}, same_minute)["tokens"].svg
    )
    assert len(labels) == len(set(labels)) == 2
    one_moment = [
        [3, "2026-12-01T10:00:05Z", {"tokens": 10}],
        [4, "2026-12-01T10:00:05Z", {"tokens": 20}],
    ]
    assert len(_labels(charts_by_dimension({}, {"tokens": 20}, one_moment)["tokens"].svg)) == 1


def test_charges_at_one_moment_have_their_one_label_under_the_middle_of_the_plot() -> None:
    """Seen in the demo: two charges in the same second drew the one label centred on the
    first point, at the left edge, so half of it was cut off ("10:20 UTC")."""
    one_moment = [
        [3, "2026-12-07T03:10:20Z", {"tokens": 1500}],
        [4, "2026-12-07T03:10:20Z", {"tokens": 3000}],
    ]
    svg = charts_by_dimension({}, {"tokens": 3000}, one_moment)["tokens"].svg
    label = re.search(r'<text class="chart__label" x="([\d.]+)"[^>]*>12-07 03:10:20 UTC<', svg)
    assert label is not None, svg
    assert float(label.group(1)) == 160  # the middle of the 320-unit drawing
