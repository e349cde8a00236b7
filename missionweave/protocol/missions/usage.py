"""A mission's budget usage over time: the points of ``Mission.usage_series``.

The dashboard charts ``used`` against each limit over time (R10.1-01(g)); the projection keeps
the points so a chart never scans the log. The series stays small however long the mission
runs: past ``USAGE_SERIES_LIMIT`` points every other point is dropped, always keeping the
first and the latest, so a million charges leave at most that many points spread over the
whole history. Thinning is a pure function of the series, so a replay builds the same one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: the most points a mission keeps
USAGE_SERIES_LIMIT = 120

Point = tuple[int, str, dict[str, float | int]]


def with_point(
    series: tuple[Point, ...], sequence: int, recorded_at: str, used: Mapping[str, Any]
) -> tuple[Point, ...]:
    """``series`` with the cumulative ``used`` after the event at ``sequence`` appended."""
    points = (*series, (sequence, recorded_at, dict(used)))
    if len(points) <= USAGE_SERIES_LIMIT:
        return points
    first, *middle, latest = points
    return (first, *middle[1::2], latest)
