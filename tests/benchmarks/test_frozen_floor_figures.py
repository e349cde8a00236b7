"""Issue 38's must-holds over the frozen floor (``python -m benchmarks.run --only floor``): each
ratio is the median of the rounds' paired ratios, judged against what the issue asks, and the
block the run writes is what the must-holds table reads back. No benchmark runs here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import frozen_floor_figures as figures
from benchmarks import must_holds

ROOT = Path(__file__).resolve().parents[2]

#: three rounds whose paired ratios differ from the ratios of the median rates
ROUNDS = [
    {"pgbench": 800, "frozen_floor": 400, "inprocess": 280, "http": 200, "executemany": 20_000,
     "batch": 3_400, "frozen_floor_16x16": 2_000, "http_16x16": 700},  # 0.70, 0.50, 0.17; 0.35
    {"pgbench": 600, "frozen_floor": 200, "inprocess": 120, "http": 80, "executemany": 30_000,
     "batch": 3_000, "frozen_floor_16x16": 1_000, "http_16x16": 420},  # 0.60, 0.40, 0.10; 0.42
    {"pgbench": 700, "frozen_floor": 300, "inprocess": 198, "http": 138, "executemany": 25_000,
     "batch": 4_000, "frozen_floor_16x16": 1_500, "http_16x16": 615},  # 0.66, 0.46, 0.16; 0.41
]  # fmt: skip


def _judged(rounds: list[dict[str, float]]) -> dict[str, figures.Judged]:
    return {judged.ratio.text: judged for judged in figures.judge(rounds)}


def test_each_ratio_is_the_median_of_the_rounds_paired_ratios():
    judged = _judged(ROUNDS)

    inprocess = judged["in process, 1 group × 1 client / frozen floor"]
    assert inprocess.ratios == pytest.approx((0.70, 0.60, 0.66))
    assert inprocess.median == pytest.approx(0.66)
    assert judged["HTTP, 1 group × 1 client / frozen floor"].median == pytest.approx(0.46)
    batch = judged[figures.MUST_HOLD[3].text]
    assert batch.median == pytest.approx(0.16)
    assert judged["frozen floor / pgbench"].median == pytest.approx(300 / 700)


def test_a_ratio_holds_at_what_the_issue_asks_and_not_below():
    held = _judged(ROUNDS)
    short = _judged([{**rates, "inprocess": rates["frozen_floor"] * 0.64} for rates in ROUNDS])

    assert held["in process, 1 group × 1 client / frozen floor"].verdict == "holds"
    assert held["HTTP, 1 group × 1 client / frozen floor"].verdict == "holds"
    assert held[figures.MUST_HOLD[3].text].verdict == "holds"
    assert short["in process, 1 group × 1 client / frozen floor"].verdict == "**does not hold**"
    assert held["in process, 1 group × 1 client / pgbench"].verdict == "—"  # informative


def test_a_round_missing_a_figure_or_with_a_zero_denominator_is_left_out():
    rounds = [{"frozen_floor": 0, "inprocess": 100}, {"frozen_floor": 200, "inprocess": 150}, {}]

    assert figures.paired(rounds, "inprocess", "frozen_floor") == (0.75,)
    assert _judged([])["HTTP, 1 group × 1 client / frozen floor"].latest == figures.NOT_MEASURED


def test_the_16_by_16_ratio_is_over_the_frozen_floor_at_16_by_16():
    """Like over like: HTTP at 16 clients on 16 groups over the frozen script's 16 copies at
    16 clients, not over the one-client floor."""
    row = _judged(ROUNDS)[figures.MUST_HOLD[1].text]

    assert row.ratios == pytest.approx((0.35, 0.42, 0.41))
    assert (row.ratio.asked, row.latest, row.verdict) == ("≥ 0.40×", "0.41×", "holds")


def test_the_block_gives_the_must_holds_table_its_frozen_floor_rows():
    document = figures.block(ROUNDS, when="2026-12-07 06:00 UTC", command="pytest")

    rows = {row.text: row for row in must_holds.must_holds(document)}

    assert [
        (row.asked, row.latest, row.verdict)
        for row in rows.values()
        if row.text in {ratio.text for ratio in figures.MUST_HOLD}
    ] == [
        ("≥ 0.65×", "0.66×", "holds"),
        ("≥ 0.40×", "0.41×", "holds"),
        ("≥ 0.45×", "0.46×", "holds"),
        ("≥ 0.15×", "0.16×", "holds"),
    ]
    assert "| round 1 | round 2 | round 3 |" in document
    assert "| in process, 1 group × 1 client / frozen floor | ≥ 0.65× | 0.70, 0.60, 0.66 |" in (
        document
    )


def test_a_report_without_the_block_says_the_floor_is_not_yet_measured():
    rows = [row for row in must_holds.must_holds("# Benchmarks\n") if row.issue == "38"]

    assert [row.latest for row in rows] == [figures.NOT_MEASURED] * 4
    assert {row.verdict for row in rows} == {"—"}


def test_the_figures_module_needs_no_django():
    """``python -m benchmarks.must_holds`` reads the block in a process with no settings."""
    code = "import sys, benchmarks.frozen_floor_figures; assert 'django' not in sys.modules"

    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
