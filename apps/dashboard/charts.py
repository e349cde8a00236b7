"""A mission's budgets as small step charts: used against the limit over time, per dimension.

The points come from the Mission projection's ``usage_series`` — a bounded list of
``[sequence, recorded_at, {dimension: cumulative used}]`` appended whenever a charge reaches
the mission (R11.5-12) — and the current values from ``work_item_cards.budget_lines``, so
the chart and the table beside it can never disagree with the WorkItem page.

A chart is a picture of numbers that are also written out: each has a text summary (its
``aria-label``), and the page puts a table of its points beside it. Use only ever rises, so
the line is a staircase: flat between charges, a step at each one. The limit is a dashed
line; whatever lies above it is drawn again in the "over the limit" colour and said in
words. An unlimited dimension has no limit line and says so (wire.md §10: an absent limit
is unlimited).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from html import escape
from typing import Any

from missionweave.protocol.timefmt import parse_timestamp
from missionweave.wording import counted

from .work_item_cards import SECONDS_SUFFIX, BudgetLine, budget_lines, number

#: the drawing area of one chart, in SVG user units; the page scales it to its box
WIDTH = 320
HEIGHT = 120
#: room for the axis labels under the plot and the limit's label above it
PLOT_TOP = 14
PLOT_BOTTOM = HEIGHT - 18
PLOT_LEFT = 2
PLOT_RIGHT = WIDTH - 2
#: headroom above the larger of the limit and the highest use, so neither touches the top
HEADROOM = 1.15


@dataclass(frozen=True, slots=True)
class UsagePoint:
    """The cumulative use of one dimension after the charge at ``sequence``."""

    sequence: int
    recorded_at: datetime | None
    used: float | int

    @property
    def used_text(self) -> str:
        return number(self.used)


@dataclass(frozen=True)
class BudgetChart:
    line: BudgetLine  # the current value and limit
    points: tuple[UsagePoint, ...]  # oldest first
    svg: str  # the markup, every text in it escaped ("" when there is nothing to draw)
    table: str = ""  # the points as a table for screen readers ("" when there are none)

    @property
    def dimension(self) -> str:
        return self.line.dimension

    @property
    def used_text(self) -> str:
        return self.line.used_text

    @property
    def limit_text(self) -> str:
        return self.line.limit_text

    @property
    def summary(self) -> str:
        return chart_summary(self.line, self.points)


def chart_summary(line: BudgetLine, points: Sequence[UsagePoint]) -> str:
    """What the chart says, in one sentence."""
    used = line.used_text
    if line.unlimited:
        head = f"{line.dimension_words}: {used} used, unlimited"
    else:
        head = f"{line.dimension_words}: {used} of {line.limit_text} used ({line.percent_label})"
        if line.exceeded:
            head += ", over the limit"
    changes = len(points)
    if not changes:
        return f"{head}; no charge recorded yet."
    return f"{head}; {counted(changes, 'recorded change')}."


def _when(value: object) -> datetime | None:
    try:
        return parse_timestamp(value)
    except (TypeError, ValueError):
        return None


def series_by_dimension(series: Sequence[Any] | None) -> dict[str, list[UsagePoint]]:
    """``usage_series`` split per dimension; a point that omits a dimension keeps its last
    value (the series holds cumulative totals), and malformed points are skipped."""
    by_dimension: dict[str, list[UsagePoint]] = {}
    for entry in series or ():
        if not isinstance(entry, (list, tuple)) or len(entry) != 3:
            continue
        sequence, recorded_at, totals = entry
        if not isinstance(sequence, int) or not isinstance(totals, Mapping):
            continue
        moment = _when(recorded_at)
        for dimension, used in totals.items():
            if isinstance(used, (int, float)) and not isinstance(used, bool):
                by_dimension.setdefault(dimension, []).append(UsagePoint(sequence, moment, used))
    return by_dimension


def _x_positions(points: Sequence[UsagePoint]) -> list[float]:
    """Where each point stands: by its time when every point has one and they span some
    time, else evenly by order (the sequence is the log's own clock)."""
    count = len(points)
    width = PLOT_RIGHT - PLOT_LEFT
    times = [point.recorded_at for point in points]
    if count > 1 and all(times) and times[0] != times[-1]:
        start = times[0].timestamp()  # type: ignore[union-attr]
        span = times[-1].timestamp() - start  # type: ignore[union-attr]
        # the last step gets room to show its level: the plot ends a little after the last charge
        return [
            PLOT_LEFT + width * 0.94 * (moment.timestamp() - start) / span  # type: ignore[union-attr]
            for moment in times
        ]
    if count == 1:
        return [PLOT_LEFT + width * 0.5]
    return [PLOT_LEFT + width * 0.94 * index / (count - 1) for index in range(count)]


def _fmt(value: float) -> str:
    return f"{value:.1f}".removesuffix(".0")


def axis_labels(first: datetime, last: datetime) -> tuple[str, ...]:
    """The time axis's two ends, never the same words twice (issue 34 §7): minutes when
    they tell the ends apart, seconds when the charges fell in one minute, the day only on
    the first end when both are on one day; one label alone when every charge has one time.
    The times are UTC, said once, at the end."""
    for clock in ("%H:%M", "%H:%M:%S"):
        start, end = first.strftime(f"%m-%d {clock}"), last.strftime(f"%m-%d {clock}")
        if start != end:
            if first.date() == last.date():
                end = last.strftime(clock)
            return start, f"{end} UTC"
    return (first.strftime("%m-%d %H:%M:%S UTC"),)


def render_chart(line: BudgetLine, points: Sequence[UsagePoint], *, chart_id: str) -> str:
    """One dimension's step chart as ``<svg role="img">`` (``""`` while nothing is used:
    the caption says that alone)."""
    if not points and not line.used:
        return ""
    if not points and line.used:
        points = [UsagePoint(0, None, line.used)]  # the total as it stands, no history kept
    highest = max([float(line.used), *(float(point.used) for point in points)])
    limit = None if line.limit is None else float(line.limit)
    top = max(highest, limit or 0.0) * HEADROOM or 1.0

    def y(value: float) -> float:
        return PLOT_BOTTOM - (PLOT_BOTTOM - PLOT_TOP) * value / top

    xs = _x_positions(points)
    steps = [f"M{_fmt(PLOT_LEFT)} {_fmt(y(0))}"]
    for x, point in zip(xs, points, strict=True):
        steps.append(f"H{_fmt(x)}V{_fmt(y(float(point.used)))}")
    steps.append(f"H{_fmt(PLOT_RIGHT)}")
    path = "".join(steps)
    safe_id = re.sub(r"[^A-Za-z0-9_-]", "-", chart_id)
    parts = [
        f'<svg class="chart" role="img" aria-label="{escape(chart_summary(line, points))}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" xmlns="http://www.w3.org/2000/svg">',
        f'<line class="chart__axis" x1="{PLOT_LEFT}" y1="{PLOT_BOTTOM}" x2="{PLOT_RIGHT}" '
        f'y2="{PLOT_BOTTOM}"/>',
        f'<path class="chart__used" d="{path}"/>',
    ]
    if limit is not None:
        level = _fmt(y(limit))
        parts.append(
            f'<line class="chart__limit" x1="{PLOT_LEFT}" y1="{level}" x2="{PLOT_RIGHT}" '
            f'y2="{level}"/>'
            f'<text class="chart__label" x="{PLOT_RIGHT}" y="{_fmt(max(y(limit) - 3, 10))}" '
            f'text-anchor="end">limit {escape(line.limit_text)}</text>'
        )
        if highest > limit:
            # the part of the staircase above the limit, drawn again in the alarm colour
            parts.append(
                f'<clipPath id="{safe_id}-over"><rect x="0" y="0" width="{WIDTH}" '
                f'height="{level}"/></clipPath>'
                f'<path class="chart__over" d="{path}" clip-path="url(#{safe_id}-over)"/>'
            )
    first, last = points[0].recorded_at, points[-1].recorded_at
    if first is not None and last is not None:
        labels = axis_labels(first, last)
        if len(labels) == 1:
            # every charge at one time: the label under the plot's middle, where it has room
            # on both sides (at the first point's x it was cut in half at the left edge)
            parts.append(
                f'<text class="chart__label" x="{_fmt((PLOT_LEFT + PLOT_RIGHT) / 2)}" '
                f'y="{HEIGHT - 4}" text-anchor="middle">{labels[0]}</text>'
            )
        else:
            parts.append(
                f'<text class="chart__label" x="{PLOT_LEFT}" y="{HEIGHT - 4}">{labels[0]}</text>'
                f'<text class="chart__label" x="{PLOT_RIGHT}" y="{HEIGHT - 4}" '
                f'text-anchor="end">{labels[1]}</text>'
            )
    parts.append("</svg>")
    return "".join(parts)


def render_table(line: BudgetLine, points: Sequence[UsagePoint]) -> str:
    """The chart's points as a visually hidden table: what a screen reader reads instead
    of the picture (built here, not in a template loop: up to 120 rows per dimension)."""
    if not points:
        return ""
    unit = SECONDS_SUFFIX.get(line.dimension, "")
    rows = "".join(
        f"<tr><td>#{point.sequence}</td><td>"
        f"{f'{point.recorded_at:%Y-%m-%d %H:%M:%S} UTC' if point.recorded_at else ''}"
        f"</td><td>{escape(point.used_text + unit)}</td></tr>"
        for point in points
    )
    return (
        f'<div class="sr-only"><table><caption>{escape(line.dimension_words)} used after each '
        'charge</caption><thead><tr><th scope="col">event</th><th scope="col">recorded</th>'
        f'<th scope="col">used in total</th></tr></thead><tbody>{rows}</tbody></table></div>'
    )


def budget_charts(
    limits: Mapping[str, Any], used: Mapping[str, Any], series: Sequence[Any] | None
) -> tuple[BudgetChart, ...]:
    """One chart per budget dimension, in ``budget_lines`` order (the six of R10.1-01(g),
    then any other recorded)."""
    points = series_by_dimension(series)
    charts = []
    for line in budget_lines(limits, used):
        history = tuple(points.get(line.dimension, ()))
        svg = render_chart(line, history, chart_id=f"budget-chart-{line.dimension}")
        charts.append(BudgetChart(line, history, svg, render_table(line, history)))
    return tuple(charts)
