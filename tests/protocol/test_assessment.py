"""The review of a submission as the authority keeps it, decided without a database
(R13.2-01, R13.2-03, R13.2-04, R11.5-02)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from missionweave.protocol import states as S
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.identifiers import AUTHORITY
from missionweave.protocol.memberships import Membership, membership_key
from missionweave.protocol.work.assessment import INTEGRITY
from missionweave.protocol.work.checks import LEASE_TTL

from .deciders import NOW
from .work_scenarios import (
    COORDINATOR,
    MISSION_OWNER,
    ROLES,
    WORKER,
    Call,
    WorkStory,
    evidence,
    story_in,
    work_contract,
)

REVIEWER = "agent:r1"
CHECKED = [
    {"id": "c1", "description": "Counts", "method": "deterministic", "evidence": ["test_result"],
     "checks": [{"check": "text_contains", "output": "summary", "text": "report"}]},
    {"id": "c2", "description": "Neutral", "method": "agent_review", "evidence": ["review"]},
    {"id": "c3", "description": "Accurate", "method": "human_review", "evidence": ["review"]},
]  # fmt: skip


def submitted() -> WorkStory:
    story = story_in(
        S.SUBMITTED, contract=work_contract(acceptance_criteria=CHECKED), checked=False
    )
    story.driver.scenario.state[membership_key(REVIEWER)] = Membership(
        REVIEWER, ("reviewer",), 1, True
    )
    return story


def review_of(story: WorkStory) -> dict[str, Any]:
    item = story.view()
    assert item is not None
    return item["review"]


def authority_evidence(story: WorkStory, criterion: str, verdict: str) -> Call:
    body = {
        "work_item": story.item,
        "submission": review_of(story)["submission"],
        **evidence(criterion, AUTHORITY, verdict=verdict),
        "artifacts": [],
    }
    return Call("evidence.record", AUTHORITY, body)


#: roles beside the stories' own (the authority is no member; the reviewer agent)
EXTRA_ROLES = {AUTHORITY: frozenset(), REVIEWER: frozenset({"reviewer"})}


def decide(story: WorkStory, call: Call) -> Any:
    """Decide ``call`` as the write path would for its actor's roles."""
    scenario = story.driver.scenario
    roles = EXTRA_ROLES.get(call.actor, ROLES.get(call.actor, frozenset()))
    return scenario.when(call.type, call.body, actor=call.actor, roles=roles)


def run(story: WorkStory, call: Call) -> None:
    story.driver.scenario.then(decide(story, call), actor=call.actor)


def test_a_submission_opens_a_review_owing_integrity_then_the_declared_checks() -> None:
    """R13.2-03 steps 1-2: the authority owes integrity first, then each deterministic
    criterion with checks; a criterion with only the worker's claim is not a pass
    (R13.2-01)."""
    review = review_of(submitted())
    assert review["pending_checks"] == [INTEGRITY, "c1"]
    assert review["criteria"]["c1"]["status"] == "checking"
    assert review["criteria"]["c3"]["status"] == "claimed"


def test_authority_evidence_settles_its_check_and_an_independent_fail_wins() -> None:
    """R13.2-03 step 4: evidence is combined per criterion; the authority's fail beats the
    worker's pass."""
    story = submitted()
    run(story, authority_evidence(story, INTEGRITY, "pass"))
    run(story, authority_evidence(story, "c1", "fail"))
    review = review_of(story)
    assert review["pending_checks"] == []
    assert review["criteria"][INTEGRITY]["status"] == "pass"
    assert review["criteria"]["c1"]["status"] == "fail"


def test_a_reviewer_is_asked_for_agent_review_criteria_and_its_evidence_answers() -> None:
    """R13.2-03 step 3: review.requested names the reviewer; its evidence.record answers."""
    story = submitted()
    body = {"work_item": story.item, "reviewer": REVIEWER, "criteria": ["c2"]}
    story.run(Call("review.request", COORDINATOR, body))
    assert review_of(story)["criteria"]["c2"]["status"] == "awaiting_review"
    answer = {"work_item": story.item, **evidence("c2", REVIEWER, method="agent_review")}
    run(story, Call("evidence.record", REVIEWER, answer))
    review = review_of(story)
    assert review["requests"][0]["answered"] == ["c2"]
    assert review["criteria"]["c2"]["status"] == "pass"


@pytest.mark.parametrize("criteria", [["c1"], ["c3"], ["nope"]])
def test_only_agent_review_criteria_are_asked_of_a_reviewer(criteria: list[str]) -> None:
    """R13.2-03 step 3 is for semantic or qualitative criteria judged by agents."""
    story = submitted()
    body = {"work_item": story.item, "reviewer": REVIEWER, "criteria": criteria}
    with pytest.raises(ProtocolError) as caught:
        story.driver.decide(Call("review.request", COORDINATOR, body))
    assert caught.value.code is ErrorCode.MALFORMED


def test_evidence_has_its_senders_producer_and_its_criterions_method() -> None:
    """R13.2-04: the producer is the sender; the method is the criterion's."""
    story = submitted()
    for changes, path in (
        ({"producer": MISSION_OWNER}, "$.producer"),
        ({"method": "human_review"}, "$.method"),
    ):
        body = {"work_item": story.item, **evidence("c1", COORDINATOR), **changes}
        with pytest.raises(ProtocolError) as caught:
            story.driver.decide(Call("evidence.record", COORDINATOR, body))
        assert (
            (caught.value.code, caught.value.path_or_details())
            == (
                ErrorCode.MALFORMED,
                path,
            )
            if hasattr(caught.value, "path_or_details")
            else caught.value.code is ErrorCode.MALFORMED
        )


def test_the_owner_never_judges_its_own_item() -> None:
    """R13.2-01: no verdict by the owner on its own item, whatever its roles."""
    story = submitted()
    body = {"work_item": story.item, **evidence("c1", WORKER)}
    with pytest.raises(ProtocolError) as caught:
        decide(story, Call("evidence.record", WORKER, body))
    assert caught.value.code is ErrorCode.SELF_APPROVAL


def test_evidence_for_a_superseded_submission_is_refused() -> None:
    """R13.2-03: a rerun check for an earlier submission is not recorded on a later one."""
    story = submitted()
    call = authority_evidence(story, INTEGRITY, "pass")
    call.body["submission"] = 1
    with pytest.raises(ProtocolError) as caught:
        decide(story, call)
    assert caught.value.code is ErrorCode.ILLEGAL_TRANSITION


def test_a_former_owners_repeated_late_result_is_kept_once() -> None:
    """R11.5-02, bounded: one kept late submission per (former epoch, content)."""
    story = story_in(S.ACTIVE)
    call = story.call("work.submit")
    story.driver.at = NOW + LEASE_TTL + timedelta(minutes=1)
    story.do("work.reassign")
    first = story.run(call)
    assert (first.status, first.types) == (202, ["work.late_result_recorded"])
    again = story.run(call)
    assert (again.status, again.events) == (202, [])
    assert again.result["kept_at"] > 0
    other = Call(call.type, call.actor, {**call.body, "evidence": call.body["evidence"][:1] * 2})
    assert story.run(other).types == ["work.late_result_recorded"]
