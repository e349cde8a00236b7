"""The demo's reviewer agent's reading of a report, and the workers' reports it reads
(``missionweave/demo/reviewer.py``, ``work.py``): pure, no server."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from missionweave.demo.contracts import CHECKS, contract
from missionweave.demo.reviewer import verdict_on
from missionweave.demo.work import MAX_STEPS, MIN_STEPS, report_for, steps_for
from missionweave.protocol.artifacts.deterministic import run_check

ids = st.text(st.characters(codec="ascii", categories=("L", "N")), min_size=1, max_size=40)


@settings(deadline=None)  # timing is not under test; a loaded CI machine is slow
@given(st.binary(max_size=2000))
def test_any_bytes_get_a_verdict_and_never_an_exception(data: bytes) -> None:
    """R13.2-03 step 3: whatever a worker submitted, the reviewer answers pass or fail with
    a summary — a malformed report is a ``fail``, not a crash of the agent."""
    verdict, summary, facts = verdict_on(data)
    assert verdict in ("pass", "fail")
    assert summary
    assert isinstance(facts, dict)


@settings(deadline=None)  # timing is not under test; a loaded CI machine is slow
@given(
    st.dictionaries(
        st.sampled_from(["status", "coverage", "findings"]),
        st.none() | st.floats(allow_nan=False) | st.text() | st.lists(st.text()),
    )
)
def test_a_report_passes_only_when_complete_covering_and_with_findings(report: dict) -> None:
    """R13.2-01: the reviewer's own reading, never the worker's claim: every condition holds
    or the verdict is ``fail`` naming what is missing."""
    verdict, summary, _ = verdict_on(json.dumps(report).encode())
    coverage = report.get("coverage")
    complete = (
        report.get("status") == "complete"
        and isinstance(coverage, float)
        and coverage >= 0.8
        and bool(report.get("findings"))
    )
    assert (verdict == "pass") == complete, summary


@settings(deadline=None)  # timing is not under test; a loaded CI machine is slow
@given(ids, st.text(st.characters(exclude_categories=("Cc", "Cs")), min_size=1, max_size=80))
def test_the_workers_report_passes_the_authoritys_checks_and_the_reviewer(
    work_item: str, goal: str
) -> None:
    """R13.2-03 steps 2-3: what ``write_report`` submits satisfies the contract's
    deterministic checks, as the authority runs them, and the reviewer's reading; the
    number of sources is in the stated range, and it depends only on the WorkItem."""
    data = json.dumps(report_for(work_item, goal), sort_keys=True).encode()
    terms = contract(goal, "2030-01-01T00:00:00Z")
    checks = terms["acceptance_criteria"][0]["checks"]
    assert checks == [dict(check) for check in CHECKS]
    assert [run_check(check, data)["verdict"] for check in checks] == ["pass"] * len(checks)
    assert verdict_on(data)[0] == "pass"
    assert MIN_STEPS <= steps_for(work_item) <= MAX_STEPS
    assert report_for(work_item, goal) == report_for(work_item, goal)
