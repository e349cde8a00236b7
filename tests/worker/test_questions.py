"""Questions before work in the Worker (R10.1-02, R10.1-03, R10.1-04), against the in-process
authority that decides every command with the real protocol core.

A handler declares its essential questions about a contract (``@asks``); the worker asks them
in the item's conversation before it accepts, holds the acceptance while any is open, never
answers them itself, accepts once the coordinator or a mission owner has settled them, and
hands the settled answers to the handler.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from missionweave.protocol import states as S
from missionweave.worker.handlers import Progress, TaskResult
from missionweave.worker.questions import asks, question_id, questions_of
from missionweave.worker.slots import SlotContext
from tests.protocol.work_scenarios import (
    COORDINATOR,
    MISSION_OWNER,
    OTHER_WORKER,
    WORKER,
    work_contract,
)
from tests.worker.fake_work import result_for
from tests.worker.runtime_world import World, world

ALPHA = "g-alpha"
QUESTION = "Which month do the reports cover?"


def which_month(contract: Mapping[str, Any]) -> Sequence[str]:
    """Asks unless the goal names the month (a corrected contract answers it)."""
    return [] if "November" in contract["goal"] else [QUESTION]


class Curious:
    """A handler with an essential question; it records the answers its context carried."""

    def __init__(self) -> None:
        self.answers: list[Any] = []

    def __call__(self, ctx: SlotContext, progress: Progress) -> TaskResult:
        self.answers.append(ctx.mission_context["answers"])
        return result_for(ctx.mission_context, 1)

    questions = staticmethod(which_month)


def asked_id(w: World, item: str = "wi-q") -> str:
    revision = w.authority.item(ALPHA, item)["revision"]
    return question_id(WORKER, ALPHA, item, revision, QUESTION)


def offered(w: World, item: str = "wi-q", **contract: Any) -> None:
    w.authority.story(ALPHA, item, goal="Summarise the incident reports", **contract)
    w.authority.offer(ALPHA, item)


def settle(w: World, by: str, item: str = "wi-q") -> None:
    w.authority.do(ALPHA, item, "work.message", actor=by, in_reply_to=asked_id(w, item))


def idle(w: World, ticks: int = 15) -> None:
    for _ in range(ticks):
        w.tick()


def test_the_worker_asks_first_and_accepts_only_once_the_coordinator_answers(
    tmp_path: Path,
) -> None:
    """R10.1-02, R10.1-03, R10.1-04: the question is one essential ``work.message`` whose id
    is derived from the item, its revision and the text; no acceptance is sent while it is
    open; the worker never replies to it; once the coordinator has, the offer is accepted
    and the handler reads the answer in its mission context."""
    handler = Curious()
    with world(tmp_path, handlers={"text.summarise": handler}) as w:
        offered(w)
        w.until(lambda: w.authority.item(ALPHA, "wi-q")["open_questions"] != [])
        idle(w)
        (asked,) = w.sent("work.message")
        assert asked.body == {"work_item": "wi-q", "text": QUESTION, "essential": True}
        assert asked.command_id == asked_id(w)
        assert w.authority.item(ALPHA, "wi-q")["open_questions"] == [asked_id(w)]
        assert w.sent("work.accept_offer") == []

        settle(w, COORDINATOR)
        w.until(lambda: w.state(ALPHA, "wi-q") == S.SUBMITTED)
        assert len(w.sent("work.accept_offer")) == 1
        assert len(w.sent("work.message")) == 1  # it asked; it never answered itself
        [answers] = handler.answers
        assert [dict(answer) for answer in answers] == [
            {"question": QUESTION, "answer": "Which reports count as November?", "by": COORDINATOR}
        ]


def test_another_workers_reply_keeps_the_offer_waiting_until_a_mission_owner_answers(
    tmp_path: Path,
) -> None:
    """R10.1-04: another worker's reply is kept but settles nothing, so the worker still
    waits; a mission owner's reply settles it."""
    with world(tmp_path, handlers={"text.summarise": Curious()}) as w:
        offered(w)
        w.until(lambda: w.authority.item(ALPHA, "wi-q")["open_questions"] != [])
        settle(w, OTHER_WORKER)
        idle(w)
        assert w.sent("work.accept_offer") == []
        settle(w, MISSION_OWNER)
        w.until(lambda: w.state(ALPHA, "wi-q") == S.SUBMITTED)


def test_a_corrected_contract_that_answers_the_question_is_accepted_without_asking_again(
    tmp_path: Path,
) -> None:
    """R10.1-04, R10.1-05: the coordinator corrects the contract instead of answering; the
    new revision clears the open question and the handler has nothing to ask about it."""
    with world(tmp_path, handlers={"text.summarise": Curious()}) as w:
        offered(w)
        w.until(lambda: w.authority.item(ALPHA, "wi-q")["open_questions"] != [])
        corrected = work_contract(goal="Summarise the November incident reports")
        w.authority.offer(ALPHA, "wi-q", contract=corrected)
        w.until(lambda: w.state(ALPHA, "wi-q") == S.SUBMITTED)
        assert len(w.sent("work.message")) == 1
        assert w.authority.item(ALPHA, "wi-q")["revision"] == 2


def test_a_restarted_worker_asks_the_same_question_as_the_same_command(tmp_path: Path) -> None:
    """wire.md §3 step 5: the next run, which remembers nothing of what it asked, asks again
    with the same command id, which the authority answers as a replay — one question in the
    log — and it still waits for the answer before it accepts."""
    with world(tmp_path, handlers={"text.summarise": Curious()}) as w:
        offered(w)
        w.until(lambda: w.authority.item(ALPHA, "wi-q")["open_questions"] != [])
        w.worker.stop()
        assert w.worker.shutdown()
        again = w.restart({"text.summarise": Curious()})
        try:
            for _ in range(15):
                again.tick()
            # the replay is answered without being recorded again (nor listed in ``sent``)
            assert [sent.command_id for sent in w.sent("work.message")] == [asked_id(w)]
            assert w.authority.item(ALPHA, "wi-q")["messages"] == 1
            assert w.sent("work.accept_offer") == []
            settle(w, COORDINATOR)
            for _ in range(400):
                again.tick()
                if w.state(ALPHA, "wi-q") == S.SUBMITTED:
                    break
            assert w.state(ALPHA, "wi-q") == S.SUBMITTED
        finally:
            again.stop()
            assert again.shutdown()
        assert again.errors == []


def test_nothing_is_asked_about_an_offer_the_worker_would_refuse(tmp_path: Path) -> None:
    """R10.3-09: a question about work it cannot honour is noise; the offer is rejected."""
    with world(tmp_path, handlers={"text.summarise": Curious()}) as w:
        offered(w, capabilities=[{"id": "image.render", "version": "1"}])
        w.until(lambda: len(w.sent("work.reject_offer")) == 1)
        assert w.sent("work.message") == []


def test_a_handlers_questions_are_texts_each_asked_once() -> None:
    """The hook's answer is cleaned up (stripped, each once); anything but text is a bug."""

    @asks(lambda contract: ["  Which month? ", "Which month?", "Which region?"])
    def handler(ctx: SlotContext, progress: Progress) -> TaskResult:
        raise AssertionError("not run")

    assert questions_of(handler, {}) == ("Which month?", "Which region?")
    assert questions_of(result_for, {}) == ()
    with pytest.raises(TypeError):
        questions_of(asks(lambda contract: [""])(handler), {})
