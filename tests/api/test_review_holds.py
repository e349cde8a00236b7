"""What holds a decision, over HTTP on the real write path (issue 34; wire.md §8, §9).

Acceptance waits for the authority's checks (R13.2-03): ``CHECKS_PENDING`` while it owes one,
``CHECKS_FAILED`` once one failed; ``work.fail`` stays allowed. A running reservation holds
the decision for its holder (``REVIEW_RESERVED``), which a mission owner may end, saying why.
A refused execution stops (R10.2-06): nothing is due, nobody offers the same contract again,
and every answer says who refused, why and when. Each refusal is 409 with its ``details`` and
appends nothing (the served head does not move); each story ends with the log replayed into
exactly the live projection rows.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.ledger.checks import assert_log_consistent

from .work_http import (
    Persona,
    Wire,
    WorkWorld,
    approval_risk,
    checked,
    contract,
    evidence,
    far,
    offer_body,
    owned,
    started,
    submission,
)

pytestmark = pytest.mark.django_db

INTEGRITY = "authority:integrity"


def criteria(text: str) -> list[dict[str, Any]]:
    """c1: the authority checks the summary contains ``text``; c2: an agent's review."""
    check = {"check": "text_contains", "output": "summary", "text": text}
    return [
        {
            "id": "c1",
            "description": "Covers every report",
            "method": "deterministic",
            "evidence": ["test_result"],
            "checks": [check],
        },
        {"id": "c2", "description": "Neutral", "method": "agent_review", "evidence": ["review"]},
    ]


#: what the summary says (``work_http.SUMMARY``), and what it does not
PASSES, FAILS = "Every report", "Every ticket"


def submitted(wire: Wire, ww: WorkWorld, work_item: str, text: str = PASSES) -> None:
    """w2 submits the summary as the contract's ``summary`` output; not checked yet."""
    lease = started(wire, ww, work_item, contract=contract(acceptance_criteria=criteria(text)))
    claims = [
        evidence("c1", ww.w2),
        evidence("c2", ww.w2, method="agent_review"),
    ]
    body = submission(wire, ww.w2, work_item, lease, claims)
    wire.ok(ww.w2, "work.submit", {**body, "outputs": {"summary": body["artifacts"][0]}})


def accept(work_item: str) -> dict[str, Any]:
    verdicts = [{"criterion": c, "verdict": "pass", "note": ""} for c in ("c1", "c2")]
    return {"work_item": work_item, "review": {"verdicts": verdicts, "summary": "read"}}


def fail(work_item: str, by: Persona) -> dict[str, Any]:
    return {"work_item": work_item, "evidence": [evidence("c2", by, "agent_review", "fail")]}


def record(work_item: str, by: Persona) -> dict[str, Any]:
    return {"work_item": work_item, **evidence("c2", by, method="agent_review")}


def reserve(wire: Wire, who: Persona, work_item: str) -> dict[str, Any]:
    answer = wire.ok(who, "review.reserve", {"work_item": work_item})
    return answer["result"]["reservation"]


# --- CHECKS_PENDING, CHECKS_FAILED ------------------------------------------------------------


def test_acceptance_waits_for_the_authoritys_checks_over_http(wire: Wire, ww: WorkWorld) -> None:
    """R13.2-03, issue 34: while the authority owes its integrity check and c1's declared
    check, ``work.accept_result`` is 409 CHECKS_PENDING {pending: [authority:integrity, c1]}
    for an agent and a person alike, and appends nothing; once the checks pass it is
    accepted."""
    submitted(wire, ww, "wi-p")
    for who in (ww.w1, ww.olga):
        error = wire.refused(who, "work.accept_result", accept("wi-p"), 409, "CHECKS_PENDING")
        assert error["requirement"] == "R13.2-03"
        assert error["details"] == {"pending": [INTEGRITY, "c1"]}
    checked(ww.group, "wi-p")
    wire.ok(ww.w1, "work.accept_result", accept("wi-p"))
    assert wire.item("wi-p")["state"] == "verified"
    assert_log_consistent(ww.group)


def test_what_a_check_failed_is_not_accepted_but_sent_back(wire: Wire, ww: WorkWorld) -> None:
    """R13.2-03, issue 34: the authority's check of c1 failed: 409 CHECKS_FAILED {failed:
    [c1]}, nothing appended; sending it back is allowed, also while checks are owed."""
    submitted(wire, ww, "wi-f", text=FAILS)
    checked(ww.group, "wi-f")
    assert wire.item("wi-f")["review"]["criteria"]["c1"]["status"] == "fail"
    error = wire.refused(ww.olga, "work.accept_result", accept("wi-f"), 409, "CHECKS_FAILED")
    assert (error["requirement"], error["details"]) == ("R13.2-03", {"failed": ["c1"]})
    wire.ok(ww.w1, "work.fail", fail("wi-f", ww.w1))
    assert wire.item("wi-f")["state"] == "failed"

    submitted(wire, ww, "wi-g")  # not checked yet: failing it is not held
    wire.ok(ww.olga, "work.fail", fail("wi-g", ww.olga))
    assert wire.item("wi-g")["state"] == "failed"
    assert_log_consistent(ww.group)


# --- REVIEW_RESERVED ----------------------------------------------------------------------------


def test_a_persons_reservation_holds_the_decision_over_http(wire: Wire, ww: WorkWorld) -> None:
    """Issue 34, R13.2-03: while olga's reservation runs, the coordinator agent's accept and
    fail and oscar's evidence are 409 REVIEW_RESERVED {reserved_by, expires_at}, appending
    nothing; the reviewer agent's evidence is recorded; olga's acceptance ends it."""
    submitted(wire, ww, "wi-r")
    checked(ww.group, "wi-r")
    held = reserve(wire, ww.olga, "wi-r")
    expected = {"reserved_by": ww.olga.principal, "expires_at": held["expires_at"]}
    for who, type_, body in (
        (ww.w1, "work.accept_result", accept("wi-r")),
        (ww.oscar, "work.accept_result", accept("wi-r")),
        (ww.w1, "work.fail", fail("wi-r", ww.w1)),
        (ww.oscar, "work.fail", fail("wi-r", ww.oscar)),
        (ww.oscar, "evidence.record", record("wi-r", ww.oscar)),
    ):
        error = wire.refused(who, type_, body, 409, "REVIEW_RESERVED", "R13.2-03")
        assert error["details"] == expected, (who.principal, type_)
    wire.ok(ww.rex, "evidence.record", record("wi-r", ww.rex))
    wire.ok(ww.olga, "evidence.record", record("wi-r", ww.olga))
    wire.ok(ww.olga, "work.accept_result", accept("wi-r"))
    item = wire.item("wi-r")
    assert (item["state"], item["review"]["reservation"]) == ("verified", None)
    assert item["accepted_review"]["by"] == ww.olga.principal
    assert_log_consistent(ww.group)


def test_the_refusals_come_in_order_reservation_pending_failed(wire: Wire, ww: WorkWorld) -> None:
    """Issue 34 precedence, after the role and state checks: REVIEW_RESERVED, then
    CHECKS_PENDING, then CHECKS_FAILED."""
    submitted(wire, ww, "wi-o", text=FAILS)
    reserve(wire, ww.olga, "wi-o")
    wire.refused(ww.rex, "work.accept_result", accept("wi-o"), 403, "FORBIDDEN", "wire§9")
    wire.refused(ww.w1, "work.accept_result", accept("wi-o"), 409, "REVIEW_RESERVED")
    wire.refused(ww.olga, "work.accept_result", accept("wi-o"), 409, "CHECKS_PENDING")
    checked(ww.group, "wi-o")
    wire.refused(ww.w1, "work.accept_result", accept("wi-o"), 409, "REVIEW_RESERVED")
    wire.refused(ww.olga, "work.accept_result", accept("wi-o"), 409, "CHECKS_FAILED")
    wire.ok(ww.olga, "work.fail", fail("wi-o", ww.olga))
    wire.refused(ww.w1, "work.accept_result", accept("wi-o"), 409, "ILLEGAL_TRANSITION")
    assert_log_consistent(ww.group)


def test_a_mission_owner_ends_someone_elses_reservation_saying_why(
    wire: Wire, ww: WorkWorld
) -> None:
    """Issue 34: so that nothing stalls, a human mission owner ends oscar's reservation with
    a reason (403 for an agent, 400 MALFORMED without a reason); ``review.released`` records
    whose it was, who ended it and why; then the coordinator agent may decide."""
    submitted(wire, ww, "wi-e")
    checked(ww.group, "wi-e")
    reserve(wire, ww.oscar, "wi-e")
    end = {"work_item": "wi-e", "reason": "Oscar is away this week"}
    wire.refused(ww.rex, "review.release", end, 403, "FORBIDDEN", "R13.2-03")
    error = wire.refused(ww.olga, "review.release", {"work_item": "wi-e"}, 400, "MALFORMED")
    assert error["details"] == {"path": "$.reason"}
    answer = wire.ok(ww.olga, "review.release", end)
    [released] = [e for e in wire.events() if e["sequence"] == answer["events"][0]["sequence"]]
    assert (released["type"], released["actor"]) == ("review.released", ww.olga.principal)
    assert released["payload"] == {
        "work_item": "wi-e",
        "reviewer": ww.oscar.principal,
        "ended_by": ww.olga.principal,
        "reason": "Oscar is away this week",
    }
    assert wire.item("wi-e")["review"]["reservation"] is None
    wire.ok(ww.w1, "work.accept_result", accept("wi-e"))
    assert_log_consistent(ww.group)


# --- a refused execution stops ----------------------------------------------------------------


def refusal(work_item: str, comment: str = "it reads customer data") -> dict[str, Any]:
    return {"work_item": work_item, "contract_revision": 1, "comment": comment}


def test_a_refused_execution_stops_and_says_who_why_and_when(wire: Wire, ww: WorkWorld) -> None:
    """R10.2-06, issue 34: after olga's refusal the item has no start-by time; the projection
    says ``execution_refused`` {by, reason, at, revision, waits_for}; offering the same
    contract again is 409 ILLEGAL_TRANSITION; her second decision is DUPLICATE_APPROVAL
    naming who refused, why and when, once; a corrected contract is offered at once."""
    gated = contract(risk=approval_risk(1))
    owned(wire, ww, "wi-x", contract=gated)
    assert wire.item("wi-x")["start_deadline"] is not None
    wire.ok(ww.olga, "approval.refuse_execution", refusal("wi-x"))
    item = wire.item("wi-x")
    at = item["refusal"]["recorded_at"]
    assert (item["state"], item["start_deadline"]) == ("queued", None)
    assert item["execution_refused"] == {
        "by": ww.olga.principal,
        "reason": "it reads customer data",
        "at": at,
        "revision": 1,
        "waits_for": "corrected_contract",
    }

    again = offer_body("wi-x", [("wi-x-o2", ww.w3, far())], contract=gated)
    error = wire.refused(ww.w1, "work.offer", again, 409, "ILLEGAL_TRANSITION", "R10.2-06")
    assert error["details"]["refused_by"] == ww.olga.principal
    error = wire.refused(
        ww.olga, "approval.grant_execution", refusal("wi-x", "ok"), 409, "DUPLICATE_APPROVAL"
    )
    assert error["details"] == {
        "revision": 1,
        "decision": "refused",
        "decided_by": ww.olga.principal,
        "decided_at": at,
        "comment": "it reads customer data",
        "refused_by": ww.olga.principal,
        "refused_at": at,
    }
    assert error["message"].count("it reads customer data") == 1

    corrected = contract(risk=approval_risk(1), goal="Summarise November without customer data")
    wire.ok(
        ww.w1, "work.offer", offer_body("wi-x", [("wi-x-o3", ww.w3, far())], contract=corrected)
    )
    item = wire.item("wi-x")
    assert (item["state"], item["revision"], item["execution_refused"]) == ("offered", 2, None)
    assert_log_consistent(ww.group)
