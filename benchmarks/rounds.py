"""The median of several rounds (issue 15: "median of 3 runs").

``make bench`` measures every (groups, clients) cell and every batch size ``config.rounds``
times, the rounds one after another, each round measuring the ceiling and the figures side by
side as a single run did. The report shows, per cell and figure, the round with the median
rate, and as its ratio the median of the rounds' *paired* ratios (each figure over the ceiling
measured in the same round), so a round slowed by other work on the machine moves the
ceiling and the figure together and does not decide the verdict. ``results.json`` keeps every
round.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections import defaultdict
from typing import Any

from .results import Results
from .stats import Measurement, ratio

CELL = ("groups", "clients")
BATCH = ("batch_size",)
#: each figure, the ceiling it is divided by, and the params naming its cell
PAIRS = (
    ("floor", "pgbench", CELL),
    ("http", "pgbench", CELL),
    ("http_no_pool", "pgbench", CELL),
    ("inprocess", "pgbench", CELL),
    ("batch", "executemany", BATCH),
)
CEILINGS = (("pgbench", CELL), ("executemany", BATCH))
#: each figure's ceiling, by name
CEILING_OF = {figure: ceiling for figure, ceiling, _cell in PAIRS}
#: figures also divided by the floor (PostgreSQL running the write path's own SQL), kept in
#: their params as ``floor_ratios`` and ``floor_ratio``
OVER_FLOOR = ("http", "http_no_pool", "inprocess")


def tag(measurement: Measurement, round_: int) -> Measurement:
    """``measurement`` marked as measured in ``round_``."""
    measurement.params["round"] = round_
    return measurement


def _cells(
    measurements: list[Measurement], names: tuple[str, ...]
) -> dict[tuple[Any, ...], list[Measurement]]:
    """The measurements of each cell (the params ``names`` name), in round order."""
    cells: dict[tuple[Any, ...], list[Measurement]] = defaultdict(list)
    for measurement in sorted(measurements, key=_round):
        cells[tuple(measurement.params[name] for name in names)].append(measurement)
    return cells


def _round(measurement: Measurement) -> int:
    return int(measurement.params.get("round", 0))


def _median_rate(measurements: list[Measurement]) -> Measurement:
    """The measurement with the median rate (the lower middle one of an even count)."""
    ordered = sorted(measurements, key=lambda m: m.rate)
    return ordered[(len(ordered) - 1) // 2]


def collapse(results: Results) -> Results:
    """``results`` with one measurement per cell: the median round's, holding in its params
    ``rates`` (every round's) and, for a figure, ``ratios`` (paired, by round) and ``ratio``
    (their median). Results of one round come back unchanged."""
    if results.config.rounds <= 1:
        return results
    collapsed = dataclasses.replace(results)
    for name, names in CEILINGS:
        chosen = []
        for cell in _cells(getattr(results, name), names).values():
            median = _median_rate(cell)
            rates = [m.rate for m in cell]
            chosen.append(dataclasses.replace(median, params={**median.params, "rates": rates}))
        setattr(collapsed, name, chosen)
    for name, ceiling_name, names in PAIRS:
        ceilings = {
            (cell, _round(m)): m
            for cell, ms in _cells(getattr(results, ceiling_name), names).items()
            for m in ms
        }
        chosen = []
        for cell, measurements in _cells(getattr(results, name), names).items():
            ratios = [
                ratio(m.rate, ceilings[(cell, _round(m))].rate)
                if (cell, _round(m)) in ceilings
                else float("nan")
                for m in measurements
            ]
            median = _median_rate(measurements)
            params = {
                **median.params,
                "rates": [m.rate for m in measurements],
                "ratios": ratios,
                "ratio": statistics.median(ratios),
            }
            chosen.append(dataclasses.replace(median, params=params))
        setattr(collapsed, name, chosen)
    for name in OVER_FLOOR:
        for chosen_measurement in getattr(collapsed, name):
            chosen_measurement.params.update(_over_floor(results, name, chosen_measurement))
    return collapsed


def _over_floor(results: Results, name: str, chosen: Measurement) -> dict[str, Any]:
    """The paired ratios of ``chosen``'s cell to the floor measured in the same rounds."""
    cell = tuple(chosen.params[key] for key in CELL)
    floors = {_round(m): m for m in _cells(results.floor, CELL).get(cell, [])}
    ratios = [
        ratio(m.rate, floors[_round(m)].rate) if _round(m) in floors else float("nan")
        for m in _cells(getattr(results, name), CELL).get(cell, [])
    ]
    if not floors or not ratios:
        return {}
    return {"floor_ratios": ratios, "floor_ratio": statistics.median(ratios)}
