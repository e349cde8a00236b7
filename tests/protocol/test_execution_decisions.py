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
        assert "revises the contract or cancels" in error.message
        assert error.details["refusal"]["principal"] == MISSION_OWNER


@pytest.mark.parametrize(("first", "second"), [(GRANT, REFUSE), (REFUSE, GRANT), (REFUSE, REFUSE)])
def test_one_decision_per_person_per_revision(first: str, second: str) -> None:
    """R10.2-06: a person who already granted or refused this revision is DUPLICATE_APPROVAL,
    whichever way they try to decide again."""
    story = gated()
    story.do(first)
    error = refused(story, story.call(second), ErrorCode.DUPLICATE_APPROVAL, "R10.2-06")
    assert error.details["decision"] == ("approved" if first == GRANT else "refused")


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


def test_re_offering_the_same_contract_keeps_the_refusal() -> None:
    """R10.1-05: only a corrected contract is a new revision; the same one stays refused."""
    story = gated(approvals=1)
    story.do(REFUSE)
    move_clock(story, LAPSED)
    story.do("work.offer", contract=story.contract)
    story.do("work.accept_offer")
    refused(story, story.call("work.start"), ErrorCode.APPROVAL_REQUIRED, "R10.2-06")


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
