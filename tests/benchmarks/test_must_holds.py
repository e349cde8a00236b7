"""Section 5c of docs/benchmarks.md: issue 15's must-holds on sections 1–5, each judged from
the figures the report already holds."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

from benchmarks.config import load_config
from benchmarks.report import render
from benchmarks.results import Results
from benchmarks.stats import Measurement, summarize


def _measured(name: str, rate: float, *, p50_s: float = 0.01, p99_s: float = 0.02, **cell: int):
    latencies = [p50_s] * 98 + [p99_s] * 2  # nearest rank: p50 and p99 as given
    return summarize(name, operations=int(rate), elapsed_s=1.0, latencies_s=latencies, params=cell)


def _results(tmp_path) -> Results:
    config = dataclasses.replace(load_config(quick=True), output=tmp_path / "b.md")
    return Results(command="pytest", config=config, started_at=datetime.now(UTC))


def _row(document: str, label: str) -> str:
    section = document[document.index("### 5c.") :]
    return next(line for line in section.splitlines() if line.startswith(f"| {label} |"))


def test_each_must_hold_is_judged_against_its_own_ceiling(tmp_path):
    results = _results(tmp_path)
    results.pgbench += [
        _measured("pgbench", 4000, groups=16, clients=16),
        _measured("pgbench", 2000, groups=1, clients=1),
    ]
    results.floor += [
        _measured("floor", 1600, groups=16, clients=16),
        _measured("floor", 700, groups=1, clients=1),
    ]
    results.http += [
        _measured("http", 900, groups=16, clients=16),  # 0.225: holds 0.20
        _measured("http", 400, groups=1, clients=1),  # 0.20: short of 0.25
        _measured("http", 300, p50_s=0.04, p99_s=0.2, groups=1, clients=16),  # 5×: holds
    ]
    results.inprocess += [
        _measured("inprocess", 700, groups=1, clients=1),  # 0.35: short of 0.40
        _measured("inprocess", 350, p50_s=0.01, p99_s=0.15, groups=1, clients=16),  # 15×
    ]
    results.executemany.append(_measured("executemany", 40_000, batch_size=500))
    results.batch.append(_measured("http_batch", 6_400, batch_size=500))  # 0.16: holds

    document = render(results)

    assert _row(document, "HTTP, 16 groups × 16 clients") == (
        "| HTTP, 16 groups × 16 clients | ≥ 0.20× | 0.23× | 0.40× | holds |"
    )
    assert _row(document, "HTTP, 1 group × 1 client") == (
        "| HTTP, 1 group × 1 client | ≥ 0.25× | 0.20× | 0.35× | **does not hold** |"
    )
    assert _row(document, "in process, 1 group × 1 client").endswith(
        "| ≥ 0.40× | 0.35× | 0.35× | **does not hold** |"
    )
    assert _row(document, "HTTP p99 / p50, 16 clients on one group").endswith(
        "| ≤ 10× | 5.0× | — | holds |"
    )
    assert _row(document, "in process p99 / p50, 16 clients on one group").endswith(
        "| ≤ 10× | 15.0× | — | **does not hold** |"
    )
    assert _row(document, "`commands:batch` of 500 / `executemany`").endswith(
        "| ≥ 0.15× | 0.16× | — | holds |"
    )


def test_a_cell_not_measured_is_said_so_not_judged(tmp_path):
    results = _results(tmp_path)
    results.inprocess.append(_measured("inprocess", 500, groups=1, clients=1))

    document = render(results)

    assert _row(document, "HTTP, 16 groups × 16 clients").endswith("| not measured | — | — |")
    assert _row(document, "in process, 1 group × 1 client").endswith(
        "| no ceiling measured | — | — |"
    )


def test_over_rounds_the_median_paired_ratio_is_judged(tmp_path):
    """The ratio a collapsed cell carries (``rounds.collapse``) is the one judged, not its
    median round's rate over that cell's ceiling."""
    results = _results(tmp_path)
    results.pgbench.append(_measured("pgbench", 1000, groups=1, clients=1))
    chosen: Measurement = _measured("http", 200, groups=1, clients=1)
    chosen.params.update({"ratio": 0.26, "ratios": [0.26, 0.30, 0.24]})
    results.http.append(chosen)

    document = render(results)

    assert _row(document, "HTTP, 1 group × 1 client").endswith("| 0.26× | — | holds |")
