"""Essential questions before work (R10.1-02, R10.1-03, R10.1-04), pure: who settles one.

A worker raises an essential ambiguity in the WorkItem's conversation and may not accept the
offer while it is open. Only the item's coordinator or a mission owner settles it — never the
principal who asked. Anyone else's reply is kept in the conversation (it may help) but leaves
the question open: the reply is accepted, not refused, and its event says ``resolves: false``.
"""

from __future__ import annotations

from datetime import timedelta

from missionweave.protocol import states as S
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.work.items import WorkItem, work_item_key

from .deciders import NOW
from .offline_stories import active_story, binding, buffered
from .offline_stories import driver_of as offline_driver
from .work_scenarios import (
    COORDINATOR,
    HUMAN_COORDINATOR_OWNER,
    MISSION_OWNER,
    OTHER_WORKER,
    WORKER,
    PureDriver,
    WorkStory,
    story_in,
)


def _accept_refusal(story: WorkStory) -> ProtocolError | None:
    driver = story.driver
    assert isinstance(driver, PureDriver)
    try:
        driver.decide(story.call("work.accept_offer"))
    except ProtocolError as error:
        return error
    return None


def test_a_worker_cannot_settle_its_own_essential_question_and_then_accept() -> None:
    """R10.1-02, R10.1-03 (issue 35 §5 reproduction): the asker's own reply is kept as a
    message but the question stays open, so the acceptance is still refused."""
    story = story_in(S.OFFERED)
    asked = story.do("work.message", essential=True).result["message"]
    reply = story.do("work.message", actor=WORKER, in_reply_to=asked)

    error = _accept_refusal(story)
    assert error is not None, "the worker accepted after answering its own question"
    assert (error.code, error.requirement) == (ErrorCode.ILLEGAL_TRANSITION, "R10.1-03")
    view = story.view()
    assert view["open_questions"] == [asked]
    assert view["messages"] == 2  # the reply is kept in the conversation
    assert reply.types == ["work.message_posted"]
    assert reply.events[0][1]["resolves"] is False


def test_another_workers_reply_is_kept_but_settles_nothing() -> None:
    """R10.1-04: a worker who did not ask is no coordinator either: its reply stays in the
    conversation and the question stays open."""
    story = story_in(S.OFFERED)
    asked = story.do("work.message", essential=True).result["message"]
    reply = story.do("work.message", actor=OTHER_WORKER, in_reply_to=asked)
    assert reply.events[0][1]["resolves"] is False
    assert story.view()["open_questions"] == [asked]


def test_the_coordinators_reply_settles_the_question_and_the_worker_may_accept() -> None:
    """R10.1-03, R10.1-04: the coordinator answers; the question closes and the acceptance
    goes through."""
    story = story_in(S.OFFERED)
    asked = story.do("work.message", essential=True).result["message"]
    reply = story.do("work.message", actor=COORDINATOR, in_reply_to=asked)
    assert reply.events[0][1]["resolves"] is True
    assert story.view()["open_questions"] == []
    assert story.do("work.accept_offer").types[0] == "work.offer_accepted"


def test_a_mission_owners_reply_settles_the_question() -> None:
    """R10.1-04, R11.1-07: a mission owner speaks for the mission as the coordinator does."""
    story = story_in(S.OFFERED)
    asked = story.do("work.message", essential=True).result["message"]
    story.do("work.message", actor=MISSION_OWNER, in_reply_to=asked)
    assert story.view()["open_questions"] == []
    assert _accept_refusal(story) is None


def test_a_coordinator_who_asked_cannot_settle_its_own_question() -> None:
    """R10.1-04: never the asker, whatever its roles; another mission owner can."""
    story = story_in(S.OFFERED)
    asked = story.do("work.message", actor=HUMAN_COORDINATOR_OWNER, essential=True)
    question = asked.result["message"]
    own = story.do("work.message", actor=HUMAN_COORDINATOR_OWNER, in_reply_to=question)
    assert own.events[0][1]["resolves"] is False
    assert story.view()["open_questions"] == [question]
    assert story.view()["question_askers"] == {question: HUMAN_COORDINATOR_OWNER}
    story.do("work.message", actor=MISSION_OWNER, in_reply_to=question)
    assert story.view()["open_questions"] == []
    assert story.view()["question_askers"] == {}


def test_a_reply_to_something_that_is_not_an_open_question_carries_no_verdict() -> None:
    """A reply to a note (or to a settled question) settles nothing, so it says nothing
    about settling: ``resolves`` appears only on a reply to an open question."""
    story = story_in(S.OFFERED)
    note = story.do("work.message", actor=COORDINATOR).result["message"]
    reply = story.do("work.message", actor=WORKER, in_reply_to=note)
    assert "resolves" not in reply.events[0][1]


def test_a_recorded_reply_without_a_verdict_settles_as_it_always_did() -> None:
    """Replay: a ``work.message_posted`` recorded before the rule carries no ``resolves``;
    folding it again gives the state it gave then (the question closed), so a rebuild of an
    old log equals its projection."""
    story = story_in(S.OFFERED)
    asked = story.do("work.message", essential=True).result["message"]
    driver = story.driver
    assert isinstance(driver, PureDriver)
    driver.scenario.given(
        ("work.message_posted", {"work_item": story.item, "text": "ok", "in_reply_to": asked}),
        actor=WORKER,
    )
    item = driver.scenario.state[work_item_key(story.item)]
    assert isinstance(item, WorkItem)
    assert item.open_questions == ()
    assert item.question_askers == {}


def test_a_buffered_reply_settles_nothing_a_live_one_would_not() -> None:
    """R10.1-04, R11.5-12: the owner's reply buffered while offline and reconciled later is
    judged like a live one: its own question stays open."""
    story = active_story()
    asked = story.do("work.message", essential=True).result["message"]
    offline_driver(story).at = NOW + timedelta(minutes=3)
    ran = story.run(buffered(story, "work.message", binding(story), in_reply_to=asked))
    assert ran.types[-1] == "work.message_posted"
    assert ran.events[-1][1]["resolves"] is False
    assert story.view()["open_questions"] == [asked]
