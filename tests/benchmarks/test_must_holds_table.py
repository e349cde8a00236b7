"""The must-holds table near the top of docs/benchmarks.md, which ``make bench`` prints last
(issue 38 §3): every must-hold with the latest figure the report's sections give it."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from benchmarks import must_holds
from benchmarks.config import load_config
from benchmarks.dashboard_report import TARGET_MS, carry_over_dashboard
from benchmarks.frozen_floor_figures import FLOOR_BEGIN, FLOOR_END, block
from benchmarks.frozen_floor_figures import NOT_MEASURED as FLOOR_NOT_MEASURED
from benchmarks.report import render
from benchmarks.results import Results
from benchmarks.splice import (
    DASHBOARD_BEGIN,
    DASHBOARD_END,
    SCHEDULER_BEGIN,
    SCHEDULER_END,
    carry_over_block,
    splice_block,
)
from benchmarks.stats import summarize

REPORT = Path(__file__).resolve().parents[2] / "docs" / "benchmarks.md"

SECTION_10 = f"""{DASHBOARD_BEGIN}

## 10. The dashboard's server time

| page | as | requests | p50 ms | p95 ms | max ms | queries | SQL ms | KB | must hold |
|---|---|---:|---:|---:|---:|---:|---:|---:|---|
| inbox | `o` | 50 | 120 | 124 | 220 | 19 | 48.0 | 72 | yes |
| review queue | `r` | 50 | 101 | 205 | 209 | 10 | 23.0 | 116 | — |
| {{slow}} | `o` | 50 | 119 | {{p95}} | 224 | 33 | 36.0 | 76 | {{verdict}} |

{DASHBOARD_END}
"""


def _measured(name: str, rate: float, **cell: int):
    latencies = [0.01] * 98 + [0.03] * 2
    return summarize(name, operations=int(rate), elapsed_s=1.0, latencies_s=latencies, params=cell)


def _report(tmp_path: Path) -> str:
    config = dataclasses.replace(load_config(quick=True), output=tmp_path / "b.md")
    results = Results(command="pytest", config=config, started_at=datetime.now(UTC))
    results.pgbench += [
        _measured("pgbench", 2000, groups=1, clients=1),
        _measured("pgbench", 4000, groups=16, clients=16),
    ]
    results.http += [
        _measured("http", 600, groups=1, clients=1),  # 0.30: holds 0.25
        _measured("http", 400, groups=16, clients=16),  # 0.10: short of 0.20
    ]
    results.executemany.append(_measured("executemany", 40_000, batch_size=500))
    results.batch.append(_measured("http_batch", 3_200, batch_size=500))  # 0.08
    return render(results)


def _row(rows: list[must_holds.Row], text: str) -> must_holds.Row:
    return next(row for row in rows if row.text == text)


def test_the_write_path_rows_are_read_from_section_5c_as_the_run_judged_them(tmp_path):
    rows = must_holds.must_holds(_report(tmp_path))

    assert _row(rows, "HTTP, 1 group × 1 client").latest == "0.30×"
    assert _row(rows, "HTTP, 1 group × 1 client").verdict == "holds"
    assert _row(rows, "HTTP, 16 groups × 16 clients").verdict == "**does not hold**"
    batch = _row(rows, "`commands:batch` of 500 / `executemany`")
    assert (batch.issue, batch.asked, batch.latest) == ("15, 38", "≥ 0.15×", "0.08×")
    assert _row(rows, "in process, 1 group × 1 client").latest == "not measured"
    assert _row(rows, "in process, 1 group × 1 client").verdict == "—"


def test_issue_38s_frozen_floor_ratios_say_no_floor_run_has_measured_them(tmp_path):
    """A full run's report alone: the frozen floor is measured by ``--only floor``."""
    rows = must_holds.must_holds(_report(tmp_path))

    frozen = [row for row in rows if row.issue == "38"]
    assert [(row.asked, row.latest, row.verdict) for row in frozen] == [
        ("≥ 0.65×", FLOOR_NOT_MEASURED, "—"),
        ("≥ 0.40×", FLOOR_NOT_MEASURED, "—"),
        ("≥ 0.45×", FLOOR_NOT_MEASURED, "—"),
        ("≥ 0.15×", FLOOR_NOT_MEASURED, "—"),
    ]


def test_a_full_run_carries_the_frozen_floors_block_over(tmp_path):
    """``make bench`` does not measure the frozen floor; the last ``--only floor`` run's
    block and its rows of the table stay."""
    rates = {"frozen_floor": 200, "inprocess": 140, "http": 100, "executemany": 1, "batch": 1}
    floor = block([rates], when="today", command="pytest")
    published = must_holds.splice_must_holds(_report(tmp_path) + "\n" + floor)

    carried = must_holds.splice_must_holds(
        carry_over_block(published, _report(tmp_path), FLOOR_BEGIN, FLOOR_END)
    )

    assert floor in carried
    assert "| in process, 1 group × 1 client / frozen floor | 38 | ≥ 0.65× | 0.70× | holds |" in (
        carried
    )


def test_the_dashboard_row_is_the_slowest_must_hold_page_of_section_10():
    held = SECTION_10.format(slow="overview", p95="130", verdict="yes")
    broken = SECTION_10.format(slow="overview", p95="1,200", verdict="**no**")

    row = must_holds._dashboard_row(held)
    assert (row.asked, row.latest, row.verdict) == (
        f"≤ {TARGET_MS:.0f} ms",
        "130 ms (overview, the slowest)",
        "holds",
    )
    assert must_holds._dashboard_row(broken).verdict == "**does not hold**"
    assert must_holds._dashboard_row(broken).latest.startswith("1,200 ms")


def test_the_table_goes_before_section_1_once_and_is_replaced_in_place(tmp_path):
    report = _report(tmp_path)

    once = must_holds.splice_must_holds(report)
    twice = must_holds.splice_must_holds(once)

    assert once == twice
    assert once.count(must_holds.BEGIN) == 1
    assert once.index(must_holds.END) < once.index(must_holds.ANCHOR)
    assert "| must hold | issue | asked | latest | verdict |" in once


def test_the_published_report_holds_its_must_holds_table_as_make_bench_writes_it():
    document = REPORT.read_text()

    assert must_holds.splice_must_holds(document) == document


def test_printing_the_table_reads_the_report_it_is_given(tmp_path, capsys):
    report = tmp_path / "b.md"
    report.write_text(must_holds.splice_must_holds(_report(tmp_path)))

    assert must_holds.main([str(report)]) == 0

    printed = capsys.readouterr().out
    assert "| HTTP, 1 group × 1 client | 15 (informative) | ≥ 0.25× | 0.30× | holds |" in printed


def test_a_report_of_one_only_run_alone_gets_no_table():
    document = "# Benchmarks\n\n" + SECTION_10.format(slow="overview", p95="130", verdict="yes")

    assert must_holds.splice_must_holds(document) == document


def test_a_dashboard_run_refreshes_the_tables_dashboard_row(tmp_path):
    held = _report(tmp_path) + "\n" + SECTION_10.format(slow="overview", p95="130", verdict="yes")
    published = must_holds.splice_must_holds(held)
    rerun = splice_block(
        published,
        DASHBOARD_BEGIN,
        DASHBOARD_END,
        SECTION_10.format(slow="overview", p95="180", verdict="**no**"),
    )

    refreshed = must_holds.splice_must_holds(rerun)

    assert "| 37 | ≤ 150 ms | 180 ms (overview, the slowest) | **does not hold** |" in refreshed


def test_a_full_run_carries_the_published_sections_10_and_11_over(tmp_path):
    """Both sections need their end markers in the report, or ``make bench`` drops them."""
    published = REPORT.read_text()
    fresh = _report(tmp_path)

    carried = carry_over_block(
        published, carry_over_dashboard(published, fresh), SCHEDULER_BEGIN, SCHEDULER_END
    )

    for begin, end in ((DASHBOARD_BEGIN, DASHBOARD_END), (SCHEDULER_BEGIN, SCHEDULER_END)):
        assert (
            carried.split(begin, 1)[1].split(end, 1)[0]
            == (published.split(begin, 1)[1].split(end, 1)[0])
        )


def test_printing_the_table_needs_no_django():
    """``make bench`` prints the table in a process of its own, with no settings."""
    code = "import sys, benchmarks.must_holds; assert 'django' not in sys.modules"

    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPORT.parents[1])
