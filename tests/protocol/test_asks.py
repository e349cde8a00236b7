"""Asking named people on the pure core: ``work.ask`` → ``work.asked`` (R10.2-06, R13.2-03;
issue 36 §4). No database.

A coordinator or a mission owner names the people an execution approval or a review waits
for. Only someone the protocol core would let act now may be asked; the ask changes no state,
is kept on the item, and is open until it is answered or what it asked for stops waiting.
"""

from __future__ import annotations

from typing import Any

import pytest

from missionweave.protocol import states as S
from missionweave.protocol.commands import COMMANDS
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.memberships import Membership
from missionweave.protocol.timefmt import format_timestamp
from missionweave.protocol.work.asks import (
    ASK,
    ASK_LOG_LIMIT,
    ASKED,
    approvers,
    asked_of,
    open_asks,
    reviewers,
)
from missionweave.protocol.work.items import WorkItem

from .deciders import NOW
from .test_work_refusals import LAPSED, approval_contract, driver_of, move_clock, refused
from .work_scenarios import (
    COORDINATOR,
    HUMAN_COORDINATOR,
    HUMAN_REVIEWER,
    MISSION_OWNER,
    OTHER_WORKER,
    REVIEWER,
    ROLES,
    SECOND_OWNER,
    WORKER,
    Call,
    WorkStory,
    evidence,
    story_in,
)

GRANT = "approval.grant_execution"
REFUSE = "approval.refuse_execution"
#: a mission owner who is no member of the group
STRANGER = "user:stan"


def members(story: WorkStory, *principals: str) -> None:
    """Grant the group memberships of ``principals`` (their roles as in ``ROLES``)."""
    events = [
        ("membership.granted", {"principal": p, "roles": sorted(ROLES[p]), "epoch": 1})
        for p in principals
    ]
    driver_of(story).scenario.given(*events)


def memberships(*principals: str) -> list[Membership]:
    return [Membership(p, tuple(sorted(ROLES[p])), 1, True) for p in principals]


def gated(approvals: int = 2, **story: Any) -> WorkStory:
    """A queued item whose start waits for ``approvals`` grants, its group's people members."""
    told = story_in(S.OFFERED, contract=approval_contract(approvals), **story)
    told.do("work.accept_offer")
    members(told, MISSION_OWNER, SECOND_OWNER, HUMAN_REVIEWER, WORKER, COORDINATOR, REVIEWER)
    return told


def ask(story: WorkStory, *asked: str, actor: str = MISSION_OWNER, **body: Any) -> Call:
    return Call(
        ASK,
        actor,
        {"work_item": story.item, "for": "execution_approval", "asked": list(asked), **body},
    )


def item_of(story: WorkStory) -> WorkItem:
    view = story.view()
    assert view is not None
    return WorkItem.from_dict(view)


def grant(story: WorkStory, actor: str) -> None:
    story.do(GRANT, actor=actor)


# --- asking for an execution approval -----------------------------------------------------------


def test_a_mission_owner_asks_another_for_the_approval_and_the_item_keeps_who_asked_whom() -> None:
    """R10.2-06: one ``work.asked`` naming the people, the revision and the note; the item
    keeps the ask (by, when) and its state, approvals and owner do not move."""
    story = gated()
    before = story.view()
    ran = story.run(ask(story, SECOND_OWNER, note="the board meets at noon"))

    assert ran.types == [ASKED]
    assert ran.events[0][1] == {
        "work_item": story.item,
        "for": "execution_approval",
        "asked": [SECOND_OWNER],
        "revision": 1,
        "note": "the board meets at noon",
    }
    assert ran.result == {
        "work_item": story.item,
        "for": "execution_approval",
        "asked": [SECOND_OWNER],
    }
    after = story.view()
    for unchanged in ("state", "revision", "owner", "approvals", "start_deadline"):
        assert after[unchanged] == before[unchanged], unchanged
    assert after["asks"] == [
        {
            "for": "execution_approval",
            "asked": [SECOND_OWNER],
            "by": MISSION_OWNER,
            "note": "the board meets at noon",
            "revision": 1,
            "submission": None,
            "sequence": after["history"][-1]["sequence"],
            "recorded_at": format_timestamp(NOW),
        }
    ]


def test_an_ask_is_open_until_the_person_answers_or_the_quorum_is_met() -> None:
    """R10.2-06: ``asked_of`` lists what still waits on a person: gone once they granted,
    and for everyone once the quorum is met."""
    story = gated(approvals=2)
    story.run(ask(story, SECOND_OWNER, HUMAN_REVIEWER, actor=MISSION_OWNER))
    item = item_of(story)
    assert [a["waiting"] for a in open_asks(item)] == [[SECOND_OWNER, HUMAN_REVIEWER]]
    assert len(asked_of(item, SECOND_OWNER)) == 1

    grant(story, SECOND_OWNER)
    item = item_of(story)
    assert asked_of(item, SECOND_OWNER) == []
    assert [a["waiting"] for a in open_asks(item)] == [[HUMAN_REVIEWER]]

    grant(story, MISSION_OWNER)  # the quorum (2) is met: nothing waits on anyone
    assert open_asks(item_of(story)) == []


def test_an_ask_of_an_older_revision_is_not_open_on_a_corrected_contract() -> None:
    """R10.1-05: approvals never carry over to a new revision, and neither does an ask."""
    story = gated()
    story.run(ask(story, SECOND_OWNER))
    story.do(REFUSE, actor=HUMAN_REVIEWER)
    move_clock(story, LAPSED)
    corrected = approval_contract(2) | {"goal": "Summarise November without customer data"}
    story.do("work.offer", contract=corrected)
    story.do("work.accept_offer")
    assert story.view()["revision"] == 2
    assert story.state == S.QUEUED
    assert open_asks(item_of(story)) == []


def test_who_may_still_approve_is_the_protocol_cores_answer() -> None:
    """R10.2-06: of the group's members, the people whose grant would be taken now — not an
    agent, not a member without mission_owner, not who asked for the item, not who decided."""
    story = gated(approvals=2, proposer=SECOND_OWNER)
    group = memberships(
        MISSION_OWNER, SECOND_OWNER, HUMAN_REVIEWER, HUMAN_COORDINATOR, WORKER, REVIEWER
    )
    assert approvers(item_of(story), group) == [MISSION_OWNER, HUMAN_REVIEWER]
    grant(story, MISSION_OWNER)
    assert approvers(item_of(story), group) == [HUMAN_REVIEWER]
    grant(story, HUMAN_REVIEWER)
    assert approvers(item_of(story), group) == []  # the quorum is met


@pytest.mark.parametrize(
    ("setup", "who", "reason"),
    [
        (None, STRANGER, "NOT_A_MEMBER"),
        (None, REVIEWER, "FORBIDDEN"),  # an agent never grants (humans only)
        (None, WORKER, "FORBIDDEN"),  # the owner, holding no mission_owner role
        ("proposed", SECOND_OWNER, "SELF_APPROVAL"),
        ("granted", SECOND_OWNER, "DUPLICATE_APPROVAL"),
    ],
)
def test_asking_someone_who_may_not_grant_is_forbidden_naming_them(
    setup: str | None, who: str, reason: str
) -> None:
    """R10.2-06: FORBIDDEN with details naming the person, the path and the code their own
    grant would get; nothing is appended."""
    story = gated(proposer=SECOND_OWNER) if setup == "proposed" else gated()
    if setup == "granted":
        grant(story, SECOND_OWNER)
    error = refused(story, ask(story, HUMAN_REVIEWER, who), ErrorCode.FORBIDDEN, "R10.2-06")
    assert error.details == {"principal": who, "path": "$.asked[1]", "reason": reason}
    assert who in error.message


def test_one_asks_someone_else() -> None:
    """wire§9: asking oneself is MALFORMED at the name."""
    story = gated()
    error = refused(story, ask(story, MISSION_OWNER), ErrorCode.MALFORMED)
    assert error.details == {"path": "$.asked[0]"}


def test_an_approval_is_asked_only_while_it_waits() -> None:
    """R10.2-06: not before the item is queued, never for an ungated contract, never for a
    refused revision, never past the quorum (ILLEGAL_TRANSITION); a stale revision is
    STALE_REVISION."""
    offered = story_in(S.OFFERED, contract=approval_contract(1))
    members(offered, SECOND_OWNER)
    error = refused(offered, ask(offered, SECOND_OWNER), ErrorCode.ILLEGAL_TRANSITION)
    assert error.details == {"work_item": offered.item, "state": S.OFFERED}

    ungated = story_in(S.QUEUED)
    members(ungated, SECOND_OWNER)
    error = refused(ungated, ask(ungated, SECOND_OWNER), ErrorCode.ILLEGAL_TRANSITION)
    assert error.details["approvals_required"] == 0

    story = gated(approvals=1)
    stale = ask(story, SECOND_OWNER, contract_revision=2)
    assert refused(story, stale, ErrorCode.STALE_REVISION).details == {"revision": 1}
    grant(story, MISSION_OWNER)
    error = refused(
        story, ask(story, SECOND_OWNER, actor=COORDINATOR), ErrorCode.ILLEGAL_TRANSITION
    )
    assert error.details["approvals"] == 1

    refusing = gated()
    refusing.do(REFUSE, actor=MISSION_OWNER)
    error = refused(
        refusing, ask(refusing, SECOND_OWNER, actor=COORDINATOR), ErrorCode.ILLEGAL_TRANSITION
    )
    assert error.details["refused_by"] == MISSION_OWNER


# --- asking for a review --------------------------------------------------------------------------


def review_ask(story: WorkStory, *asked: str, actor: str = COORDINATOR, **body: Any) -> Call:
    return Call(
        ASK, actor, {"work_item": story.item, "for": "review", "asked": list(asked), **body}
    )


def submitted() -> WorkStory:
    story = story_in(S.SUBMITTED)
    members(story, HUMAN_REVIEWER, REVIEWER, WORKER, OTHER_WORKER, MISSION_OWNER)
    return story


def test_the_coordinator_asks_named_reviewers_for_a_review_of_the_submission() -> None:
    """R13.2-03: the event names the submission; the ask stays open until the reviewer
    records evidence on it."""
    story = submitted()
    submission = story.view()["review"]["submission"]
    ran = story.run(review_ask(story, HUMAN_REVIEWER, REVIEWER, submission=submission))
    payload = ran.events[0][1]
    assert payload["for"] == "review"
    assert payload["submission"] == submission
    assert len(asked_of(item_of(story), HUMAN_REVIEWER)) == 1

    verdict = evidence("c2", HUMAN_REVIEWER, method="human_review")
    story.run(Call("evidence.record", HUMAN_REVIEWER, {"work_item": story.item, **verdict}))
    item = item_of(story)
    assert asked_of(item, HUMAN_REVIEWER) == []
    assert len(asked_of(item, REVIEWER)) == 1


def test_who_may_be_asked_for_a_review() -> None:
    """R13.2-03, R13.2-01: members holding a role that judges, never the item's owner."""
    story = submitted()
    group = memberships(HUMAN_REVIEWER, REVIEWER, WORKER, OTHER_WORKER, MISSION_OWNER)
    assert reviewers(item_of(story), group) == [HUMAN_REVIEWER, REVIEWER, MISSION_OWNER]
    error = refused(story, review_ask(story, OTHER_WORKER), ErrorCode.FORBIDDEN, "R13.2-03")
    assert error.details == {"principal": OTHER_WORKER, "path": "$.asked[0]", "reason": "FORBIDDEN"}
    error = refused(story, review_ask(story, STRANGER), ErrorCode.FORBIDDEN)
    assert error.details["reason"] == "NOT_A_MEMBER"


def test_a_review_is_asked_only_of_the_current_submission() -> None:
    """R13.2-03: outside ``submitted``, or for another submission, ILLEGAL_TRANSITION."""
    story = submitted()
    error = refused(
        story, review_ask(story, HUMAN_REVIEWER, submission=1), ErrorCode.ILLEGAL_TRANSITION
    )
    assert "submission" in error.details
    active = story_in(S.ACTIVE)
    members(active, HUMAN_REVIEWER)
    error = refused(active, review_ask(active, HUMAN_REVIEWER), ErrorCode.ILLEGAL_TRANSITION)
    assert error.details == {"work_item": active.item, "state": S.ACTIVE}


# --- the body and who may send it -----------------------------------------------------------------


def malformed_at(document: dict[str, Any]) -> str:
    with pytest.raises(ProtocolError) as caught:
        COMMANDS[ASK].validate(document)
    assert caught.value.code is ErrorCode.MALFORMED, caught.value
    return caught.value.details["path"]


GOOD = {"work_item": "wi-1", "for": "execution_approval", "asked": ["user:mona"]}


@pytest.mark.parametrize(
    ("changes", "path"),
    [
        ({"for": "coffee"}, "$.for"),
        ({"asked": []}, "$.asked"),
        ({"asked": "user:mona"}, "$.asked"),
        ({"asked": [f"user:u{n}" for n in range(21)]}, "$.asked"),
        ({"asked": ["mona"]}, "$.asked[0]"),
        ({"asked": ["user:mona", "user:mona"]}, "$.asked[1]"),
        ({"note": "   "}, "$.note"),
        ({"note": "x" * 1001}, "$.note"),
        ({"contract_revision": 0}, "$.contract_revision"),
        ({"submission": 3}, "$.submission"),
        ({"for": "review", "contract_revision": 1}, "$.contract_revision"),
        ({"why": "x"}, "$.why"),
    ],
)
def test_the_body_is_checked(changes: dict[str, Any], path: str) -> None:
    """wire§9: each bad field is MALFORMED at its path."""
    assert malformed_at({**GOOD, **changes}) == path


def test_who_may_ask() -> None:
    """wire§9: a coordinator or a mission owner, agent or person; not a worker or reviewer."""
    spec = COMMANDS[ASK]
    assert spec.roles == frozenset({"coordinator", "mission_owner"})
    assert not spec.humans_only
    assert not spec.staff_only
    assert not spec.authority_only


def test_the_item_keeps_the_latest_asks_only() -> None:
    """The projection keeps the latest 50 asks (the log keeps every one)."""
    story = gated()
    for _ in range(ASK_LOG_LIMIT + 2):
        story.run(ask(story, SECOND_OWNER))
    kept = story.view()["asks"]
    assert len(kept) == ASK_LOG_LIMIT
    assert kept[-1]["sequence"] == story.view()["history"][-1]["sequence"]
