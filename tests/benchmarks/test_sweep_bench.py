"""Smoke tests of the sweep benchmark (``benchmarks/sweep.py``, report section 6).

Tiny sizes against the test database: the seed, the ceilings and the sweep run and agree
with each other; the report's section can be replaced on its own. No speed is asserted.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest

from apps.work.models import WorkItem
from benchmarks.config import load_config
from benchmarks.report import SWEEP_BEGIN, SWEEP_END, render, splice_sweep
from benchmarks.results import Results
from benchmarks.sweep import SweepResult, measure_sweep, statement_kind


@pytest.mark.django_db(transaction=True)
def test_a_tiny_sweep_benchmark_reassigns_every_due_lease_and_reports_it(tmp_path):
    """R11.5-01: every due clone is reassigned through the write path (three events each:
    the template offered both workers), the ceilings touched the same number of rows, every
    statement was counted — one query of the writes per group transaction, whatever the items
    in it (issue 15 §3) — and the section renders."""
    result = measure_sweep(leases=100, due_fraction=0.1, groups=2, limit=4, prefix="smoke")

    assert (result.leases, result.due) == (100, 10)  # 49 clones a group: k = 0, 10, ..., 40
    assert result.applied == result.due == result.ceiling_rows
    assert (result.replayed, result.refused) == (0, 0)
    assert result.events == 3 * result.due
    assert result.calls >= 3  # limit 4: three calls take the ten, the last one finds none
    # each group transaction's writes are one query (``statements.sent_as_one``)
    (flush,) = [kind for kind in result.statements if kind.startswith("INSERT ledger_event")]
    assert "UPDATE work_workitem" in flush
    assert "INSERT ledger_commandrecord" in flush
    assert result.statements[flush] == result.commits < result.due
    assert result.queries == sum(result.statements.values())
    assert 0 < result.sql_s < result.sweep_s
    assert result.ratio > 0
    due_left = WorkItem.objects.filter(due_at__isnull=False, due_at__lte=datetime.now(UTC))
    assert not due_left.exists()
    assert WorkItem.objects.filter(state="offered").count() == result.due

    config = dataclasses.replace(load_config(quick=True), output=tmp_path / "b.md")
    results = Results(command="pytest", config=config, started_at=datetime.now(UTC))
    results.sweep = result
    document = render(results)
    assert "## 6. The lease sweep" in document
    assert document.index(SWEEP_BEGIN) < document.index("## Where the time goes")
    flushes = result.commits
    assert f"| `{flush}` | {flushes} | {flushes / result.due:.2f} |" in document


def _result(applied: int) -> SweepResult:
    return SweepResult(
        leases=1000,
        due=applied,
        groups=2,
        limit=1000,
        seed_s=1.0,
        calls=2,
        applied=applied,
        replayed=0,
        refused=0,
        events=3 * applied,
        sweep_s=2.0,
        sweep_cpu_s=1.0,
        queries=7 * applied,
        sql_s=1.5,
        commits=2,
        statements={"UPDATE work_workitem": applied},
        statement_s={"UPDATE work_workitem": 0.5},
        ceiling_rows=applied,
        ceiling_s=0.01,
        ceiling_document_s=0.05,
    )


def test_the_sweep_section_is_replaced_on_its_own_or_inserted_before_the_breakdown():
    """``--only sweep`` keeps every other figure of the report and swaps section 6: into a
    report from before section 6 existed it goes before *Where the time goes*; into one that
    has it, it replaces the old section between the markers, once."""
    config = load_config(quick=True)
    results = Results(command="pytest", config=config, started_at=datetime.now(UTC))
    legacy = "# Benchmarks\n\n## 5. Ratios\n\nfigures\n\n## Where the time goes\n\nsteps\n"
    assert splice_sweep(legacy, results) == legacy  # nothing measured: nothing inserted

    results.sweep = _result(100)
    first = splice_sweep(legacy, results)
    assert first.startswith("# Benchmarks\n\n## 5. Ratios\n\nfigures\n\n" + SWEEP_BEGIN)
    assert first.index(SWEEP_END) < first.index("## Where the time goes\n\nsteps\n")
    assert "| `UPDATE work_workitem` | 100 | 1.00 |" in first

    results.sweep = _result(250)
    second = splice_sweep(first, results)
    assert second.count(SWEEP_BEGIN) == second.count("## 6. The lease sweep") == 1
    assert "| `UPDATE work_workitem` | 250 | 1.00 |" in second
    assert "| `UPDATE work_workitem` | 100 |" not in second
    assert second.endswith("## Where the time goes\n\nsteps\n")


def test_statements_are_grouped_by_verb_and_table():
    assert statement_kind('SELECT "a"."b" FROM "work_workitem" WHERE x') == "SELECT work_workitem"
    assert (
        statement_kind("SELECT head_sequence FROM ledger_grouplog WHERE g = %s FOR UPDATE")
        == "SELECT ledger_grouplog FOR UPDATE"
    )
    assert statement_kind("INSERT INTO ledger_event (a) VALUES (%s)") == "INSERT ledger_event"
    assert statement_kind('UPDATE "work_workitem" SET a = 1') == "UPDATE work_workitem"
    assert (
        statement_kind(
            'UPDATE "work_workitem" AS t SET "a" = v."a"::integer FROM (VALUES (1, 2)) AS v '
            '("a", "id") WHERE t."id" = v."id"'
        )
        == "UPDATE work_workitem"
    )
    assert statement_kind('SAVEPOINT "s1"') == "SAVEPOINT (savepoint)"
    assert statement_kind('RELEASE SAVEPOINT "s1"') == "RELEASE SAVEPOINT"
    assert statement_kind('COPY "ledger_commandrecord" ("a", "b") FROM STDIN') == (
        "COPY ledger_commandrecord"
    )
    assert (
        statement_kind(
            "INSERT INTO ledger_event (a) VALUES (1), (2);\nUPDATE t SET a = 1;\n"
            "UPDATE t SET a = 2;\nCOMMIT"
        )
        == "INSERT ledger_event + UPDATE t + COMMIT"
    )


def test_a_folded_with_is_counted_as_the_statements_it_holds():
    """``apps.ledger.folded``'s ``WITH`` is classified by its sub-statements and its main
    one, as the statements it replaces would be (a quoted value that looks like the
    separator does not split it)."""
    assert (
        statement_kind(
            "WITH w0 AS (INSERT INTO ledger_event (a) VALUES ('x) UPDATE y')), "
            'w1 AS (UPDATE "work_workitem" SET a = 1 WHERE b = 2), '
            'w2 AS (INSERT INTO "ledger_commandrecord" (a) VALUES (1)) '
            "UPDATE ledger_grouplog SET head_sequence = 3 WHERE group_id = 'g';\nCOMMIT"
        )
        == "INSERT ledger_event + UPDATE work_workitem + INSERT ledger_commandrecord"
        " + UPDATE ledger_grouplog + COMMIT"
    )


def test_saved_sweep_figures_render_the_same_section_again(tmp_path):
    """``--only sweep --render-only`` re-renders section 6 from the figures a run saved, so
    editing the interpretation never needs a new measurement."""
    config = dataclasses.replace(load_config(quick=True), output=tmp_path / "b.md")
    results = Results(command="pytest", config=config, started_at=datetime.now(UTC))
    results.sweep = _result(100)
    results.dump(tmp_path / "sweep.json")

    loaded = Results.load_sweep(tmp_path / "sweep.json", config)

    assert loaded.sweep == results.sweep
    assert splice_sweep("# B\n", loaded) == splice_sweep("# B\n", results)
