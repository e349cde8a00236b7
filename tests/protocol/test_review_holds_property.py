"""Property: no interleaving of agent and person decisions accepts a submission while someone
else's reservation runs, or while a check is owed or failed (issue 34, R13.2-03), decided
purely.

A Hypothesis state machine plays one WorkItem through many submissions while people
(``olga``, ``mona``, ``rita``) and agents (the coordinator ``w1``, the reviewer ``r1``)
reserve and release its review (a mission owner ending someone else's, with or without a
reason), accept it, send it back, record evidence; the authority's checks land as ``pass``,
``fail`` or ``inconclusive``, in any order; time passes past a reservation's expiry; a failed
item is offered, started and submitted again.

The test keeps its own record, written from the events the decisions appended (never from
``assessment``): the state, who holds the reservation until when, which checks the authority
still owes and what it recorded. Against it:

* **safety** — ``work.result_accepted`` is appended only when, at that moment, nobody but its
  sender held a running reservation, no check was owed and none had not passed;
* **precedence** — a refused acceptance is ``REVIEW_RESERVED`` when someone else holds the
  reservation, else ``CHECKS_PENDING`` while a check is owed, else ``CHECKS_FAILED``, with the
  details the record predicts; ``work.fail`` by anyone but the holder and another person's
  evidence are ``REVIEW_RESERVED``; agents' and the authority's evidence is not held;
* **nothing decided on refusal** — the group's sequence does not move;
* **liveness** — what the record says nothing holds is accepted.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from missionweave.protocol import states as S
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.identifiers import AUTHORITY, is_human
from missionweave.protocol.timefmt import parse_timestamp
from missionweave.protocol.work.assessment import INTEGRITY

from .test_review_holds import HELD_CRITERIA, accept, fail, record
from .test_work_refusals import driver_of
from .work_scenarios import (
    COORDINATOR,
    HUMAN_REVIEWER,
    MISSION_OWNER,
    REVIEWER,
    SECOND_OWNER,
    Call,
    Ran,
    WorkStory,
    story_in,
    work_contract,
)

PEOPLE = (MISSION_OWNER, SECOND_OWNER, HUMAN_REVIEWER)
#: who may accept and fail this contract's result (no human_review criterion)
DECIDERS = (COORDINATOR, *PEOPLE)
#: who may reserve and record evidence
REVIEWERS = (*DECIDERS, REVIEWER)
CHECKED = (INTEGRITY, "c1")
OUTCOMES: Counter[str] = Counter()


@dataclass
class Record:
    """What the appended events say, kept by this test."""

    state: str = S.SUBMITTED
    holder: str | None = None
    expires_at: datetime | None = None
    owed: list[str] = field(default_factory=lambda: list(CHECKED))
    #: the authority's verdicts on the current submission, per checked criterion
    verdicts: dict[str, list[str]] = field(default_factory=dict)

    def held_by_other(self, actor: str, now: datetime) -> str | None:
        """The holder of a running reservation, when it is not ``actor``."""
        running = self.state == S.SUBMITTED and self.holder is not None
        if running and self.expires_at is not None and now < self.expires_at:
            return None if self.holder == actor else self.holder
        return None

    def not_passed(self) -> list[str]:
        """Checked criteria whose recorded verdict is not a pass (any fail, else the latest)."""
        return [c for c in CHECKED if c in self.verdicts and self.verdict(c) != "pass"]

    def verdict(self, criterion: str) -> str:
        verdicts = self.verdicts[criterion]
        return "fail" if "fail" in verdicts else verdicts[-1]

    def fold(self, events: list[tuple[str, dict[str, Any]]]) -> None:
        for type_, payload in events:
            if type_ == "review.reserved":
                self.holder = payload["reviewer"]
                self.expires_at = parse_timestamp(payload["expires_at"])
            elif type_ == "review.released":
                self.holder = self.expires_at = None
            elif type_ == "work.result_accepted":
                self.state, self.holder, self.expires_at = S.VERIFIED, None, None
            elif type_ == "work.failed":
                self.state, self.holder, self.expires_at = S.FAILED, None, None
            elif type_ == "work.submitted":
                self.state, self.holder, self.expires_at = S.SUBMITTED, None, None
                self.owed, self.verdicts = list(CHECKED), {}
            elif type_ == "evidence.recorded" and payload["producer"] == AUTHORITY:
                criterion = payload["criterion"]
                if criterion in self.owed:
                    self.owed.remove(criterion)
                self.verdicts.setdefault(criterion, []).append(payload["result"]["verdict"])
            elif type_ in ("work.offered", "work.offer_accepted", "work.started"):
                self.state = {
                    "work.offered": S.OFFERED,
                    "work.offer_accepted": S.QUEUED,
                    "work.started": S.ACTIVE,
                }[type_]


class ReviewHolds(RuleBasedStateMachine):
    story: WorkStory
    record: Record

    @initialize()
    def submit(self) -> None:
        contract = work_contract(acceptance_criteria=HELD_CRITERIA)
        self.story = story_in(S.SUBMITTED, contract=contract, checked=False)
        self.record = Record()

    # --- helpers ---------------------------------------------------------------------------

    @property
    def now(self) -> datetime:
        return self.story.driver.now()

    def attempt(self, call: Call) -> Ran | ProtocolError:
        """Run ``call``; fold what it appended, or check that a refusal appended nothing."""
        before = driver_of(self.story).scenario.sequence
        try:
            ran = self.story.run(call)
        except ProtocolError as refusal:
            outcome: ProtocolError = refusal
        else:
            outcome = None
        if outcome is not None:
            assert driver_of(self.story).scenario.sequence == before, outcome
            OUTCOMES[f"{call.type} {outcome.code.value}"] += 1
            return outcome
        OUTCOMES[f"{call.type} ok"] += 1
        self.record.fold(ran.events)
        return ran

    def expect_reserved(self, outcome: Ran | ProtocolError, holder: str) -> None:
        assert isinstance(outcome, ProtocolError), f"decided under {holder}'s reservation"
        assert outcome.code is ErrorCode.REVIEW_RESERVED, outcome
        assert outcome.details["reserved_by"] == holder
        assert parse_timestamp(outcome.details["expires_at"]) == self.record.expires_at

    # --- people and agents -------------------------------------------------------------------

    @precondition(lambda self: self.record.state == S.SUBMITTED)
    @rule(actor=st.sampled_from(REVIEWERS))
    def reserve(self, actor: str) -> None:
        self.attempt(Call("review.reserve", actor, {"work_item": self.story.item}))

    @precondition(lambda self: self.record.state == S.SUBMITTED)
    @rule(actor=st.sampled_from(REVIEWERS), reason=st.booleans())
    def release(self, actor: str, reason: bool) -> None:
        body = {"work_item": self.story.item}
        if reason:
            body["reason"] = "stale: the reviewer is away"
        holder = self.record.held_by_other(actor, self.now)
        outcome = self.attempt(Call("review.release", actor, body))
        if holder is not None and isinstance(outcome, Ran):
            assert is_human(actor), "an agent ended someone else's reservation"
            assert reason, "someone else's reservation ended without a reason"
            assert outcome.events[0][1]["ended_by"] == actor

    @rule(actor=st.sampled_from(DECIDERS))
    def accept_result(self, actor: str) -> None:
        holder = self.record.held_by_other(actor, self.now)
        owed = list(self.record.owed)
        not_passed = self.record.not_passed()
        submitted = self.record.state == S.SUBMITTED
        outcome = self.attempt(accept(self.story, actor))
        if isinstance(outcome, Ran):
            # safety: nothing held the acceptance at the moment it was decided
            assert submitted
            assert holder is None
            assert not owed
            assert not not_passed
            assert [t for t, _p in outcome.events] == ["work.result_accepted"]
            return
        if not submitted:
            assert outcome.code is ErrorCode.ILLEGAL_TRANSITION, outcome
        elif holder is not None:
            self.expect_reserved(outcome, holder)
        elif owed:
            assert outcome.code is ErrorCode.CHECKS_PENDING, outcome
            assert outcome.details == {"pending": owed}
        else:
            assert outcome.code is ErrorCode.CHECKS_FAILED, outcome
            assert outcome.details == {"failed": not_passed}

    @precondition(lambda self: self.record.state == S.SUBMITTED)
    @rule(actor=st.sampled_from(DECIDERS))
    def send_back(self, actor: str) -> None:
        holder = self.record.held_by_other(actor, self.now)
        submitted = self.record.state == S.SUBMITTED
        outcome = self.attempt(fail(self.story, actor))
        if not submitted:
            assert isinstance(outcome, ProtocolError), "failed outside submitted"
        elif holder is not None:
            self.expect_reserved(outcome, holder)
        else:  # the checks never hold a sending back
            assert isinstance(outcome, Ran), outcome
            assert self.record.state == S.FAILED

    @precondition(lambda self: self.record.state == S.SUBMITTED)
    @rule(actor=st.sampled_from(REVIEWERS))
    def record_evidence(self, actor: str) -> None:
        holder = self.record.held_by_other(actor, self.now)
        submitted = self.record.state == S.SUBMITTED
        outcome = self.attempt(record(self.story, actor))
        if not submitted:
            assert isinstance(outcome, ProtocolError)
        elif holder is not None and is_human(actor):
            self.expect_reserved(outcome, holder)
        else:  # an agent's evidence, or anyone's when nobody else holds it
            assert isinstance(outcome, Ran), outcome

    # --- the authority and the clock ---------------------------------------------------------

    @precondition(lambda self: self.record.state == S.SUBMITTED)
    @rule(
        criterion=st.sampled_from(CHECKED),
        verdict=st.sampled_from(["pass", "pass", "fail", "inconclusive"]),
    )
    def check_lands(self, criterion: str, verdict: str) -> None:
        outcome = self.attempt(self.story.authority_check(criterion, verdict))
        assert isinstance(outcome, Ran), "the authority's evidence is never held"

    @precondition(lambda self: self.record.state == S.SUBMITTED and self.record.owed)
    @rule()
    def checks_pass(self) -> None:
        """Every owed check lands as a pass (the usual case)."""
        for criterion in list(self.record.owed):
            outcome = self.attempt(self.story.authority_check(criterion, "pass"))
            assert isinstance(outcome, Ran), "the authority's evidence is never held"

    @rule(seconds=st.sampled_from([30, 300, 599, 600, 601]))
    def time_passes(self, seconds: int) -> None:
        driver_of(self.story).at = self.now + timedelta(seconds=seconds)

    @precondition(lambda self: self.record.state == S.FAILED)
    @rule()
    def submit_again(self) -> None:
        for command in ("work.offer", "work.accept_offer", "work.start", "work.submit"):
            outcome = self.attempt(self.story.call(command))
            assert isinstance(outcome, Ran), outcome
        assert self.record.state == S.SUBMITTED

    # --- the record and the projection agree ---------------------------------------------------

    @invariant()
    def the_record_is_the_projection(self) -> None:
        item = self.story.view()
        assert item is not None
        assert item["state"] == self.record.state
        review = item["review"]
        assert review["pending_checks"] == self.record.owed
        held = review["reservation"]
        assert (held or {}).get("reviewer") == self.record.holder


def test_no_interleaving_accepts_under_someone_elses_reservation_or_unproven_checks() -> None:
    """Issue 34, R13.2-03: see the module docstring; every outcome is counted so a run that
    never reached a rule's interesting branch shows it."""
    OUTCOMES.clear()
    run_state_machine_as_test(
        ReviewHolds,
        settings=settings(
            max_examples=300,
            stateful_step_count=50,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
    for reached in (
        "work.accept_result ok",
        "work.accept_result REVIEW_RESERVED",
        "work.accept_result CHECKS_PENDING",
        "work.accept_result CHECKS_FAILED",
        "work.fail REVIEW_RESERVED",
        "evidence.record REVIEW_RESERVED",
        "review.release ok",
    ):
        assert OUTCOMES[reached] > 0, (reached, OUTCOMES)
