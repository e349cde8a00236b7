"""What a review decides and what the item keeps of it: a human mission_owner sends a
submission back (``work.fail`` from ``submitted``, R13.2-03 step 5), the accepting and the
failing review stay on the WorkItem, and so does the owner's latest structured progress
(R11.4-01, R11.4-02). Pure: no database."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from missionweave.protocol import states as S
from missionweave.protocol.errors import ErrorCode
from missionweave.protocol.work.items import work_item_key

from .test_work_refusals import body, driver_of, refused
from .work_scenarios import (
    COORDINATOR,
    HUMAN_REVIEWER,
    MISSION_OWNER,
    WORKER,
    Call,
    WorkStory,
    evidence,
    story_in,
)


def owner_sends_back(story: WorkStory, actor: str = MISSION_OWNER, **changes: Any) -> Call:
    """``work.fail`` by a human mission_owner: no lease id, failure evidence."""
    failure = evidence("c2", actor, verdict="fail", method="human_review")
    return Call("work.fail", actor, {"work_item": story.item, "evidence": [failure], **changes})


# --- work.fail by a human mission_owner -----------------------------------------------------------


@pytest.mark.parametrize("actor", [MISSION_OWNER, HUMAN_REVIEWER])
def test_a_human_mission_owner_sends_a_submission_back(actor: str) -> None:
    """R13.2-03 step 5, R10.2-13: ``work.failed`` from ``submitted``, final (no retry), with
    the evidence kept as ``failed_review``."""
    story = story_in(S.SUBMITTED)
    ran = story.run(owner_sends_back(story, actor))
    assert ran.types == ["work.failed"]
    item = story.view()
    assert item["state"] == S.FAILED
    failed = item["failed_review"]
    assert failed["by"] == actor
    assert failed["evidence"] == ran.events[0][1]["evidence"]
    assert failed["recorded_at"].endswith("Z")
    assert isinstance(failed["sequence"], int)


@pytest.mark.parametrize("state", [S.OPEN, S.OFFERED, S.QUEUED, S.ACTIVE, S.BLOCKED])
def test_a_mission_owner_fails_only_a_submission(state: str) -> None:
    """R13.2-03: outside ``submitted`` a mission_owner's failure is ILLEGAL_TRANSITION; the
    coordinator's wider power (R10.2-13) is not the mission owner's."""
    story = story_in(state)
    error = refused(story, owner_sends_back(story), ErrorCode.ILLEGAL_TRANSITION, "R13.2-03")
    assert error.details["allowed_from"] == [S.SUBMITTED]


@pytest.mark.parametrize("state", [S.VERIFIED, S.CANCELLED, S.FAILED])
def test_a_mission_owner_failing_a_finished_item_follows_the_table(state: str) -> None:
    """R10.2-13, R10.2-22: the table's row decides first for the states it excludes."""
    story = story_in(state)
    refused(story, owner_sends_back(story), ErrorCode.ILLEGAL_TRANSITION, "R10.2-13")


def test_a_mission_owner_sending_back_needs_evidence() -> None:
    """R10.2-13: a failure carries evidence (EVIDENCE_MISSING)."""
    story = story_in(S.SUBMITTED)
    refused(story, owner_sends_back(story, evidence=[]), ErrorCode.EVIDENCE_MISSING, "R10.2-13")


def test_an_agent_mission_owner_may_not_send_a_submission_back() -> None:
    """wire§9: sending back a reviewed result is a human's (like accepting a human_review)."""
    story = story_in(S.SUBMITTED)
    error = driver_of(story).scenario.refused(
        "work.fail",
        owner_sends_back(story, "agent:m1").body,
        actor="agent:m1",
        roles=frozenset({"mission_owner"}),
    )
    assert (error.code, error.requirement) == (ErrorCode.FORBIDDEN, "wire§9")


def test_the_owner_who_is_also_a_mission_owner_cannot_send_its_own_work_back() -> None:
    """R13.2-01: the owner does not judge its own work, whatever roles it also holds."""
    story = story_in(S.SUBMITTED)
    scenario = driver_of(story).scenario
    key = work_item_key(story.item)
    scenario.state[key] = replace(scenario.state[key], owner="user:wendy")
    error = scenario.refused(
        "work.fail",
        owner_sends_back(story).body,
        actor="user:wendy",
        roles=frozenset({"worker", "mission_owner"}),
    )
    assert (error.code, error.requirement) == (ErrorCode.SELF_APPROVAL, "R13.2-01")


def test_the_owner_path_keeps_the_wire_precedence() -> None:
    """wire§8: a worker without the coordinator's role is judged as the owner — FORBIDDEN when
    it never owned the item, whatever the state."""
    story = story_in(S.SUBMITTED)
    call = Call("work.fail", "agent:w3", owner_sends_back(story).body)
    refused(story, call, ErrorCode.FORBIDDEN, "wire§9")


def test_the_coordinators_failure_of_a_submission_is_kept_as_the_failed_review() -> None:
    """R10.2-13, R13.2-03: the coordinator's send-back is kept the same way."""
    story = story_in(S.SUBMITTED)
    story.do("work.fail")
    assert story.view()["failed_review"]["by"] == COORDINATOR


def test_a_failure_outside_submitted_or_by_the_missions_end_keeps_no_failed_review() -> None:
    """R10.2-18: a propagated failure judged nothing; neither did one of an active item."""
    story = story_in(S.ACTIVE)
    story.do("work.fail")
    assert story.view()["failed_review"] is None
    story = story_in(S.SUBMITTED)
    story.do("mission.fail")
    assert story.state == S.FAILED
    assert story.view()["failed_review"] is None


# --- the accepted review --------------------------------------------------------------------------


def test_the_accepting_review_is_kept_on_the_item() -> None:
    """R13.2-03 step 5: the mission's final approval lists who accepted, when, the verdicts
    with their notes and the summary."""
    story = story_in(S.SUBMITTED)
    call = story.call("work.accept_result")
    ran = story.run(call)
    accepted = story.view()["accepted_review"]
    assert accepted["by"] == MISSION_OWNER
    assert accepted["verdicts"] == call.body["review"]["verdicts"]
    assert accepted["summary"] == "complete"
    assert accepted["recorded_at"].endswith("Z")
    assert accepted["sequence"] == story.view()["history"][-1]["sequence"]
    assert ran.types == ["work.result_accepted"]


def test_an_item_not_yet_judged_has_no_retained_review() -> None:
    item = story_in(S.SUBMITTED).view()
    assert (item["accepted_review"], item["failed_review"]) == (None, None)


# --- the latest structured progress ---------------------------------------------------------------


def test_the_latest_progress_report_is_kept_without_a_percentage() -> None:
    """R11.4-01, R11.4-02: phase, milestones, next checkpoint, blockers, estimate
    (and evidence refs), with who reported it, its sequence and time; the next report
    replaces it."""
    story = story_in(S.ACTIVE)
    assert story.view()["progress"] is None
    story.do("work.progress")
    first = story.view()["progress"]
    assert first["phase"] == "reading reports"
    assert first["milestones_completed"] == ["collected reports"]
    assert first["next_checkpoint"] == "draft summary"
    assert first["blockers"] == []
    assert set(first["estimate"]) == {"finish_at", "confidence"}
    assert first["evidence_refs"] == []
    assert first["by"] == WORKER
    assert first["recorded_at"].endswith("Z")
    assert not {"percent", "percentage", "lease_id", "work_item"} & set(first)
    call = body(story.call("work.progress"), phase="drafting", blockers=["archive offline"])
    story.run(call)
    latest = story.view()["progress"]
    assert (latest["phase"], latest["blockers"]) == ("drafting", ["archive offline"])
    assert latest["sequence"] > first["sequence"]
