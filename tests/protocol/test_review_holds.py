"""What holds the decision on a submission (issue 34, R13.2-03), as given/when/then.

Acceptance waits for the authority's own checks: while it owes one, ``work.accept_result`` is
``CHECKS_PENDING`` naming them; once it recorded a ``fail`` for the integrity or a
deterministic criterion it is ``CHECKS_FAILED`` naming them, and so is a ``pass`` given to a
criterion whose check did not pass. A running reservation holds the decision for its holder:
anyone else's accept or fail, and another person's evidence, is ``REVIEW_RESERVED``; the
authority's and agents' evidence stays welcome. The order: role and state, then the
reservation, then pending, then failed checks. Every refusal decides nothing. The screens ask
``acceptance_refusal`` / ``decision_refusal``, which say exactly what the deciders refuse.
Pure: no database.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from missionweave.protocol import states as S
from missionweave.protocol.errors import ErrorCode
from missionweave.protocol.identifiers import AUTHORITY
from missionweave.protocol.timefmt import format_timestamp
from missionweave.protocol.work.assessment import (
    INTEGRITY,
    acceptance_refusal,
    decision_refusal,
)
from missionweave.protocol.work.items import WorkItem
from missionweave.protocol.work.reservations import RESERVATION_SECONDS

from .deciders import NOW
from .test_work_refusals import body, move_clock, refused
from .work_scenarios import (
    COORDINATOR,
    HUMAN_REVIEWER,
    MISSION_OWNER,
    REVIEWER,
    SECOND_OWNER,
    WORKER,
    Call,
    WorkStory,
    evidence,
    story_in,
    work_contract,
)

ACCEPT = "work.accept_result"
FAIL = "work.fail"
RECORD = "evidence.record"
#: a deterministic criterion with checks (the authority owes it) and an agent_review one: an
#: agent coordinator and a person may both accept the result
HELD_CRITERIA = [
    {"id": "c1", "description": "Counts", "method": "deterministic", "evidence": ["test_result"],
     "checks": [{"check": "text_contains", "output": "summary", "text": "report"}]},
    {"id": "c2", "description": "Neutral", "method": "agent_review", "evidence": ["review"]},
]  # fmt: skip
UNTIL = format_timestamp(NOW + timedelta(seconds=RESERVATION_SECONDS))


def submitted(*, checked: bool = False) -> WorkStory:
    """A submission the authority has not checked yet (or has, all passing)."""
    return story_in(
        S.SUBMITTED, contract=work_contract(acceptance_criteria=HELD_CRITERIA), checked=checked
    )


def accept(story: WorkStory, actor: str, verdict: str = "pass") -> Call:
    verdicts = [{"criterion": c, "verdict": verdict, "note": "read"} for c in ("c1", "c2")]
    review = {"verdicts": verdicts, "summary": "complete"}
    return Call(ACCEPT, actor, {"work_item": story.item, "review": review})


def fail(story: WorkStory, actor: str) -> Call:
    failure = evidence("c1", actor, verdict="fail")
    return Call(FAIL, actor, {"work_item": story.item, "evidence": [failure]})


def record(story: WorkStory, actor: str, criterion: str = "c2") -> Call:
    method = "agent_review" if criterion == "c2" else "deterministic"
    return Call(
        RECORD, actor, {"work_item": story.item, **evidence(criterion, actor, method=method)}
    )


def reserve(story: WorkStory, actor: str) -> None:
    story.run(Call("review.reserve", actor, {"work_item": story.item}))


def item_of(story: WorkStory) -> WorkItem:
    view = story.view()
    assert view is not None
    return WorkItem.from_dict(view)


# --- the authority's checks gate the acceptance ---------------------------------------------


@pytest.mark.parametrize("actor", [COORDINATOR, MISSION_OWNER])
def test_accepting_while_the_authority_owes_its_checks_is_checks_pending(actor: str) -> None:
    """R13.2-03 steps 1–2: ``CHECKS_PENDING`` names every check owed, the integrity check as
    ``authority:integrity``; nothing is decided. Once they land as a pass, it is accepted."""
    story = submitted()
    error = refused(story, accept(story, actor), ErrorCode.CHECKS_PENDING, "R13.2-03")
    assert error.details == {"pending": [INTEGRITY, "c1"]}
    story.check(only=(INTEGRITY,))
    error = refused(story, accept(story, actor), ErrorCode.CHECKS_PENDING, "R13.2-03")
    assert error.details == {"pending": ["c1"]}
    story.check()
    story.run(accept(story, actor))
    assert story.state == S.VERIFIED


@pytest.mark.parametrize(
    ("failing", "expected"),
    [((INTEGRITY,), [INTEGRITY]), (("c1",), ["c1"]), ((INTEGRITY, "c1"), [INTEGRITY, "c1"])],
)
def test_accepting_what_a_check_failed_is_checks_failed(
    failing: tuple[str, ...], expected: list[str]
) -> None:
    """R13.2-03: a ``fail`` the authority recorded for the integrity or a deterministic
    criterion refuses the acceptance, naming them; nothing is decided."""
    story = submitted()
    for criterion in failing:
        story.check("fail", only=(criterion,))
    story.check()
    error = refused(story, accept(story, COORDINATOR), ErrorCode.CHECKS_FAILED, "R13.2-03")
    assert error.details == {"failed": expected}


@pytest.mark.parametrize("checks", ["pending", "failed"])
@pytest.mark.parametrize("actor", [COORDINATOR, MISSION_OWNER])
def test_sending_the_item_back_stays_allowed_whatever_the_checks(checks: str, actor: str) -> None:
    """R13.2-03, R10.2-13: the checks hold the acceptance only — ``work.fail`` goes through."""
    story = submitted()
    if checks == "failed":
        story.check("fail")
    story.run(fail(story, actor))
    assert story.state == S.FAILED


@pytest.mark.parametrize("recorded", ["fail", "inconclusive"])
def test_a_pass_that_contradicts_the_authoritys_check_is_checks_failed(recorded: str) -> None:
    """R13.2-03, issue 34: a review never overrides the authority's own check — a ``pass``
    for a criterion whose check did not pass is ``CHECKS_FAILED`` naming it."""
    story = submitted()
    story.check(only=(INTEGRITY,))
    story.check(recorded, only=("c1",))
    error = refused(story, accept(story, MISSION_OWNER), ErrorCode.CHECKS_FAILED, "R13.2-03")
    assert error.details == {"failed": ["c1"]}
    assert recorded in error.message


def test_a_verdict_that_does_not_pass_is_still_refused_as_failing() -> None:
    """R10.2-12: with every check passed, a verdict of ``fail`` is the accepter's own
    judgement: ILLEGAL_TRANSITION as before (fail the item instead)."""
    story = submitted(checked=True)
    error = refused(story, accept(story, COORDINATOR, "fail"), ErrorCode.ILLEGAL_TRANSITION)
    assert error.details == {"failing": ["c1", "c2"]}


# --- a running reservation holds the decision --------------------------------------------------


@pytest.mark.parametrize("other", [COORDINATOR, SECOND_OWNER])
def test_someone_elses_accept_under_a_running_reservation_is_review_reserved(other: str) -> None:
    """R13.2-03, issue 34: an agent's or another person's acceptance waits for the holder;
    ``details`` {reserved_by, expires_at}; nothing is decided; the holder accepts."""
    story = submitted(checked=True)
    reserve(story, MISSION_OWNER)
    error = refused(story, accept(story, other), ErrorCode.REVIEW_RESERVED, "R13.2-03")
    assert error.details == {"reserved_by": MISSION_OWNER, "expires_at": UNTIL}
    story.run(accept(story, MISSION_OWNER))
    assert story.state == S.VERIFIED
    assert story.view()["review"]["reservation"] is None


@pytest.mark.parametrize("other", [COORDINATOR, SECOND_OWNER])
def test_someone_elses_fail_under_a_running_reservation_is_review_reserved(other: str) -> None:
    """R13.2-03, issue 34: sending the item back is a decision too; the holder's ends it."""
    story = submitted(checked=True)
    reserve(story, HUMAN_REVIEWER)
    error = refused(story, fail(story, other), ErrorCode.REVIEW_RESERVED, "R13.2-03")
    assert error.details == {"reserved_by": HUMAN_REVIEWER, "expires_at": UNTIL}
    story.run(fail(story, HUMAN_REVIEWER))
    assert story.state == S.FAILED


def test_another_persons_evidence_waits_for_the_holder() -> None:
    """R13.2-03, issue 34: a person's evidence is a judgement: REVIEW_RESERVED for anyone but
    the holder; the holder records its own."""
    story = submitted(checked=True)
    reserve(story, HUMAN_REVIEWER)
    error = refused(story, record(story, MISSION_OWNER), ErrorCode.REVIEW_RESERVED, "R13.2-03")
    assert error.details == {"reserved_by": HUMAN_REVIEWER, "expires_at": UNTIL}
    story.run(record(story, HUMAN_REVIEWER))


def test_evidence_from_the_authority_and_agents_stays_welcome_under_a_reservation() -> None:
    """R13.2-03, issue 34: the authority's checks and an agent's review are input to the
    holder's judgement, not a decision: recorded while someone holds the reservation."""
    story = submitted()
    reserve(story, MISSION_OWNER)
    story.check()
    story.run(record(story, REVIEWER))
    story.run(record(story, COORDINATOR))
    criteria = story.view()["review"]["criteria"]
    assert criteria[INTEGRITY]["status"] == "pass"
    assert [e["producer"] for e in criteria["c2"]["evidence"]][-2:] == [REVIEWER, COORDINATOR]


def test_an_expired_reservation_holds_nothing() -> None:
    """R13.2-03: at ``expires_at`` the reservation has run out by itself."""
    story = submitted(checked=True)
    reserve(story, MISSION_OWNER)
    move_clock(story, NOW + timedelta(seconds=RESERVATION_SECONDS - 1))
    refused(story, accept(story, COORDINATOR), ErrorCode.REVIEW_RESERVED)
    move_clock(story, NOW + timedelta(seconds=RESERVATION_SECONDS))
    story.run(accept(story, COORDINATOR))
    assert story.state == S.VERIFIED


def test_a_cancel_is_not_held_by_a_reservation() -> None:
    """wire§9: cancelling the item is no review decision; it clears the reservation."""
    story = submitted(checked=True)
    reserve(story, MISSION_OWNER)
    story.do("work.cancel")
    assert story.state == S.CANCELLED


# --- which refusal wins ---------------------------------------------------------------------------


def test_the_reservation_wins_over_pending_checks_and_pending_over_failed() -> None:
    """Issue 34 precedence: REVIEW_RESERVED, then CHECKS_PENDING, then CHECKS_FAILED."""
    story = submitted()
    story.check("fail", only=(INTEGRITY,))  # failed, and c1 still owed
    reserve(story, MISSION_OWNER)
    refused(story, accept(story, COORDINATOR), ErrorCode.REVIEW_RESERVED)
    error = refused(story, accept(story, MISSION_OWNER), ErrorCode.CHECKS_PENDING)
    assert error.details == {"pending": ["c1"]}
    story.check()
    error = refused(story, accept(story, MISSION_OWNER), ErrorCode.CHECKS_FAILED)
    assert error.details == {"failed": [INTEGRITY]}


def test_the_role_and_state_checks_come_first() -> None:
    """Issue 34 precedence: the owner's SELF_APPROVAL, a malformed review's EVIDENCE_MISSING
    comes after; a verified item is ILLEGAL_TRANSITION whatever the checks."""
    story = submitted()
    reserve(story, MISSION_OWNER)
    owner_accepts = accept(story, WORKER)
    error = story.driver.scenario.refused(  # type: ignore[attr-defined]
        ACCEPT, owner_accepts.body, actor=WORKER, roles=frozenset({"coordinator"})
    )
    assert error.code is ErrorCode.SELF_APPROVAL
    story.check()
    incomplete = body(accept(story, MISSION_OWNER), review={"verdicts": [], "summary": ""})
    refused(story, incomplete, ErrorCode.EVIDENCE_MISSING)
    story.run(accept(story, MISSION_OWNER))
    refused(story, accept(story, COORDINATOR), ErrorCode.ILLEGAL_TRANSITION, "R10.2-12")


# --- what the screens ask ----------------------------------------------------------------------


def _same(story: WorkStory, call: Call, expected: Any) -> None:
    """``decision_refusal`` answers what the decider refuses (or None when it accepts)."""
    answer = decision_refusal(item_of(story), call.actor, story.driver.now(), call.type)
    if expected is None:
        assert answer is None
        return
    error = refused(story, call, expected)
    assert answer is not None
    assert (answer.code, answer.details, answer.message) == (
        error.code,
        error.details,
        error.message,
    )


def test_the_pure_answers_are_the_deciders_refusals() -> None:
    """Issue 34: ``acceptance_refusal`` and ``decision_refusal`` — what the review screen asks
    to say why a button is disabled — give the very refusal the command would get."""
    story = submitted()
    _same(story, accept(story, COORDINATOR), ErrorCode.CHECKS_PENDING)
    reserve(story, MISSION_OWNER)
    _same(story, accept(story, COORDINATOR), ErrorCode.REVIEW_RESERVED)
    _same(story, fail(story, COORDINATOR), ErrorCode.REVIEW_RESERVED)
    _same(story, record(story, SECOND_OWNER), ErrorCode.REVIEW_RESERVED)
    _same(story, record(story, REVIEWER), None)
    _same(story, fail(story, MISSION_OWNER), None)
    story.check("fail", only=("c1",))
    story.check()
    _same(story, accept(story, MISSION_OWNER), ErrorCode.CHECKS_FAILED)
    item = item_of(story)
    assert acceptance_refusal(item, AUTHORITY, NOW) is not None
    later = NOW + timedelta(seconds=RESERVATION_SECONDS)
    assert acceptance_refusal(item, COORDINATOR, later).code is ErrorCode.CHECKS_FAILED  # type: ignore[union-attr]
    assert decision_refusal(item, COORDINATOR, later, FAIL) is None


def test_nothing_holds_an_item_that_is_not_submitted() -> None:
    """The answers are about a submission: an active or verified item has none."""
    story = story_in(S.ACTIVE)
    item = item_of(story)
    for command in (ACCEPT, FAIL, RECORD):
        assert decision_refusal(item, MISSION_OWNER, NOW, command) is None
