"""Review reservations: ``review.reserve`` / ``review.release`` on a submitted item (R13.2-03;
the owner never reserves its own review, R13.2-01), and a mission owner ending someone
else's (issue 34). What a running reservation holds is in ``test_review_holds``. Pure: no
database."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from missionweave.protocol import states as S
from missionweave.protocol.errors import ErrorCode
from missionweave.protocol.timefmt import format_timestamp
from missionweave.protocol.work.reservations import RESERVATION_SECONDS

from .deciders import NOW
from .test_work_refusals import body, driver_of, move_clock, refused
from .work_scenarios import (
    COORDINATOR,
    HUMAN_REVIEWER,
    MISSION_OWNER,
    REVIEWER,
    WORKER,
    Call,
    WorkStory,
    story_in,
)

RESERVE = "review.reserve"
RELEASE = "review.release"
LATER = timedelta(seconds=RESERVATION_SECONDS)


def reserve(story: WorkStory, actor: str, **extra: Any) -> Call:
    return Call(RESERVE, actor, {"work_item": story.item, **extra})


def release(story: WorkStory, actor: str, **extra: Any) -> Call:
    return Call(RELEASE, actor, {"work_item": story.item, **extra})


def reservation(story: WorkStory) -> dict[str, Any] | None:
    return story.view()["review"]["reservation"]


def test_a_fresh_submission_has_no_reservation() -> None:
    """R13.2-03: nobody is reviewing a new submission."""
    assert reservation(story_in(S.SUBMITTED)) is None


@pytest.mark.parametrize("actor", [REVIEWER, COORDINATOR, MISSION_OWNER, HUMAN_REVIEWER])
def test_a_reviewer_coordinator_or_mission_owner_reserves_for_ten_minutes(actor: str) -> None:
    """R13.2-03: ``review.reserved`` {work_item, reviewer, expires_at} from the command's time;
    the projection keeps {reviewer, expires_at, sequence}; the state does not move."""
    story = story_in(S.SUBMITTED)
    ran = story.run(reserve(story, actor))
    expires_at = format_timestamp(NOW + LATER)
    assert ran.types == ["review.reserved"]
    payload = ran.events[0][1]
    assert payload["work_item"] == story.item
    assert payload["reviewer"] == actor
    assert payload["expires_at"] == expires_at
    assert payload["submission"] == story.view()["review"]["submission"]
    assert ran.result == {"reservation": {"reviewer": actor, "expires_at": expires_at}}
    held = reservation(story)
    assert held is not None
    assert (held["reviewer"], held["expires_at"]) == (actor, expires_at)
    assert isinstance(held["sequence"], int)
    assert story.state == S.SUBMITTED


def test_someone_elses_running_reservation_is_illegal_transition_naming_the_holder() -> None:
    """R13.2-03: two reviewers do not judge one item at once."""
    story = story_in(S.SUBMITTED)
    story.run(reserve(story, REVIEWER))
    error = refused(story, reserve(story, HUMAN_REVIEWER), ErrorCode.ILLEGAL_TRANSITION)
    assert error.requirement == "R13.2-03"
    assert error.details == {
        "reserved_by": REVIEWER,
        "expires_at": format_timestamp(NOW + LATER),
    }


def test_the_holder_reserving_again_extends_it() -> None:
    """R13.2-03: the holder's new reservation runs from the new command's time."""
    story = story_in(S.SUBMITTED)
    story.run(reserve(story, REVIEWER))
    move_clock(story, NOW + timedelta(minutes=8))
    story.run(reserve(story, REVIEWER))
    assert reservation(story)["expires_at"] == format_timestamp(NOW + timedelta(minutes=8) + LATER)


def test_an_expired_reservation_can_be_taken() -> None:
    """R13.2-03: expiry is by itself — at ``expires_at`` someone else may reserve."""
    story = story_in(S.SUBMITTED)
    story.run(reserve(story, REVIEWER))
    move_clock(story, NOW + LATER)
    story.run(reserve(story, HUMAN_REVIEWER))
    assert reservation(story)["reviewer"] == HUMAN_REVIEWER


def test_the_owner_never_reserves_its_own_review() -> None:
    """R13.2-01: SELF_APPROVAL for the item's owner, even one whose roles allow reserving."""
    story = story_in(S.SUBMITTED)
    error = driver_of(story).scenario.refused(
        RESERVE, {"work_item": story.item}, actor=WORKER, roles=frozenset({"worker", "reviewer"})
    )
    assert (error.code, error.requirement) == (ErrorCode.SELF_APPROVAL, "R13.2-01")


@pytest.mark.parametrize("state", [S.QUEUED, S.ACTIVE, S.VERIFIED, S.FAILED])
def test_only_a_submitted_item_is_reserved_or_released(state: str) -> None:
    """R13.2-03: beside the state table (nothing moves), only while ``submitted``."""
    story = story_in(state)
    for call in (reserve(story, REVIEWER), release(story, REVIEWER)):
        error = refused(story, call, ErrorCode.ILLEGAL_TRANSITION, "R13.2-03")
        assert error.details["state"] == state


def test_a_reservation_for_an_earlier_submission_is_refused() -> None:
    """R13.2-03: ``submission`` names the submission the reviewer looked at."""
    story = story_in(S.SUBMITTED)
    current = story.view()["review"]["submission"]
    error = refused(
        story, reserve(story, REVIEWER, submission=current - 1), ErrorCode.ILLEGAL_TRANSITION
    )
    assert error.details == {"submission": current}
    story.run(reserve(story, REVIEWER, submission=current))


@pytest.mark.parametrize(
    ("call_body", "path"),
    [
        ({}, "$.work_item"),
        ({"work_item": "wi-1", "submission": "7"}, "$.submission"),
        ({"work_item": "wi-1", "until": "later"}, "$.until"),
    ],
)
def test_a_reserve_body_is_checked(call_body: dict[str, Any], path: str) -> None:
    """wire§9: MALFORMED naming the field."""
    story = story_in(S.SUBMITTED)
    error = refused(story, Call(RESERVE, REVIEWER, call_body), ErrorCode.MALFORMED)
    assert error.details == {"path": path}
    error = refused(story, body(release(story, REVIEWER), extra=1), ErrorCode.MALFORMED)
    assert error.details == {"path": "$.extra"}


def test_the_holder_releases() -> None:
    """R13.2-03: ``review.released`` {work_item, reviewer}; the reservation is gone and another
    reviewer may take it at once."""
    story = story_in(S.SUBMITTED)
    story.run(reserve(story, REVIEWER))
    ran = story.run(release(story, REVIEWER))
    assert ran.events == [("review.released", {"work_item": story.item, "reviewer": REVIEWER})]
    assert reservation(story) is None
    story.run(reserve(story, HUMAN_REVIEWER))


@pytest.mark.parametrize("actor", [COORDINATOR, REVIEWER])
def test_only_the_holder_or_a_mission_owner_releases_a_running_reservation(actor: str) -> None:
    """R13.2-03: FORBIDDEN for anyone else (an agent, a coordinator, a reviewer), naming the
    holder, even with a reason."""
    story = story_in(S.SUBMITTED)
    story.run(reserve(story, HUMAN_REVIEWER))
    error = refused(story, release(story, actor, reason="stale"), ErrorCode.FORBIDDEN, "R13.2-03")
    assert error.details["reserved_by"] == HUMAN_REVIEWER
    assert reservation(story) is not None


def test_a_mission_owner_ends_someone_elses_reservation_saying_why() -> None:
    """R13.2-03, issue 34: so that nothing stalls, a human mission_owner ends another
    person's running reservation; ``review.released`` records the holder, who ended it and
    why, and the decision is free again."""
    story = story_in(S.SUBMITTED)
    story.run(reserve(story, HUMAN_REVIEWER))
    ran = story.run(release(story, MISSION_OWNER, reason="Rita is away until Monday"))
    assert ran.events == [
        (
            "review.released",
            {
                "work_item": story.item,
                "reviewer": HUMAN_REVIEWER,
                "ended_by": MISSION_OWNER,
                "reason": "Rita is away until Monday",
            },
        )
    ]
    assert reservation(story) is None
    story.do("work.accept_result", actor=MISSION_OWNER)
    assert story.state == S.VERIFIED


@pytest.mark.parametrize("reason", [None, "", "   "])
def test_ending_someone_elses_reservation_says_why(reason: str | None) -> None:
    """R13.2-03, issue 34: without a reason it is MALFORMED at ``$.reason``."""
    story = story_in(S.SUBMITTED)
    story.run(reserve(story, HUMAN_REVIEWER))
    extra = {} if reason is None else {"reason": reason}
    error = refused(story, release(story, MISSION_OWNER, **extra), ErrorCode.MALFORMED)
    assert error.details == {"path": "$.reason"}


@pytest.mark.parametrize("expired", [False, True])
def test_releasing_nothing_is_a_harmless_illegal_transition(expired: bool) -> None:
    """R13.2-03: an absent or expired reservation has nothing to release."""
    story = story_in(S.SUBMITTED)
    if expired:
        story.run(reserve(story, REVIEWER))
        move_clock(story, NOW + LATER)
    error = refused(story, release(story, REVIEWER), ErrorCode.ILLEGAL_TRANSITION, "R13.2-03")
    assert error.details["reservation"] is None


@pytest.mark.parametrize(
    ("command", "holder", "state"),
    [
        ("work.accept_result", MISSION_OWNER, S.VERIFIED),
        ("work.fail", COORDINATOR, S.FAILED),
        ("work.cancel", REVIEWER, S.CANCELLED),
    ],
)
def test_leaving_submitted_clears_the_reservation(command: str, holder: str, state: str) -> None:
    """R13.2-03: a verified, failed or cancelled item is reviewed by nobody — the holder's
    decision ends its reservation; a cancel is never held by one."""
    story = story_in(S.SUBMITTED)
    story.run(reserve(story, holder))
    story.do(command)
    assert story.state == state
    assert reservation(story) is None


def test_a_new_submission_starts_unreserved() -> None:
    """R13.2-03: the reservation was of the previous submission; the new one is nobody's."""
    story = story_in(S.SUBMITTED)
    story.run(reserve(story, COORDINATOR))
    story.do("work.fail")
    story.do("work.offer")
    story.do("work.accept_offer")
    story.do("work.start")
    story.do("work.submit")
    assert story.state == S.SUBMITTED
    assert reservation(story) is None
