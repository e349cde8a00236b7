"""The decisions humans take on a WorkItem, over HTTP on the real write path (wire.md §4, §6,
§9): refusing execution (R10.2-06), reserving a review (R13.2-03), sending a submission back
as a mission owner (R13.2-03 step 5) — and what the projections keep of them and of the
work: every approval decision with its comment, the accepted and failed reviews, the latest
structured progress (R11.4-01) and the mission's usage over time. Each story ends with the
log replayed into exactly the live projection rows."""

from __future__ import annotations

from typing import Any

import pytest

from tests.ledger.checks import assert_log_consistent

from .work_http import (
    Wire,
    WorkWorld,
    approval_risk,
    checked,
    contract,
    evidence,
    owned,
    progress_body,
    review,
    started,
    submission,
)

pytestmark = pytest.mark.django_db

REFUSE = "approval.refuse_execution"
GRANT = "approval.grant_execution"
BOTH = ("c1", "deterministic"), ("c2", "human_review")


def submitted(wire: Wire, ww: WorkWorld, work_item: str) -> str:
    """An item started and submitted by w2 with its claims on both criteria; the lease id."""
    lease = started(wire, ww, work_item)
    claims = [evidence(c, ww.w2, method=m) for c, m in BOTH]
    wire.ok(ww.w2, "work.submit", submission(wire, ww.w2, work_item, lease, claims))
    checked(ww.group, work_item)
    return lease


def decision(work_item: str, comment: str, revision: int = 1) -> dict[str, Any]:
    return {"work_item": work_item, "contract_revision": revision, "comment": comment}


def test_a_refusal_over_http_stops_the_start_and_is_kept_with_its_comment(
    wire: Wire, ww: WorkWorld
) -> None:
    """R10.2-06: only a human mission_owner refuses, with a comment; the refused revision's
    start is 403 APPROVAL_REQUIRED naming who and why; nobody decides it again; every
    decision is on the projection (``approval_log``, ``refusal``)."""
    epoch = owned(wire, ww, "wi-r", contract=contract(risk=approval_risk(2)))["ownership_epoch"]
    wire.ok(ww.oscar, GRANT, decision("wi-r", "scope checked"))

    wire.refused(ww.olga, REFUSE, decision("wi-r", ""), 400, "MALFORMED")
    wire.refused(ww.mo_agent, REFUSE, decision("wi-r", "no"), 403, "FORBIDDEN", "wire§9")
    wire.refused(ww.rex, REFUSE, decision("wi-r", "no"), 403, "FORBIDDEN", "wire§9")
    stale = decision("wi-r", "no", revision=2)
    wire.refused(ww.olga, REFUSE, stale, 409, "STALE_REVISION", "R10.1-05")
    wire.refused(ww.oscar, REFUSE, decision("wi-r", "no"), 409, "DUPLICATE_APPROVAL", "R10.2-06")
    answer = wire.ok(ww.olga, REFUSE, decision("wi-r", "it reads customer data"))
    assert [event["type"] for event in answer["events"]] == ["approval.execution_refused"]

    start = {"work_item": "wi-r", "ownership_epoch": epoch}
    error = wire.refused(ww.w2, "work.start", start, 403, "APPROVAL_REQUIRED", "R10.2-06")
    refused_at = wire.item("wi-r")["refusal"]["recorded_at"]
    assert error["details"] == {
        "refused_by": ww.olga.principal,
        "comment": "it reads customer data",
        "refused_at": refused_at,
        "revision": 1,
    }
    error = wire.refused(ww.cora, GRANT, decision("wi-r", "ok"), 409, "ILLEGAL_TRANSITION")
    assert "refused by user:olga" in error["message"]

    item = wire.item("wi-r")
    assert item["state"] == "queued"
    assert item["approvals"] == [ww.oscar.principal]
    assert [(e["principal"], e["decision"], e["comment"]) for e in item["approval_log"]] == [
        (ww.oscar.principal, "granted", "scope checked"),
        (ww.olga.principal, "refused", "it reads customer data"),
    ]
    assert item["refusal"] == item["approval_log"][-1]
    assert_log_consistent(ww.group)


def test_review_reservations_over_http(wire: Wire, ww: WorkWorld) -> None:
    """R13.2-03: a reviewer reserves a submitted item for ten minutes; someone else's reserve
    is 409 naming the holder, an agent's release 403; the owner may not; the holder releases.
    The holder of the next reservation accepts (what a reservation holds from others is in
    ``test_review_holds``)."""
    submitted(wire, ww, "wi-v")
    reserve = {"work_item": "wi-v"}
    answer = wire.ok(ww.rex, "review.reserve", reserve)
    held = answer["result"]["reservation"]
    assert held["reviewer"] == ww.rex.principal
    assert wire.item("wi-v")["review"]["reservation"]["reviewer"] == ww.rex.principal

    error = wire.refused(ww.olga, "review.reserve", reserve, 409, "ILLEGAL_TRANSITION", "R13.2-03")
    assert error["details"] == {"reserved_by": ww.rex.principal, "expires_at": held["expires_at"]}
    wire.refused(ww.w1, "review.release", reserve, 403, "FORBIDDEN", "R13.2-03")
    wire.refused(ww.w2, "review.reserve", reserve, 403, "FORBIDDEN", "wire§9")
    assert (
        wire.ok(ww.rex, "review.reserve", reserve)["result"]["reservation"]["expires_at"]
        >= (held["expires_at"])
    )
    wire.ok(ww.rex, "review.release", reserve)
    assert wire.item("wi-v")["review"]["reservation"] is None
    wire.refused(ww.rex, "review.release", reserve, 409, "ILLEGAL_TRANSITION", "R13.2-03")

    wire.ok(ww.olga, "review.reserve", reserve)
    wire.ok(ww.olga, "work.accept_result", {"work_item": "wi-v", "review": review("c1", "c2")})
    item = wire.item("wi-v")
    assert item["state"] == "verified"
    assert item["review"]["reservation"] is None
    accepted = item["accepted_review"]
    assert accepted["by"] == ww.olga.principal
    assert accepted["summary"] == "every criterion passes"
    assert [v["criterion"] for v in accepted["verdicts"]] == ["c1", "c2"]
    assert_log_consistent(ww.group)


def test_a_human_mission_owner_sends_a_submission_back_over_http(wire: Wire, ww: WorkWorld) -> None:
    """R13.2-03 step 5, R10.2-13: olga fails the submitted item with evidence (final); the
    failing review is kept; an agent mission_owner may not; before submission she may not."""
    lease = started(wire, ww, "wi-f")
    failure = {
        "work_item": "wi-f",
        "evidence": [evidence("c2", ww.olga, method="human_review", verdict="fail")],
    }
    wire.refused(ww.olga, "work.fail", failure, 409, "ILLEGAL_TRANSITION", "R13.2-03")
    claims = [evidence(c, ww.w2, method=m) for c, m in BOTH]
    wire.ok(ww.w2, "work.submit", submission(wire, ww.w2, "wi-f", lease, claims))

    agent_failure = {**failure, "evidence": [evidence("c2", ww.mo_agent, verdict="fail")]}
    wire.refused(ww.mo_agent, "work.fail", agent_failure, 403, "FORBIDDEN", "wire§9")
    wire.refused(ww.olga, "work.fail", {**failure, "evidence": []}, 409, "EVIDENCE_MISSING")
    answer = wire.ok(ww.olga, "work.fail", failure)
    assert [event["type"] for event in answer["events"]] == ["work.failed"]
    item = wire.item("wi-f")
    assert item["state"] == "failed"
    assert item["failed_review"]["by"] == ww.olga.principal
    assert item["failed_review"]["evidence"] == failure["evidence"]
    assert_log_consistent(ww.group)


def test_progress_and_the_missions_usage_over_time_are_on_the_projections(
    wire: Wire, ww: WorkWorld
) -> None:
    """R11.4-01, R11.4-02: the latest structured progress (no percentage) is on the WorkItem;
    R11.5-12: each charge is a point of the mission's ``usage_series``."""
    lease = started(wire, ww, "wi-p")
    wire.ok(ww.w2, "work.progress", progress_body("wi-p", lease))
    progress = wire.item("wi-p")["progress"]
    assert progress["phase"] == "drafting"
    assert progress["by"] == ww.w2.principal
    assert set(progress["estimate"]) == {"finish_at", "confidence"}

    for tokens in (1000, 500):
        usage = {"work_item": "wi-p", "lease_id": lease, "usage": {"tokens": tokens}}
        wire.ok(ww.w2, "work.usage", usage)
    series = wire.mission("m-1")["usage_series"]
    assert [point[2] for point in series] == [{"tokens": 1000}, {"tokens": 1500}]
    assert series[0][0] < series[1][0]
    assert_log_consistent(ww.group)
