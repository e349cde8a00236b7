"""Smoke test of the dashboard benchmark (``benchmarks/dashboard*.py``, report section 10).

The quick size against the test database: a 2,000-event group whose history is generated
and whose 50-item mission went through the write path. No speed is asserted.
"""

from __future__ import annotations

import pytest
from django.core.management import call_command

from apps.work.models import WorkItem
from benchmarks.dashboard import PAGES, DashboardResult, measure_dashboard
from benchmarks.dashboard_build import BuiltDashboard, check_projections, populate
from benchmarks.dashboard_report import BEGIN, END, carry_over_dashboard, splice_dashboard
from benchmarks.replay import verify_chain


def _assert_valid_group(built: BuiltDashboard) -> None:
    head, _head_hash = verify_chain(built.group)
    assert head == built.head >= 2000
    call_command("rebuild_projections", group=[built.group], verify=True, verbosity=0)
    assert check_projections(built) is None

    rows = {
        row.work_item_id: row
        for row in WorkItem.objects.filter(group_id=built.group, mission=built.mission)
    }
    assert len(rows) == 50
    states = {row.state for row in rows.values()}
    assert {"open", "offered", "queued", "active", "submitted", "verified"} <= states
    for row in rows.values():
        if row.state != "open":  # nothing past open waits on unverified work (R10.4-03)
            deps = row.data.get("depends_on", [])
            assert all(rows[dep].state == "verified" for dep in deps), row.work_item_id
    assert rows[built.targets["review"]].state == "submitted"
    assert rows[built.targets["approval"]].state == "queued"


@pytest.mark.django_db(transaction=True)
def test_the_quick_dashboard_benchmark_builds_a_valid_group_and_reports_every_page():
    """wire§6, R10.4-03: the group holds at least the events asked for, gapless and chained
    to the head row, and ``rebuild_projections --verify`` finds the generated history's and
    the big mission's rows equal to a replay of the log. Every page is then measured —
    timings, queries and size — or reported as not built (404) or failing, which never
    stops the run; the pages from before issue 12 are measured. Section 10 replaces itself
    and survives a full run's rewrite of the report."""
    built = populate(2000, 50, log=print)
    _assert_valid_group(built)

    result = measure_dashboard(built, requests=3, warmup=0)

    assert [page.name for page in result.pages] == [page.name for page in PAGES]
    for page in result.pages:
        if page.built:
            assert len(page.ms) == 3
            assert 0 < page.stat("p50") <= page.stat("p95") <= page.stat("max")
            assert page.queries > 0
            assert page.kb > 0
        else:
            assert page.status == 404 or page.error
    baseline = [page for page in result.pages if page.baseline]
    assert baseline
    assert all(page.built for page in baseline), [(p.name, p.status, p.error) for p in baseline]
    assert DashboardResult.from_dict(result.as_dict()).as_dict() == result.as_dict()

    document = "# Benchmarks\n\n## 9. Artifacts\n\nx\n\n## Where the time goes\n\ny\n"
    first = splice_dashboard(document, result, "pytest")
    assert first.index("## 9. Artifacts") < first.index(BEGIN) < first.index(END)
    assert first.index(END) < first.index("## Where the time goes")
    for page in result.pages:
        assert f"| {page.name} |" in first
    again = splice_dashboard(first, result, "pytest again")
    assert again.count(BEGIN) == again.count("## 10. The dashboard") == 1
    assert "`pytest again`" in again
    rewritten = carry_over_dashboard(again, document)
    assert rewritten.count(BEGIN) == 1
    assert "`pytest again`" in rewritten
