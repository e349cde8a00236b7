"""The WorkItem capability over HTTP, as an independent client written from wire.md would use it:
the projection (§4), the whole life of an item (§6, §9), offers, the approval gate and
dependencies — every refusal with its status, code and R-ID, and nothing appended."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import pytest
from rest_framework.test import APIClient

from missionweave.protocol.timefmt import parse_timestamp
from tests.factories import human, now_text

from .http import error_of, get, json_of
from .work_http import (
    Wire,
    WorkWorld,
    approval_risk,
    authorize_body,
    authorized,
    basis,
    checked,
    checkpoint_body,
    contract,
    evidence,
    far,
    machine_criteria,
    mission_create_body,
    offer_body,
    owned,
    progress_body,
    raw_json,
    review,
    started,
    submission,
)

pytestmark = pytest.mark.django_db


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


# --- 1. the projection (wire §4) --------------------------------------------------------------


def test_work_item_projection_has_the_wire_fields_with_numeric_budgets(
    api: APIClient, wire: Wire, ww: WorkWorld
) -> None:
    """wire§4: state, revision, contract, owner, ownership_epoch, lease, offers, depends_on,
    budgets {limits, used} as JSON numbers; an unaccepted item has no owner (R10.3-02)."""
    authorized(wire, ww, "wi-a", depends_on=["wi-later"])
    response = get(api, f"/groups/{ww.group}/work-items/wi-a", ww.w2.token)
    document = raw_json(response)

    assert response.status_code == 200
    assert {
        "state", "revision", "contract", "owner", "ownership_epoch", "lease", "offers",
        "depends_on", "budgets",
    } <= set(document)  # fmt: skip
    assert document["state"] == "open"
    assert document["revision"] == 1
    assert document["contract"]["goal"] == contract()["goal"]
    assert document["owner"] is None
    assert document["ownership_epoch"] == 0
    assert document["lease"] is None
    assert document["offers"] == []
    assert document["depends_on"] == ["wi-later"]
    assert set(document["budgets"]) == {"limits", "used"}
    assert document["budgets"]["limits"] == contract()["budgets"]
    assert all(_is_number(v) for v in document["budgets"]["limits"].values())
    assert document["budgets"]["used"] == {}


def test_work_item_is_read_by_members_only_and_an_unknown_one_is_404(
    api: APIClient, wire: Wire, ww: WorkWorld
) -> None:
    """wire§4, wire§2: a non-member (agent or human) is 403 NOT_A_MEMBER; unknown id 404."""
    authorized(wire, ww, "wi-a")
    path = f"/groups/{ww.group}/work-items/wi-a"

    error_of(get(api, path, ww.stranger.token), 403, "NOT_A_MEMBER")
    error_of(get(api, path, human("nora").token), 403, "NOT_A_MEMBER")
    error_of(get(api, f"/groups/{ww.group}/work-items/wi-ghost", ww.w2.token), 404, "NOT_FOUND")
    error_of(get(api, path), 401, "UNAUTHENTICATED")
    assert json_of(get(api, path, ww.rex.token), 200)["state"] == "open"  # any member reads


@pytest.mark.parametrize("ending", ["verified", "failed", "cancelled"])
def test_owner_is_kept_through_the_end_and_cleared_by_a_new_offer(
    wire: Wire, ww: WorkWorld, ending: str
) -> None:
    """wire§4: owner null until accepted; kept through submitted and verified/failed/cancelled;
    work.offer clears it (R10.2-03, R10.2-20: a failed item leaves only through a new offer)."""
    authorized(wire, ww, "wi-a", contract=contract(acceptance_criteria=machine_criteria()))
    wire.ok(ww.w1, "work.offer", offer_body("wi-a", [("o1", ww.w2, far())]))
    assert wire.item("wi-a")["owner"] is None
    epoch = wire.ok(
        ww.w2, "work.accept_offer", {"work_item": "wi-a", "offer": "o1", "contract_revision": 1}
    )["result"]["ownership_epoch"]
    assert (wire.item("wi-a")["owner"], wire.item("wi-a")["ownership_epoch"]) == (
        ww.w2.principal,
        epoch,
    )
    lease = wire.ok(ww.w2, "work.start", {"work_item": "wi-a", "ownership_epoch": epoch})
    lease_id = lease["result"]["lease"]["lease_id"]
    if ending == "verified":
        body = submission(wire, ww.w2, "wi-a", lease_id, [evidence("c1", ww.w2)])
        wire.ok(ww.w2, "work.submit", body)
        assert wire.item("wi-a")["owner"] == ww.w2.principal
        checked(ww.group, "wi-a")
        wire.ok(ww.w1, "work.accept_result", {"work_item": "wi-a", "review": review("c1")})
    elif ending == "failed":
        body = {"work_item": "wi-a", "evidence": [evidence("c1", ww.w1, verdict="fail")]}
        wire.ok(ww.w1, "work.fail", body)
    else:
        wire.ok(ww.w1, "work.cancel", {"work_item": "wi-a", "reason": "no longer needed"})

    document = wire.item("wi-a")
    assert (document["state"], document["owner"]) == (ending, ww.w2.principal)
    if ending == "failed":
        wire.ok(ww.w1, "work.offer", offer_body("wi-a", [("o2", ww.w3, far())]))
        again = wire.item("wi-a")
        assert (again["state"], again["owner"]) == ("offered", None)
        assert again["ownership_epoch"] == epoch  # the next acceptance raises it
    else:
        # R10.2-19: verified and cancelled are terminal — no new offer
        wire.refused(
            ww.w1,
            "work.offer",
            offer_body("wi-a", [("o2", ww.w3, far())]),
            409,
            "ILLEGAL_TRANSITION",
            "R10.2-03",
        )


# --- 2. the whole life of a WorkItem over HTTP --------------------------------------------------


def test_happy_path_over_http_with_every_refusal_appending_nothing(
    wire: Wire, ww: WorkWorld
) -> None:
    """wire§6, wire§9: propose → authorize → essential question/answer (R10.1-02) → urgent offer
    (R10.3-04) → first acceptance wins, loser OFFER_WITHDRAWN (R10.3-05, R10.3-06) → approval
    gate APPROVAL_REQUIRED (R10.1-01), SELF_APPROVAL (R10.2-06) → start with a lease (R11.3-03)
    → renew, progress, usage, checkpoint (R10.2-08) → new lease, old one STALE_LEASE (R11.3-05)
    → EVIDENCE_MISSING (R13.2-02) → submit → evidence → human accept → verified (R10.2-12)."""
    g, w1, w2, w3 = ww.group, ww.w1, ww.w2, ww.w3
    start = wire.head()
    seen: list[str] = []

    def ok(persona: Any, type_: str, body: dict[str, Any], status: int = 201) -> dict[str, Any]:
        answer = wire.ok(persona, type_, body, status)
        seen.extend(event["type"] for event in answer["events"])
        return answer

    ok(ww.olga, "mission.create", mission_create_body("m-1"))
    ok(w2, "work.propose", {"proposal": "p-1", "title": "Summarise November"})
    gated = contract(risk=approval_risk(2))
    authorize = authorize_body("wi-1", "m-1", contract=gated, proposal="p-1")
    assert ok(ww.cora, "work.authorize", authorize)["result"] == {
        "work_item": "wi-1",
        "revision": 1,
    }
    assert wire.item("wi-1")["state"] == "open"

    # R10.1-02: an essential question is raised in the conversation and answered
    question = {"work_item": "wi-1", "text": "Which timezone?", "essential": True}
    asked = ok(w2, "work.message", question)["result"]["message"]
    answer = {"work_item": "wi-1", "text": "UTC", "in_reply_to": asked}
    ok(w1, "work.message", answer)

    # R10.3-04, R10.3-05, R10.3-06: urgent offer to two; the first acceptance wins
    urgent = offer_body("wi-1", [("o-w2", w2, far()), ("o-w3", w3, far())], mode="urgent")
    assert ok(w1, "work.offer", urgent)["result"]["revision"] == 1
    offered = wire.item("wi-1")
    assert (offered["state"], offered["owner"]) == ("offered", None)
    accept = {"work_item": "wi-1", "offer": "o-w3", "contract_revision": 1}
    accepted = ok(w3, "work.accept_offer", accept)
    assert [e["type"] for e in accepted["events"]] == [
        "work.offer_accepted",
        "work.offer_withdrawn",
    ]
    epoch = accepted["result"]["ownership_epoch"]
    assert epoch == 1
    deadline = parse_timestamp(accepted["result"]["start_deadline"])  # R11.3-02
    assert deadline > datetime.now(UTC)
    loser = {"work_item": "wi-1", "offer": "o-w2", "contract_revision": 1}
    wire.refused(w2, "work.accept_offer", loser, 409, "OFFER_WITHDRAWN", "R10.3-06")
    queued = wire.item("wi-1")
    assert (queued["state"], queued["owner"], queued["ownership_epoch"]) == (
        "queued",
        w3.principal,
        1,
    )
    assert {o["offer"]: o["status"] for o in queued["offers"]} == {
        "o-w2": "withdrawn",
        "o-w3": "accepted",
    }

    # R10.1-01(i), R10.2-06: two distinct human mission_owners, neither the authoriser
    start_body = {"work_item": "wi-1", "ownership_epoch": epoch}
    wire.refused(w3, "work.start", start_body, 403, "APPROVAL_REQUIRED", "R10.1-01")
    grant = {"work_item": "wi-1", "contract_revision": 1, "comment": "go"}
    wire.refused(ww.cora, "approval.grant_execution", grant, 403, "SELF_APPROVAL", "R10.2-06")
    wire.refused(w2, "approval.grant_execution", grant, 403, "FORBIDDEN")  # the proposer: an agent
    ok(ww.olga, "approval.grant_execution", grant)
    wire.refused(w3, "work.start", start_body, 403, "APPROVAL_REQUIRED", "R10.1-01")
    ok(ww.oscar, "approval.grant_execution", grant)

    # R11.3-03: a lease with an id and an expiry
    first = ok(w3, "work.start", start_body)["result"]
    assert set(first) >= {"lease", "capability_tokens"}
    assert isinstance(first["capability_tokens"], list)
    lease_1 = first["lease"]["lease_id"]
    assert parse_timestamp(first["lease"]["expires_at"]) > datetime.now(UTC)
    assert wire.item("wi-1")["lease"]["lease_id"] == lease_1
    renewed = ok(w3, "lease.renew", {"work_item": "wi-1", "lease_id": lease_1})["result"]
    assert renewed["lease"]["lease_id"] == lease_1
    assert parse_timestamp(renewed["lease"]["expires_at"]) >= parse_timestamp(
        first["lease"]["expires_at"]
    )
    ok(w3, "work.progress", progress_body("wi-1", lease_1))
    usage = {"work_item": "wi-1", "lease_id": lease_1, "usage": {"money": 1.25, "tokens": 1500}}
    ok(w3, "work.usage", usage)
    ok(w3, "work.usage", {**usage, "usage": {"money": 0.5, "tool_calls": 3}})
    used = wire.item("wi-1")["budgets"]["used"]
    assert used == {"money": 1.75, "tokens": 1500, "tool_calls": 3}
    assert all(_is_number(v) for v in used.values())

    # R10.2-08: a checkpoint releases execution; the next start is a new lease
    ok(w3, "work.checkpoint", checkpoint_body("wi-1", lease_1))
    assert wire.item("wi-1")["state"] == "queued"
    assert wire.item("wi-1")["owner"] == w3.principal
    lease_2 = ok(w3, "work.start", start_body)["result"]["lease"]["lease_id"]
    assert lease_2 != lease_1

    # R11.3-05: a delayed command with the earlier lease id, same ownership epoch
    stale = {"work_item": "wi-1", "lease_id": lease_1}
    wire.refused(w3, "lease.renew", stale, 409, "STALE_LEASE", "R11.3-05")
    wire.refused(
        w3, "work.progress", progress_body("wi-1", lease_1), 409, "STALE_LEASE", "R11.3-05"
    )
    wire.refused(w3, "work.checkpoint", checkpoint_body("wi-1", lease_1), 409, "STALE_LEASE")

    # R13.2-02: evidence for every acceptance criterion
    submit = submission(wire, w3, "wi-1", lease_2, [])
    partial = {**submit, "evidence": [evidence("c1", w3)]}
    missing = wire.refused(w3, "work.submit", partial, 409, "EVIDENCE_MISSING", "R13.2-02")
    assert missing["details"]["missing"] == ["c2"]
    none = wire.refused(w3, "work.submit", {**submit, "evidence": []}, 409, "EVIDENCE_MISSING")
    assert none["details"]["missing"] == ["c1", "c2"]
    wire.refused(w3, "work.submit", {**partial, "lease_id": lease_1}, 409, "STALE_LEASE")
    full = {**submit, "evidence": [evidence("c1", w3), evidence("c2", w3, method="human_review")]}
    ok(w3, "work.submit", full)
    assert wire.item("wi-1")["state"] == "submitted"

    # R13.2-04: a reviewer's evidence is judged by its criterion's method (c1: deterministic);
    # c2 is human_review, which only the mission owner's acceptance below settles
    reviewed = {"work_item": "wi-1", **evidence("c1", ww.rex)}
    ok(ww.rex, "evidence.record", reviewed)
    # wire§9: a human_review criterion is accepted by a human mission_owner only
    accept_result = {"work_item": "wi-1", "review": review("c1", "c2")}
    wire.refused(w1, "work.accept_result", accept_result, 403, "FORBIDDEN", "R13.2-03")
    # R13.2-03: acceptance waits for the authority's own checks (issue 34)
    pending = wire.refused(ww.olga, "work.accept_result", accept_result, 409, "CHECKS_PENDING")
    assert pending["details"] == {"pending": ["authority:integrity"]}
    checked(ww.group, "wi-1")
    seen.append("evidence.recorded")
    ok(ww.olga, "work.accept_result", accept_result)
    final = wire.item("wi-1")
    assert (final["state"], final["owner"], final["ownership_epoch"]) == (
        "verified",
        w3.principal,
        1,
    )

    # wire§6: exactly these events, in order, with consecutive sequences from the start
    events = wire.events(after=start)
    assert [e["type"] for e in events] == seen == [
        "mission.created", "work.proposed", "work.authorized", "work.message_posted",
        "work.message_posted", "work.offered", "work.offer_accepted", "work.offer_withdrawn",
        "approval.execution_granted", "approval.execution_granted", "work.started",
        "lease.renewed", "work.progress_reported", "work.usage_recorded", "work.usage_recorded",
        "work.checkpointed", "work.started", "work.submitted", "evidence.recorded",
        "evidence.recorded", "work.result_accepted",
    ]  # fmt: skip
    assert [e["sequence"] for e in events] == list(range(start + 1, start + 1 + len(events)))
    assert all(e["group"] == g for e in events)
    assert events[-1]["actor"] == ww.olga.principal
    assert wire.head() == start + len(events)


def test_an_unanswered_essential_question_blocks_acceptance(wire: Wire, ww: WorkWorld) -> None:
    """R10.1-02, R10.1-03: while an essential question is open the worker cannot accept."""
    authorized(wire, ww, "wi-q")
    question = {"work_item": "wi-q", "text": "Which reports?", "essential": True}
    asked = wire.ok(ww.w2, "work.message", question)["result"]["message"]
    wire.ok(ww.w1, "work.offer", offer_body("wi-q", [("o1", ww.w2, far())]))
    accept = {"work_item": "wi-q", "offer": "o1", "contract_revision": 1}

    error = wire.refused(ww.w2, "work.accept_offer", accept, 409, "ILLEGAL_TRANSITION", "R10.1-03")
    assert error["details"]["open_questions"] == [asked]
    wire.ok(ww.w1, "work.message", {"work_item": "wi-q", "text": "All", "in_reply_to": asked})
    wire.ok(ww.w2, "work.accept_offer", accept)


# --- the approval gate ---------------------------------------------------------------------


def test_approval_grant_refusals_and_no_carry_over_to_a_new_revision(
    wire: Wire, ww: WorkWorld
) -> None:
    """R10.2-06: grants only from queued; same person twice DUPLICATE_APPROVAL; another revision
    STALE_REVISION; a human proposer is SELF_APPROVAL; an agent is FORBIDDEN (humans only);
    a corrected contract (R10.1-05) needs new grants."""
    wire.ok(ww.olga, "mission.create", mission_create_body("m-1"))
    wire.ok(ww.olga, "work.propose", {"proposal": "p-olga", "title": "Olga asks"})
    body = authorize_body(
        "wi-g", "m-1", contract=contract(risk=approval_risk(1)), proposal="p-olga"
    )
    wire.ok(ww.w1, "work.authorize", body)
    grant = {"work_item": "wi-g", "contract_revision": 1, "comment": "ok"}

    wire.refused(ww.oscar, "approval.grant_execution", grant, 409, "ILLEGAL_TRANSITION", "R10.2-06")
    wire.ok(ww.w1, "work.offer", offer_body("wi-g", [("o1", ww.w2, far())]))
    accept = {"work_item": "wi-g", "offer": "o1", "contract_revision": 1}
    epoch = wire.ok(ww.w2, "work.accept_offer", accept)["result"]["ownership_epoch"]

    wire.refused(ww.olga, "approval.grant_execution", grant, 403, "SELF_APPROVAL", "R10.2-06")
    wire.refused(ww.mo_agent, "approval.grant_execution", grant, 403, "FORBIDDEN", "wire§9")
    stale = {**grant, "contract_revision": 2}
    wire.refused(ww.oscar, "approval.grant_execution", stale, 409, "STALE_REVISION", "R10.1-05")
    assert wire.ok(ww.oscar, "approval.grant_execution", grant)["result"] == {
        "approvals": 1,
        "approvals_required": 1,
    }
    wire.refused(ww.oscar, "approval.grant_execution", grant, 409, "DUPLICATE_APPROVAL", "R10.2-06")
    assert wire.item("wi-g")["approvals"] == [ww.oscar.principal]

    # fail it, then re-offer a corrected contract: revision 2 starts with no approvals
    failure = {"work_item": "wi-g", "evidence": [evidence("c1", ww.w1, verdict="fail")]}
    wire.ok(ww.w1, "work.fail", failure)
    corrected = contract(risk=approval_risk(1), goal="Summarise the incidents of November")
    reoffer = offer_body("wi-g", [("o2", ww.w2, far())], contract=corrected)
    assert wire.ok(ww.w1, "work.offer", reoffer)["result"]["revision"] == 2
    assert wire.item("wi-g")["approvals"] == []
    accept_2 = {"work_item": "wi-g", "offer": "o2", "contract_revision": 2}
    epoch_2 = wire.ok(ww.w2, "work.accept_offer", accept_2)["result"]["ownership_epoch"]
    assert epoch_2 == epoch + 1
    start = {"work_item": "wi-g", "ownership_epoch": epoch_2}
    wire.refused(ww.w2, "work.start", start, 403, "APPROVAL_REQUIRED", "R10.1-01")
    wire.refused(ww.oscar, "approval.grant_execution", grant, 409, "STALE_REVISION")
    wire.ok(ww.oscar, "approval.grant_execution", {**grant, "contract_revision": 2})
    wire.ok(ww.w2, "work.start", start)


# --- 3. offers ---------------------------------------------------------------------------------


def test_sequential_offer_waits_for_the_first_worker_to_reject(wire: Wire, ww: WorkWorld) -> None:
    """R10.3-03: sequential mode offers one worker at a time; R10.3-10: work.reject_offer with
    the structured reason ``capacity`` hands the turn to the next."""
    authorized(wire, ww, "wi-s")
    ranked = [("o-first", ww.w2, far()), ("o-second", ww.w3, far())]
    wire.ok(ww.w1, "work.offer", offer_body("wi-s", ranked, mode="sequential"))
    second = {"work_item": "wi-s", "offer": "o-second", "contract_revision": 1}

    error = wire.refused(ww.w3, "work.accept_offer", second, 409, "ILLEGAL_TRANSITION", "R10.3-03")
    assert error["details"]["ahead"] == ["o-first"]
    # only the offered worker may answer an offer
    wrong = {"work_item": "wi-s", "offer": "o-first", "reason": "capacity", "detail": ""}
    wire.refused(ww.w3, "work.reject_offer", wrong, 403, "FORBIDDEN")
    reject = {**wrong, "detail": "two items running"}
    rejected = wire.ok(ww.w2, "work.reject_offer", reject)
    assert [e["type"] for e in rejected["events"]] == ["work.offer_rejected"]
    assert wire.item("wi-s")["state"] == "offered"

    wire.ok(ww.w3, "work.accept_offer", second)
    offers = {o["offer"]: (o["status"], o["reason"]) for o in wire.item("wi-s")["offers"]}
    assert offers == {"o-first": ("rejected", "capacity"), "o-second": ("accepted", None)}
    assert wire.item("wi-s")["owner"] == ww.w3.principal


def test_sequential_offer_passes_on_once_the_first_offer_expires(wire: Wire, ww: WorkWorld) -> None:
    """R10.3-03, R10.2-05: the next ranked worker may accept once the first offer expired;
    the expired offer is then refused OFFER_EXPIRED."""
    authorized(wire, ww, "wi-s")
    soon = now_text(2.0)  # long enough for the refusal below to come before it, even under load
    ranked = [("o-first", ww.w2, soon), ("o-second", ww.w3, far())]
    wire.ok(ww.w1, "work.offer", offer_body("wi-s", ranked, mode="sequential"))
    second = {"work_item": "wi-s", "offer": "o-second", "contract_revision": 1}
    first = {"work_item": "wi-s", "offer": "o-first", "contract_revision": 1}
    wire.refused(ww.w3, "work.accept_offer", second, 409, "ILLEGAL_TRANSITION", "R10.3-03")

    _sleep_past(soon)
    wire.refused(ww.w2, "work.accept_offer", first, 409, "OFFER_EXPIRED", "R10.2-05")
    wire.ok(ww.w3, "work.accept_offer", second)


def _sleep_past(moment: str) -> None:
    remaining = (parse_timestamp(moment) - datetime.now(UTC)).total_seconds()
    time.sleep(max(0.0, remaining) + 0.05)


def test_expired_offer_appends_nothing_and_changes_no_state(wire: Wire, ww: WorkWorld) -> None:
    """R10.2-05, wire§6: an accept after expires_at is OFFER_EXPIRED; expiry itself appends no
    event and the item stays offered with the offer still open."""
    authorized(wire, ww, "wi-e")
    soon = now_text(1.0)
    wire.ok(ww.w1, "work.offer", offer_body("wi-e", [("o-soon", ww.w2, soon)]))
    head = wire.head()
    before = wire.item("wi-e")

    _sleep_past(soon)
    assert wire.head() == head
    assert wire.item("wi-e") == before
    accept = {"work_item": "wi-e", "offer": "o-soon", "contract_revision": 1}
    error = wire.refused(ww.w2, "work.accept_offer", accept, 409, "OFFER_EXPIRED", "R10.2-05")
    assert error["details"]["expires_at"] == soon
    after = wire.item("wi-e")
    assert (after["state"], after["owner"], after["offers"][0]["status"]) == (
        "offered",
        None,
        "open",
    )


def test_offer_already_past_its_expiry_cannot_be_accepted(wire: Wire, ww: WorkWorld) -> None:
    """R10.2-05: an offer whose expires_at is already past is refused OFFER_EXPIRED."""
    authorized(wire, ww, "wi-e")
    wire.ok(ww.w1, "work.offer", offer_body("wi-e", [("o-past", ww.w2, now_text(-60))]))
    accept = {"work_item": "wi-e", "offer": "o-past", "contract_revision": 1}
    wire.refused(ww.w2, "work.accept_offer", accept, 409, "OFFER_EXPIRED", "R10.2-05")


def test_corrected_contract_raises_the_revision_and_old_acceptances_are_stale(
    wire: Wire, ww: WorkWorld
) -> None:
    """R10.1-05, wire§10: a corrected contract in work.offer raises the revision (result.revision);
    accepting with the old contract_revision is STALE_REVISION; the replaced offer is
    OFFER_WITHDRAWN; the same contract again does not raise it."""
    authorized(wire, ww, "wi-r")
    wire.ok(ww.w1, "work.offer", offer_body("wi-r", [("o1", ww.w2, far())]))
    corrected = contract(goal="Summarise the incident reports of November and October")
    answer = wire.ok(
        ww.w1, "work.offer", offer_body("wi-r", [("o2", ww.w2, far())], contract=corrected)
    )
    assert answer["result"]["revision"] == 2
    document = wire.item("wi-r")
    assert (document["revision"], document["contract"]["goal"]) == (2, corrected["goal"])

    old = {"work_item": "wi-r", "offer": "o2", "contract_revision": 1}
    error = wire.refused(ww.w2, "work.accept_offer", old, 409, "STALE_REVISION", "R10.1-05")
    assert error["details"]["revision"] == 2
    superseded = {"work_item": "wi-r", "offer": "o1", "contract_revision": 2}
    wire.refused(ww.w2, "work.accept_offer", superseded, 409, "OFFER_WITHDRAWN", "R10.3-06")

    same = offer_body("wi-r", [("o3", ww.w2, far())], contract=corrected)
    assert wire.ok(ww.w1, "work.offer", same)["result"]["revision"] == 2
    wire.ok(
        ww.w2, "work.accept_offer", {"work_item": "wi-r", "offer": "o3", "contract_revision": 2}
    )


@pytest.mark.parametrize("reason", ["busy", "Capacity", "other", ""])
def test_reject_reason_outside_the_six_is_malformed(wire: Wire, ww: WorkWorld, reason: str) -> None:
    """R10.3-10, wire§9: capacity/deadline/capability/authorization/dependency/budget only."""
    authorized(wire, ww, "wi-x")
    wire.ok(ww.w1, "work.offer", offer_body("wi-x", [("o1", ww.w2, far())]))
    body = {"work_item": "wi-x", "offer": "o1", "reason": reason, "detail": "no"}
    error = wire.refused(ww.w2, "work.reject_offer", body, 400, "MALFORMED")
    assert error["details"]["path"] == "$.reason"


@pytest.mark.parametrize(
    ("selection_basis", "path"),
    [
        (
            basis(policy_rules={"reasoning": "I thought about it"}),
            "$.selection_basis.policy_rules.reasoning",
        ),
        (
            basis(reliability_evidence=[{"score": 1, "chain_of_thought": "..."}]),
            "$.selection_basis.reliability_evidence[0].chain_of_thought",
        ),
        ({**basis(), "reasoning": "because"}, "$.selection_basis.reasoning"),
    ],
)
def test_selection_basis_with_private_reasoning_is_malformed_naming_the_path(
    wire: Wire, ww: WorkWorld, selection_basis: dict[str, Any], path: str
) -> None:
    """R10.3-12: no private chain-of-thought anywhere in a selection basis (MALFORMED + path)."""
    authorized(wire, ww, "wi-x")
    body = offer_body("wi-x", [("o1", ww.w2, far())], selection_basis=selection_basis)
    error = wire.refused(ww.w1, "work.offer", body, 400, "MALFORMED", "R10.3-12")
    assert error["details"]["path"] == path
    assert wire.item("wi-x")["state"] == "open"


def test_selection_basis_needs_the_six_structured_keys(wire: Wire, ww: WorkWorld) -> None:
    """R10.3-11: a selection basis missing one of its six keys is MALFORMED naming it."""
    authorized(wire, ww, "wi-x")
    partial = basis()
    del partial["expected_cost"]
    body = offer_body("wi-x", [("o1", ww.w2, far())], selection_basis=partial)
    error = wire.refused(ww.w1, "work.offer", body, 400, "MALFORMED")
    assert error["details"]["path"] == "$.selection_basis.expected_cost"


# --- 4. dependencies ----------------------------------------------------------------------------


def test_depends_on_a_future_item_is_allowed_and_a_cycle_is_refused_naming_it(
    wire: Wire, ww: WorkWorld
) -> None:
    """R10.4-02: depends_on may name an item not yet authorised; R10.4-04: a work.authorize
    closing a cycle is DEPENDENCY_CYCLE with details.cycle, appending nothing."""
    authorized(wire, ww, "wi-b", depends_on=["wi-a"])
    authorized(wire, ww, "wi-c", depends_on=["wi-b"])
    body = authorize_body("wi-a", "m-1", depends_on=["wi-c"])

    error = wire.refused(ww.w1, "work.authorize", body, 409, "DEPENDENCY_CYCLE", "R10.4-04")
    assert error["details"]["cycle"] == ["wi-a", "wi-c", "wi-b", "wi-a"]
    selfish = authorize_body("wi-a", "m-1", depends_on=["wi-a"])
    error = wire.refused(ww.w1, "work.authorize", selfish, 409, "DEPENDENCY_CYCLE")
    assert error["details"]["cycle"] == ["wi-a", "wi-a"]
    error_of(get(wire.api, f"/groups/{ww.group}/work-items/wi-a", ww.w1.token), 404, "NOT_FOUND")
    authorized(wire, ww, "wi-a")  # without the back edge it is fine
    assert wire.item("wi-b")["depends_on"] == ["wi-a"]


def test_start_waits_for_verified_dependencies_under_all_verified(
    wire: Wire, ww: WorkWorld
) -> None:
    """R10.4-03: work.start is DEPENDENCY_UNMET until every dependency is verified (offers and
    acceptance are allowed before); a failed dependency does not count under all_verified."""
    machine = contract(acceptance_criteria=machine_criteria())
    epoch = owned(wire, ww, "wi-late", depends_on=["wi-dep", "wi-unborn"])["ownership_epoch"]
    start = {"work_item": "wi-late", "ownership_epoch": epoch}
    error = wire.refused(ww.w2, "work.start", start, 409, "DEPENDENCY_UNMET", "R10.4-03")
    assert error["details"]["unmet"] == ["wi-dep", "wi-unborn"]

    lease = started(wire, ww, "wi-dep", ww.w3, contract=machine)
    wire.ok(ww.w3, "work.submit", submission(wire, ww.w3, "wi-dep", lease, [evidence("c1", ww.w3)]))
    checked(ww.group, "wi-dep")
    wire.ok(ww.w1, "work.accept_result", {"work_item": "wi-dep", "review": review("c1")})
    error = wire.refused(ww.w2, "work.start", start, 409, "DEPENDENCY_UNMET")
    assert error["details"]["unmet"] == ["wi-unborn"]

    authorized(wire, ww, "wi-unborn")
    failure = {"work_item": "wi-unborn", "evidence": [evidence("c1", ww.w1, verdict="fail")]}
    wire.ok(ww.w1, "work.fail", failure)
    error = wire.refused(ww.w2, "work.start", start, 409, "DEPENDENCY_UNMET")
    assert error["details"]["unmet"] == ["wi-unborn"]
    assert wire.item("wi-late")["state"] == "queued"


@pytest.mark.parametrize("ending", ["work.fail", "work.cancel"])
def test_all_terminal_dependency_policy_starts_once_the_dependency_ended(
    wire: Wire, ww: WorkWorld, ending: str
) -> None:
    """R10.4-03, wire§9: under all_terminal, a failed or cancelled dependency satisfies it."""
    authorized(wire, ww, "wi-dep")
    terminal = contract(dependency_policy="all_terminal")
    epoch = owned(wire, ww, "wi-next", depends_on=["wi-dep"], contract=terminal)["ownership_epoch"]
    start = {"work_item": "wi-next", "ownership_epoch": epoch}
    wire.refused(ww.w2, "work.start", start, 409, "DEPENDENCY_UNMET", "R10.4-03")

    if ending == "work.fail":
        body = {"work_item": "wi-dep", "evidence": [evidence("c1", ww.w1, verdict="fail")]}
    else:
        body = {"work_item": "wi-dep", "reason": "superseded"}
    wire.ok(ww.w1, ending, body)
    started_ = wire.ok(ww.w2, "work.start", start)
    assert [e["type"] for e in started_["events"]] == ["work.started"]
    assert wire.item("wi-next")["state"] == "active"
