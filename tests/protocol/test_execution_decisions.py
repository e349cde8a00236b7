"""The execution approval gate decided both ways: grants and refusals, each kept with its
comment on the WorkItem (R10.2-06, R10.1-01(i), R10.1-05). Pure: no database."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from missionweave.protocol import states as S
from missionweave.protocol.errors import ErrorCode
from missionweave.protocol.work.approvals import APPROVAL_LOG_LIMIT
from missionweave.protocol.work.items import WorkItem, work_item_key
from missionweave.protocol.work.leases import next_eligible_worker

from .test_work_refusals import LAPSED, approval_contract, body, driver_of, move_clock, refused
from .work_scenarios import (
    HUMAN_COORDINATOR_OWNER,
    HUMAN_REVIEWER,
    MISSION_OWNER,
    SECOND_OWNER,
    WORKER,
    WorkStory,
    story_in,
)

REFUSE = "approval.refuse_execution"
GRANT = "approval.grant_execution"


def gated(approvals: int = 2, **story: Any) -> WorkStory:
    """A queued item whose start waits for ``approvals`` grants."""
    told = story_in(S.OFFERED, contract=approval_contract(approvals), **story)
    told.do("work.accept_offer")
    return told


# --- the body -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "path"),
    [
        ({"comment": ""}, "$.comment"),
        ({"comment": "   "}, "$.comment"),
        ({"comment": None}, "$.comment"),
        ({"contract_revision": 0}, "$.contract_revision"),
        ({"contract_revision": True}, "$.contract_revision"),
        ({"work_item": "bad id"}, "$.work_item"),
        ({"reason": "extra"}, "$.reason"),
    ],
)
def test_a_refusal_body_is_checked_and_its_comment_is_required(
    changes: dict[str, Any], path: str
) -> None:
    """R10.2-06, wire§9: a refusal says why — an empty comment is MALFORMED naming
    ``$.comment``; every other field is checked like a grant's."""
    story = gated()
    error = refused(story, body(story.call(REFUSE), **changes), ErrorCode.MALFORMED)
    assert error.details == {"path": path}


def test_a_refusal_never_records_private_reasoning() -> None:
    """R13.2-05: no ``reasoning`` key in what is recorded."""
    story = gated()
    call = body(story.call(REFUSE), reasoning="because")
    error = refused(story, call, ErrorCode.MALFORMED)
    assert error.details == {"path": "$.reasoning"}


def test_a_grant_comment_may_still_be_empty() -> None:
    """wire§9: a grant's comment is optional in substance (the empty string)."""
    story = gated()
    story.run(body(story.call(GRANT), comment=""))
    assert story.view()["approval_log"][0]["comment"] == ""


# --- refusing -------------------------------------------------------------------------------------


def test_a_refusal_keeps_the_item_queued_and_records_who_and_why() -> None:
    """R10.2-06: ``approval.execution_refused`` from ``queued``; the state is unchanged and the
    refusal is kept with its comment, revision, sequence and time."""
    story = gated()
    ran = story.do(REFUSE)
    assert ran.types == ["approval.execution_refused"]
    assert ran.result == {"refused": True, "revision": 1}
    item = story.view()
    assert item["state"] == S.QUEUED
    assert item["approvals"] == []
    refusal = item["refusal"]
    assert refusal["principal"] == MISSION_OWNER
    assert refusal["decision"] == "refused"
    assert refusal["comment"] == "the contract reads customer data it does not need"
    assert refusal["revision"] == 1
    assert isinstance(refusal["sequence"], int)
    assert refusal["recorded_at"].endswith("Z")
    assert item["approval_log"] == [refusal]


def test_start_of_a_refused_revision_is_approval_required_naming_who_and_why() -> None:
    """R10.2-06: even with the quorum granted, a refused revision does not start; the refusal
    names the refuser and the comment."""
    story = gated(approvals=1)
    story.do(GRANT, actor=SECOND_OWNER)
    story.do(REFUSE)
    error = refused(story, story.call("work.start"), ErrorCode.APPROVAL_REQUIRED, "R10.2-06")
    assert error.details == {
        "refused_by": MISSION_OWNER,
        "comment": "the contract reads customer data it does not need",
        "refused_at": story.view()["refusal"]["recorded_at"],
        "revision": 1,
    }
    assert MISSION_OWNER in error.message
    assert "customer data" in error.message


def test_nobody_decides_a_refused_revision_again() -> None:
    """R10.2-06: after a refusal, another person's grant or refusal of that revision is
    ILLEGAL_TRANSITION saying who refused and what comes next."""
    story = gated()
    story.do(REFUSE)
    for command in (GRANT, REFUSE):
        error = refused(
            story, story.call(command, actor=SECOND_OWNER), ErrorCode.ILLEGAL_TRANSITION, "R10.2-06"
        )
        assert "revision 1" in error.message
        assert MISSION_OWNER in error.message
        assert "corrects the contract or cancels" in error.message
        assert error.details["refusal"]["principal"] == MISSION_OWNER
        assert error.details["refused_by"] == MISSION_OWNER


@pytest.mark.parametrize(("first", "second"), [(GRANT, REFUSE), (REFUSE, GRANT), (REFUSE, REFUSE)])
def test_one_decision_per_person_per_revision(first: str, second: str) -> None:
    """R10.2-06: a person who already granted or refused this revision is DUPLICATE_APPROVAL,
    whichever way they try to decide again."""
    story = gated()
    story.do(first)
    error = refused(story, story.call(second), ErrorCode.DUPLICATE_APPROVAL, "R10.2-06")
    assert error.details["decision"] == ("approved" if first == GRANT else "refused")


def test_a_second_decision_after_a_refusal_says_who_refused_why_and_when_once() -> None:
    """R10.2-06, issue 34: the person who refused sees, in the message and the details, who
    refused, why and when — the reason said once, so a screen can put it in words."""
    story = gated()
    story.do(REFUSE)
    refusal = story.view()["refusal"]
    for command in (GRANT, REFUSE):
        error = refused(story, story.call(command), ErrorCode.DUPLICATE_APPROVAL, "R10.2-06")
        assert error.details == {
            "revision": 1,
            "decision": "refused",
            "decided_by": MISSION_OWNER,
            "decided_at": refusal["recorded_at"],
            "comment": refusal["comment"],
            "refused_by": MISSION_OWNER,
            "refused_at": refusal["recorded_at"],
        }
        assert error.message.count(refusal["comment"]) == 1
        assert refusal["recorded_at"] in error.message


def test_a_second_grant_says_when_the_first_was_given() -> None:
    """R10.2-06: a duplicate grant names when the person granted, and their comment."""
    story = gated()
    story.do(GRANT)
    error = refused(story, story.call(GRANT), ErrorCode.DUPLICATE_APPROVAL, "R10.2-06")
    granted = story.view()["approval_log"][-1]
    assert error.details["decision"] == "approved"
    assert error.details["decided_at"] == granted["recorded_at"]
    assert error.details["comment"] == "go ahead"
    assert "refused_by" not in error.details


def test_a_refusal_for_another_revision_is_stale_revision() -> None:
    """R10.1-05: a refusal names the revision it refuses."""
    story = gated()
    error = refused(story, body(story.call(REFUSE), contract_revision=2), ErrorCode.STALE_REVISION)
    assert error.details == {"revision": 1}


def test_the_proposer_the_authorizer_and_the_owner_cannot_refuse() -> None:
    """R10.2-06, R13.2-01: SELF_APPROVAL for whoever asked for the item or owns it."""
    story = gated(proposer=MISSION_OWNER)
    refused(story, story.call(REFUSE), ErrorCode.SELF_APPROVAL, "R10.2-06")
    story = gated(authorizer=HUMAN_COORDINATOR_OWNER)
    refused(story, story.call(REFUSE, actor=HUMAN_COORDINATOR_OWNER), ErrorCode.SELF_APPROVAL)


def test_a_refusal_is_only_from_queued() -> None:
    """R10.2-06, R10.2-22: the table row allows ``queued`` only."""
    story = story_in(S.ACTIVE)
    error = refused(story, story.call(REFUSE), ErrorCode.ILLEGAL_TRANSITION, "R10.2-06")
    assert error.details["allowed_from"] == [S.QUEUED]


def test_a_corrected_contract_clears_the_refusal_like_the_grants() -> None:
    """R10.1-05, R10.2-06: the new revision is decided afresh — the refusal does not carry
    over; the old decisions stay in ``approval_log`` with their revision."""
    story = gated(approvals=1)
    story.do(REFUSE)
    move_clock(story, LAPSED)  # the owner never started: its start deadline has passed
    corrected = approval_contract(1) | {"goal": "Summarise November without customer data"}
    story.do("work.offer", contract=corrected)
    item = story.view()
    assert item["revision"] == 2
    assert item["refusal"] is None
    assert [entry["revision"] for entry in item["approval_log"]] == [1]
    story.do("work.accept_offer")
    story.do(GRANT)  # the same person may decide the new revision
    story.do("work.start")
    assert story.state == S.ACTIVE


def test_re_offering_the_same_contract_is_refused_while_it_is_refused() -> None:
    """R10.2-06, R10.1-05, issue 34: a refused revision waits for a corrected contract or a
    cancel — offering the same contract again is ILLEGAL_TRANSITION naming who refused, why
    and when, whether the start-by time passed or not."""
    for at in (None, LAPSED):
        story = gated(approvals=1)
        story.do(REFUSE)
        if at is not None:
            move_clock(story, at)
        for contract in (None, story.contract):
            error = refused(
                story,
                story.call("work.offer", contract=contract),
                ErrorCode.ILLEGAL_TRANSITION,
                "R10.2-06",
            )
            assert error.details["refused_by"] == MISSION_OWNER
            assert error.details["comment"] == story.view()["refusal"]["comment"]
            assert "corrected contract" in error.message


def test_a_corrected_contract_is_offered_at_once_the_refused_owner_holds_nothing() -> None:
    """R10.2-06, R10.2-03: the owner queued on a refused revision can never start it, so a
    corrected contract is offered without waiting for its start-by time; it fences the
    owner."""
    story = gated(approvals=1)
    story.do(REFUSE)
    corrected = approval_contract(1) | {"goal": "Summarise November without customer data"}
    ran = story.do("work.offer", contract=corrected)
    assert ran.types == ["work.offered"]
    item = story.view()
    assert (item["state"], item["revision"], item["refusal"]) == (S.OFFERED, 2, None)
    assert item["execution_refused"] is None


def test_a_refused_revision_stops_its_start_by_clock() -> None:
    """R10.2-06, R11.3-02, issue 34: after a refusal nothing is due — the start deadline is
    cleared and the sweep's reassignment is ILLEGAL_TRANSITION, long after it would have
    been due; the owner keeps its place until a corrected contract or a cancel."""
    story = gated(approvals=1)
    deadline = story.view()["start_deadline"]
    assert deadline is not None
    story.do(REFUSE)
    item = story.view()
    assert item["start_deadline"] is None
    assert WorkItem.from_dict(item).due() is None
    move_clock(story, LAPSED)
    reassign = story.call("work.reassign")
    error = refused(story, reassign, ErrorCode.ILLEGAL_TRANSITION, "R11.5-01")
    assert error.details["due"] is None
    assert story.view()["owner"] == WORKER
    story.do("work.cancel")
    assert story.state == S.CANCELLED


def test_the_projection_says_the_execution_was_refused_by_whom_why_and_when() -> None:
    """R10.2-06, issue 34: ``execution_refused`` tells a screen who refused, why, when and
    that a corrected contract is what it waits for; null while nothing is refused."""
    story = gated(approvals=1)
    assert story.view()["execution_refused"] is None
    story.do(REFUSE)
    item = story.view()
    assert item["execution_refused"] == {
        "by": MISSION_OWNER,
        "reason": "the contract reads customer data it does not need",
        "at": item["refusal"]["recorded_at"],
        "revision": 1,
        "waits_for": "corrected_contract",
    }


def test_no_worker_accepts_an_offer_of_a_refused_revision() -> None:
    """R10.2-06, issue 34: an offer of a refused revision (one made before the refusal, or a
    reassignment's) is not accepted: APPROVAL_REQUIRED naming who refused, why and when."""
    story = story_in(S.OFFERED, contract=approval_contract(1))
    state = driver_of(story).scenario.state
    item = WorkItem.from_dict(story.view())
    refusal = {
        "principal": MISSION_OWNER, "decision": "refused", "comment": "not this data",
        "revision": 1, "sequence": 1, "recorded_at": "2026-11-30T10:00:00.000000Z",
    }  # fmt: skip
    state[work_item_key(story.item)] = replace(item, refusal=refusal, approval_log=(refusal,))
    error = refused(story, story.call("work.accept_offer"), ErrorCode.APPROVAL_REQUIRED, "R10.2-06")
    assert error.details == {
        "refused_by": MISSION_OWNER,
        "comment": "not this data",
        "refused_at": "2026-11-30T10:00:00.000000Z",
        "revision": 1,
    }


def test_a_refused_items_reassignment_offers_it_to_nobody() -> None:
    """R11.5-01, R10.2-06: when the refused owner loses the item (its membership revoked),
    the reassignment goes back to ``open`` instead of offering the refused revision."""
    story = gated(approvals=1)
    story.do(REFUSE)
    assert next_eligible_worker(WorkItem.from_dict(story.view())) is None


# --- the approval log -----------------------------------------------------------------------------


def test_grants_are_logged_with_their_comments_beside_the_approvals() -> None:
    """R10.2-06: ``approvals`` stays the list of granters; ``approval_log`` keeps each
    decision's comment, revision, sequence and time."""
    story = gated()
    story.run(body(story.call(GRANT), comment="checked the data scope"))
    story.run(body(story.call(GRANT, actor=SECOND_OWNER), comment="fine by me"))
    item = story.view()
    assert item["approvals"] == [MISSION_OWNER, SECOND_OWNER]
    log = item["approval_log"]
    assert [(e["principal"], e["decision"], e["comment"]) for e in log] == [
        (MISSION_OWNER, "granted", "checked the data scope"),
        (SECOND_OWNER, "granted", "fine by me"),
    ]
    assert log[0]["sequence"] < log[1]["sequence"]
    assert item["refusal"] is None


def test_the_approval_log_is_bounded_and_keeps_the_latest() -> None:
    """The projection keeps the latest ``APPROVAL_LOG_LIMIT`` decisions (the log keeps all)."""
    story = gated()
    item = WorkItem.from_dict(story.view())
    entries = tuple(
        {"principal": f"user:p{i}", "decision": "granted", "comment": "", "revision": 1,
         "sequence": i, "recorded_at": "2026-11-30T10:00:00Z"}
        for i in range(APPROVAL_LOG_LIMIT)
    )  # fmt: skip
    state = driver_of(story).scenario.state
    state[work_item_key(story.item)] = replace(item, approval_log=entries)
    story.run(body(story.call(GRANT), comment="the newest"))
    log = story.view()["approval_log"]
    assert len(log) == APPROVAL_LOG_LIMIT
    assert log[0]["principal"] == "user:p1"
    assert log[-1]["comment"] == "the newest"


def test_a_reviewer_who_is_also_a_mission_owner_may_refuse() -> None:
    """wire§9: the role decides (mission_owner, human only), not the other roles held."""
    story = gated()
    story.do(REFUSE, actor=HUMAN_REVIEWER)
    assert story.view()["refusal"]["principal"] == HUMAN_REVIEWER
    assert story.view()["owner"] == WORKER
