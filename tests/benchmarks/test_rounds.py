"""``benchmarks/rounds.py``: the report's median of rounds (issue 15, "median of 3 runs")."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

from benchmarks.config import load_config
from benchmarks.report import render
from benchmarks.results import Results
from benchmarks.rounds import collapse, tag
from benchmarks.stats import summarize


def _measured(name: str, rate: float, round_: int, **params: int):
    return tag(
        summarize(name, operations=int(rate), elapsed_s=1.0, latencies_s=[0.01], params=params),
        round_,
    )


def _results(rounds: int) -> Results:
    config = dataclasses.replace(load_config(quick=True), rounds=rounds)
    return Results(command="pytest", config=config, started_at=datetime.now(UTC))


def _one_cell(results: Results, **rates: list[float]) -> None:
    """Round by round, each named series' rate in the cell of 1 group and 1 client."""
    for name, series in rates.items():
        for round_, rate in enumerate(series):
            getattr(results, name).append(_measured(name, rate, round_, groups=1, clients=1))


def test_a_ratio_is_the_median_of_the_rounds_paired_ratios() -> None:
    """Each round's figure over the same round's ceiling (0.10, 0.05, 0.20): the median is
    0.10, and the table shows the round with the median rate."""
    results = _results(3)
    _one_cell(results, pgbench=[1000, 1000, 500], http=[100, 50, 100])

    collapsed = collapse(results)

    (http,) = collapsed.http
    (pgbench,) = collapsed.pgbench
    assert http.params["ratios"] == [0.1, 0.05, 0.2]
    assert http.params["ratio"] == 0.1
    assert http.rate == 100
    assert pgbench.rate == 1000
    assert len(results.http) == 3  # every round is kept for results.json


def test_cells_and_batch_sizes_are_collapsed_each_on_their_own() -> None:
    results = _results(3)
    for round_ in range(3):
        for clients in (1, 16):
            results.pgbench.append(
                _measured("pgbench", 1000 * clients, round_, groups=1, clients=clients)
            )
            results.inprocess.append(
                _measured("inprocess", 100 * clients + round_, round_, groups=1, clients=clients)
            )
        results.executemany.append(_measured("executemany", 20_000, round_, batch_size=500))
        results.batch.append(_measured("batch", 1000 + 500 * round_, round_, batch_size=500))

    collapsed = collapse(results)

    assert sorted(m.params["clients"] for m in collapsed.inprocess) == [1, 16]
    assert [m.rate for m in collapsed.batch] == [1500]
    assert collapsed.batch[0].params["ratio"] == 1500 / 20_000


def test_the_report_shows_the_median_ratio_and_each_rounds() -> None:
    results = _results(3)
    _one_cell(results, pgbench=[1000, 1000, 1000], http=[90, 80, 100])

    document = render(collapse(results))

    assert "0.09 (0.09, 0.08, 0.10)" in document
    assert "median of the 3 paired ratios" in document


def test_one_round_renders_as_before() -> None:
    results = _results(1)
    results.pgbench.append(_measured("pgbench", 1000, 0, groups=1, clients=1))
    results.http.append(_measured("http", 90, 0, groups=1, clients=1))

    assert collapse(results) is results
    assert "| 0.09 |" in render(results)


def test_a_figure_over_the_floor_is_paired_by_round_like_its_ratio_to_the_ceiling() -> None:
    """The floor (PostgreSQL running the write path's own SQL) is a figure over the ceiling
    and a divisor of the server's figures, each paired with the same round's: 0.5, 0.4, 0.6
    of the ceiling; the HTTP figure 0.25, 0.2, 0.5 of the floor. Both show in the report."""
    results = _results(3)
    _one_cell(results, pgbench=[1000, 1000, 500], floor=[500, 400, 300], http=[125, 80, 150])

    collapsed = collapse(results)

    (floor,) = collapsed.floor
    (http,) = collapsed.http
    assert floor.params["ratios"] == [0.5, 0.4, 0.6]
    assert floor.params["ratio"] == 0.5
    assert http.params["floor_ratios"] == [0.25, 0.2, 0.5]
    assert http.params["floor_ratio"] == 0.25
    assert http.params["ratio"] == 0.125  # over the ceiling: 0.125, 0.08, 0.3
    document = render(collapsed)
    assert "### 4b. The floor" in document
    assert "| HTTP (pool) / floor (4b), 1 group(s) | 0.25 (0.25, 0.20, 0.50) |" in document
