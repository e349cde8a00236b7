"""The §10.2 state machine, generated from its table (``states.TRANSITIONS``, ``IN_STATE``).

Every (state, command) pair is decided against a WorkItem brought to that state by real
commands (``work_scenarios``). A pair the table allows succeeds with the command's events and
lands in one of the row's targets; every other pair is ``ILLEGAL_TRANSITION`` citing the row's
R-ID (``R10.2-22`` for the in-state commands) and decides nothing — except for the pairs
listed below, where an earlier rule decides first. Those exceptions are data too, and are
asserted like the rest.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from datetime import timedelta

import pytest

from missionweave.protocol import states as S
from missionweave.protocol.commands import COMMANDS
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.work.checks import BLOCKED_LEASE
from missionweave.protocol.work.items import work_item_key

from .deciders import NOW
from .work_scenarios import (
    LINK_COMMANDS,
    MISSION,
    STORY_STATES,
    TABLE_COMMANDS,
    PureDriver,
    WorkStory,
    evidence,
    story_in,
)

# --- the table, read as data ---------------------------------------------------------------------

ROWS: dict[str, S.Transition] = {}
for _row in S.TRANSITIONS:
    ROWS.setdefault(_row.command, _row)


def sources(command: str) -> frozenset[str]:
    row = ROWS.get(command)
    return row.sources if row is not None else S.IN_STATE[command]


def targets(command: str, state: str) -> tuple[str, ...]:
    row = ROWS.get(command)
    return row.targets if row is not None else (state,)


def requirement_of(command: str) -> str:
    row = ROWS.get(command)
    return row.rid if row is not None else "R10.2-22"


#: the events each command appends when the table allows it, in the stories' situations
#: (wire.md §6); ``work.accept_offer`` withdraws the other candidate of the urgent offer
EVENTS: dict[str, tuple[str, ...]] = {
    "work.propose": ("work.proposed",),
    "work.authorize": ("work.authorized",),
    "work.offer": ("work.offered",),
    "work.accept_offer": ("work.offer_accepted", "work.offer_withdrawn"),
    "approval.grant_execution": ("approval.execution_granted",),
    "approval.refuse_execution": ("approval.execution_refused",),
    "work.start": ("work.started",),
    "work.checkpoint": ("work.checkpointed",),
    "work.block": ("work.blocked",),
    "work.unblock": ("work.unblocked",),
    "work.submit": ("work.submitted",),
    "work.accept_result": ("work.result_accepted",),
    "work.fail": ("work.failed",),
    "work.cancel": ("work.cancelled",),
    "mission.create_child": ("mission.child_created", "mission.created"),
    "link.child_approved": ("mission.child_approved",),
    "link.child_failed": ("mission.child_failed",),
    "mission.fail": ("mission.failed", "work.failed"),
    "mission.cancel": ("mission.cancelled", "work.cancelled"),
    "work.reject_offer": ("work.offer_rejected",),
    "lease.renew": ("lease.renewed",),
    "capability.issue": ("capability.issued",),
    "work.progress": ("work.progress_reported",),
    "work.usage": ("work.usage_recorded",),
    "work.disclose_schedule": ("work.schedule_disclosed",),
    "evidence.record": ("evidence.recorded",),
    "work.message": ("work.message_posted",),
    "work.reprioritize": ("work.reprioritized",),
    "work.reassign": ("work.reassigned", "work.offered"),
    "lease.revoke": ("lease.revoked",),
}
#: where a command's events depend on the state it acts on
EVENTS_IN_STATE: dict[tuple[str, str], tuple[str, ...]] = {
    # R11.3-09: an expired lease is recorded as expired before the item is reassigned
    (S.ACTIVE, "work.reassign"): ("lease.expired", "work.reassigned", "work.offered"),
}

# --- where another rule decides before the state check (asserted, not skipped) -------------------

#: commands that need no WorkItem: the two that create one, and the mission-level ends
NEEDS_NO_ITEM = frozenset({"work.propose", "work.authorize", "mission.fail", "mission.cancel"})
#: wire.md §9 "owner" commands
OWNER_COMMANDS = (
    "work.start", "lease.renew", "work.progress", "work.usage", "work.checkpoint", "work.block",
    "work.submit", "capability.issue", "work.disclose_schedule",
)  # fmt: skip
#: those of them that carry the lease id (``work.start`` and the disclosure name the epoch)
OWNER_LEASE_COMMANDS = tuple(
    command for command in OWNER_COMMANDS if command not in {"work.start", "work.disclose_schedule"}
)

PRECEDENCE: dict[tuple[str, str], tuple[ErrorCode, str]] = {
    # No WorkItem yet: any command naming one is NOT_FOUND.
    **{
        (state, command): (ErrorCode.NOT_FOUND, "wire§4")
        for state in (S.NONE, S.PROPOSAL)
        for command in TABLE_COMMANDS
        if command not in NEEDS_NO_ITEM
    },
    # wire.md §8: an owner's command from a former owner is STALE_OWNERSHIP before the state
    # is looked at. ``open`` has no owner: the worker was fenced when it was unblocked to open.
    **{
        (S.OPEN, command): (ErrorCode.STALE_OWNERSHIP, "R11.3-01")
        for command in OWNER_COMMANDS
        if command != "work.submit"
    },
    # wire.md §8: from a principal that never owned the item it is FORBIDDEN. ``offered`` has
    # no owner (R10.3-02: an offer reserves nothing); the offered worker never owned it.
    **{(S.OFFERED, command): (ErrorCode.FORBIDDEN, "wire§9") for command in OWNER_COMMANDS},
    # wire.md §8 (issue 16 §7): the owner's lease id is STALE_LEASE whatever the state once
    # its lease closed — released at a checkpoint (back in ``queued``), at a submission, or
    # with the item finished — before the state is looked at. ``blocked`` keeps the lease
    # its block released (the bounded blocked lease, R10.2-09); ``active`` has a live one.
    **{
        (state, command): (ErrorCode.STALE_LEASE, "R11.3-05")
        for state in (S.QUEUED, S.SUBMITTED, S.VERIFIED, S.FAILED, S.CANCELLED)
        for command in OWNER_LEASE_COMMANDS
    },
}
#: R11.5-02, R11.5-03: a former owner's submission is kept for audit (202), state unchanged
LATE_RESULTS = frozenset({(S.OPEN, "work.submit")})
#: R10.2-03 "with no active owner": these pairs are allowed once the owner has lapsed (start
#: deadline, lease or blocked lease run out) and refused while it still holds the item
OWNER_HELD = frozenset(
    {
        (state, command)
        for state in (S.QUEUED, S.ACTIVE, S.BLOCKED)
        for command in ("work.offer", "work.reassign")
    }
)
#: R10.2-18: ``mission.fail``/``mission.cancel`` end the mission whatever the item's state; an
#: item outside the row's sources (terminal, or not there yet) is left untouched
MISSION_LEVEL = frozenset({"mission.fail", "mission.cancel"})
#: late enough that every owner of a story has lapsed (start window, lease, blocked lease)
LAPSED = NOW + BLOCKED_LEASE + timedelta(minutes=1)


@dataclass(frozen=True, slots=True)
class Expect:
    kind: str  # "moves", "refused", "late_result", "mission_only"
    events: tuple[str, ...] = ()
    code: ErrorCode | None = None
    requirement: str | None = None


def expected(state: str, command: str, *, owner_lapsed: bool) -> Expect:
    """What the table (and the listed exceptions) say ``command`` does in ``state``."""
    if (state, command) in PRECEDENCE:
        code, requirement = PRECEDENCE[state, command]
        return Expect("refused", code=code, requirement=requirement)
    if (state, command) in LATE_RESULTS:
        return Expect("late_result", events=("work.late_result_recorded",))
    if state in sources(command):
        if (state, command) in OWNER_HELD and not owner_lapsed:
            return Expect(
                "refused", code=ErrorCode.ILLEGAL_TRANSITION, requirement=requirement_of(command)
            )
        return Expect("moves", events=EVENTS_IN_STATE.get((state, command), EVENTS[command]))
    if command in MISSION_LEVEL:
        return Expect("mission_only", events=EVENTS[command][:1])
    return Expect("refused", code=ErrorCode.ILLEGAL_TRANSITION, requirement=requirement_of(command))


PAIRS = [(state, command) for state in STORY_STATES for command in TABLE_COMMANDS]
PAIR_IDS = [f"{state}-{command}" for state, command in PAIRS]


def snapshot(driver: PureDriver) -> tuple[int, dict]:
    return driver.scenario.sequence, {key: repr(v) for key, v in driver.scenario.state.items()}


def pair_story(state: str, command: str) -> WorkStory:
    """The story for a pair: the ``link.*`` commands run against a linked history."""
    return story_in(state, linked=command in LINK_COMMANDS)


# --- the generated matrix ------------------------------------------------------------------------


@pytest.mark.parametrize(("state", "command"), PAIRS, ids=PAIR_IDS)
def test_every_state_and_command_pair_follows_the_table(state: str, command: str) -> None:
    """R10.2-01, R10.2-02, R10.2-03, R10.2-04, R10.2-06, R10.2-07, R10.2-08, R10.2-09,
    R10.2-10, R10.2-11, R10.2-12, R10.2-13, R10.2-14, R10.2-15, R10.2-16, R10.2-17, R10.2-18
    (each pair cites its row), R10.2-22 (everything else is ILLEGAL_TRANSITION, nothing
    decided), wire§8 (precedence exceptions), R11.5-03 (late results)."""
    story = pair_story(state, command)
    driver = story.driver
    assert isinstance(driver, PureDriver)
    call = story.call(command)
    expect = expected(state, command, owner_lapsed=True)
    at = LAPSED if (state, command) in OWNER_HELD else NOW
    before = snapshot(driver)
    item_before = story.view()

    if expect.kind == "refused":
        with pytest.raises(ProtocolError) as refused:
            driver.decide(call, at=at)
        assert (refused.value.code, refused.value.requirement) == (
            expect.code,
            expect.requirement,
        )
        assert snapshot(driver) == before, "a refused command decided something"
        return

    ran = driver.run(call, at=at)
    assert ran.types == list(expect.events)
    if expect.kind == "moves":
        assert story.state in targets(command, state)
        assert ran.status == 201
    elif expect.kind == "late_result":
        assert ran.status == 202
        assert story.state == state
        assert story.view()["submission"] is None
    else:  # mission_only
        assert story.view() == item_before, "a finished or missing item was touched"


@pytest.mark.parametrize("state", sorted({state for state, _ in OWNER_HELD}))
def test_work_offer_is_refused_while_the_owner_still_holds_the_item(state: str) -> None:
    """R10.2-03: an offer needs "no active owner"; before the start deadline, lease or blocked
    lease runs out it is ILLEGAL_TRANSITION and nothing is decided."""
    story = story_in(state)
    assert isinstance(story.driver, PureDriver)
    before = snapshot(story.driver)
    expect = expected(state, "work.offer", owner_lapsed=False)
    with pytest.raises(ProtocolError) as refused:
        story.driver.decide(story.call("work.offer"), at=NOW)
    assert (refused.value.code, refused.value.requirement) == (expect.code, "R10.2-03")
    assert refused.value.details["owner"] == story.owner
    assert snapshot(story.driver) == before


# --- the table's own invariants ------------------------------------------------------------------


def test_the_matrix_covers_every_state_and_command_of_the_table() -> None:
    """R10.2-22: every command of the table is a registered command with events listed here;
    every source and target is a state a story reaches; the exceptions name real pairs."""
    assert set(TABLE_COMMANDS) <= set(COMMANDS)
    assert set(EVENTS) == set(TABLE_COMMANDS)
    known = set(STORY_STATES)
    for row in S.TRANSITIONS:
        assert row.sources <= known, row.rid
        assert set(row.targets) <= known, row.rid
    for allowed in S.IN_STATE.values():
        assert allowed <= set(S.STATES)
    listed = set(PRECEDENCE) | LATE_RESULTS | OWNER_HELD
    assert listed <= set(PAIRS)
    # the precedence exceptions are the states without an owner, and those whose owner's
    # lease has closed (only ``active`` and ``blocked`` hold a current one)
    assert {state for state, _ in PRECEDENCE | dict.fromkeys(LATE_RESULTS)} == {
        S.NONE,
        S.PROPOSAL,
        S.OPEN,
        S.OFFERED,
        S.QUEUED,
        S.SUBMITTED,
        S.VERIFIED,
        S.FAILED,
        S.CANCELLED,
    }


def test_verified_and_cancelled_accept_no_transition() -> None:
    """R10.2-19: no row leaves ``verified`` or ``cancelled``; only the conversation
    (``work.message``) is still allowed there, and nothing moves the item."""
    for state in S.TERMINAL:
        assert not [row.rid for row in S.TRANSITIONS if state in row.sources]
        assert [c for c, allowed in S.IN_STATE.items() if state in allowed] == ["work.message"]
        for command in TABLE_COMMANDS:
            story = pair_story(state, command)
            assert isinstance(story.driver, PureDriver)
            with contextlib.suppress(ProtocolError):
                story.driver.run(story.call(command), at=LAPSED)
            assert story.state == state, f"{command} moved a {state} item"


def test_failed_leaves_only_through_a_new_offer() -> None:
    """R10.2-20: from ``failed`` the only row is ``work.offer`` (back to ``offered``); every
    other command is refused or leaves the item failed."""
    assert [row.command for row in S.TRANSITIONS if S.FAILED in row.sources] == ["work.offer"]
    for command in TABLE_COMMANDS:
        story = pair_story(S.FAILED, command)
        assert isinstance(story.driver, PureDriver)
        with contextlib.suppress(ProtocolError):
            story.driver.run(story.call(command), at=LAPSED)
        assert story.state == (S.OFFERED if command == "work.offer" else S.FAILED), command


def test_a_new_offer_of_a_failed_item_fences_its_last_owner() -> None:
    """R10.2-20, R10.2-03: the re-offer clears the owner; its commands become STALE_OWNERSHIP."""
    story = story_in(S.FAILED)
    assert isinstance(story.driver, PureDriver)
    ran = story.do("work.offer")
    assert ran.events[0][1]["fenced_owner"] == "agent:w2"
    assert story.view()["owner"] is None
    with pytest.raises(ProtocolError) as stale:
        story.driver.decide(story.call("lease.renew"))
    assert stale.value.code is ErrorCode.STALE_OWNERSHIP


# --- rows with more than one target, and the authority's link rows -------------------------------


@pytest.mark.parametrize("to", [S.QUEUED, S.OPEN])
def test_unblock_re_queues_for_the_owner_or_re_opens(to: str) -> None:
    """R10.2-10: ``blocked`` → ``queued`` (the owner keeps it) or ``open`` (the owner is
    fenced and may be re-offered)."""
    story = story_in(S.BLOCKED)
    story.do("work.unblock", to=to)
    item = story.view()
    assert item["state"] == to
    assert item["owner"] == ("agent:w2" if to == S.QUEUED else None)


def test_unblock_to_queued_needs_an_owner() -> None:
    """R10.2-10: an item blocked while it had no owner (a child mission created from
    ``open``) has nobody to queue it for; it re-opens instead."""
    story = story_in(S.OPEN)
    assert isinstance(story.driver, PureDriver)
    story.do("mission.create_child", failure_policy="block_parent")
    story.do("mission.fail", child=True)
    assert story.state == S.BLOCKED
    with pytest.raises(ProtocolError) as refused:
        story.driver.decide(story.call("work.unblock", to=S.QUEUED))
    assert (refused.value.code, refused.value.requirement) == (
        ErrorCode.ILLEGAL_TRANSITION,
        "R10.2-10",
    )
    story.do("work.unblock", to=S.OPEN)
    assert story.state == S.OPEN


def test_approval_of_the_linked_child_verifies_the_parent_item() -> None:
    """R10.2-16: ``mission.approve`` of the child (same group) appends ``mission.approved`` and
    ``mission.child_approved``; the parent goes ``blocked`` → ``verified`` with the child's
    approval as evidence."""
    story = story_in(S.ACTIVE)
    story.do("mission.create_child", failure_policy="fail_parent")
    assert story.state == S.BLOCKED
    ran = story.do("mission.approve")
    assert ran.types == ["mission.approved", "mission.child_approved"]
    item = story.view()
    assert item["state"] == S.VERIFIED
    assert item["child"]["status"] == "approved"
    assert item["evidence"][-1]["criterion"] == "child_mission_approved"
    assert item["evidence"][-1]["producer"] == "user:olga"


@pytest.mark.parametrize(
    ("policy", "state"), [("fail_parent", S.FAILED), ("block_parent", S.BLOCKED)]
)
def test_failure_of_the_linked_child_follows_its_failure_policy(policy: str, state: str) -> None:
    """R10.2-17: ``mission.fail`` of the child appends ``mission.child_failed`` to the parent,
    which fails (``fail_parent``) or stays blocked (``block_parent``)."""
    story = story_in(S.ACTIVE)
    story.do("mission.create_child", failure_policy=policy)
    ran = story.do("mission.fail", child=True)
    assert ran.types == ["mission.failed", "mission.child_failed"]
    assert ran.events[1][1]["failure_policy"] == policy
    assert story.state == state
    assert story.view()["child"]["status"] == "failed"


@pytest.mark.parametrize(
    ("policy", "state"), [("fail_parent", S.FAILED), ("block_parent", S.BLOCKED)]
)
def test_link_child_failed_from_another_group_follows_the_policy(policy: str, state: str) -> None:
    """R10.2-17, R10.4-05: a child in another group reports through the authority's
    ``link.child_failed`` follow-up, carrying the correlation id."""
    story = story_in(S.ACTIVE)
    story.do("mission.create_child", failure_policy=policy)
    ran = story.do("link.child_failed")
    assert ran.types == ["mission.child_failed"]
    assert ran.events[0][1]["correlation_id"] == story.correlation_id
    assert story.state == state


def test_link_child_approved_carries_the_approval_as_evidence() -> None:
    """R10.2-16, R10.4-06: ``link.child_approved`` verifies the blocked parent."""
    story = story_in(S.BLOCKED, linked=True)
    story.do("link.child_approved")
    item = story.view()
    assert item["state"] == S.VERIFIED
    assert item["evidence"][-1]["criterion"] == "child_mission_approved"


def test_a_link_with_another_correlation_id_is_not_found() -> None:
    """R10.4-06: the link must name the correlation id the child was created with."""
    story = story_in(S.BLOCKED, linked=True)
    assert isinstance(story.driver, PureDriver)
    call = story.call("link.child_approved")
    call.body["correlation_id"] = "link:g-research:someone-else"
    with pytest.raises(ProtocolError) as refused:
        story.driver.decide(call)
    assert (refused.value.code, refused.value.requirement) == (ErrorCode.NOT_FOUND, "R10.4-06")


def test_the_running_child_keeps_the_parent_blocked() -> None:
    """R10.2-15: while the linked child runs, the coordinator cannot unblock the parent."""
    story = story_in(S.BLOCKED, linked=True)
    assert isinstance(story.driver, PureDriver)
    with pytest.raises(ProtocolError) as refused:
        story.driver.decide(story.call("work.unblock", to=S.OPEN))
    assert (refused.value.code, refused.value.requirement) == (
        ErrorCode.ILLEGAL_TRANSITION,
        "R10.2-15",
    )


# --- mission propagation -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "outcome", "event"),
    [
        ("mission.fail", S.FAILED, "work.failed"),
        ("mission.cancel", S.CANCELLED, "work.cancelled"),
    ],
)
def test_mission_end_propagates_to_unfinished_items_only(
    command: str, outcome: str, event: str
) -> None:
    """R10.2-18: the mission's end reaches every unfinished WorkItem (``work.failed`` /
    ``work.cancelled``, with the mission named); verified, failed and cancelled items are
    untouched."""
    driver = PureDriver()
    stories = {
        state: story_in(state, driver, item=f"wi-{state}", proposal=f"p-{state}")
        for state in S.STATES
    }
    ran = stories[S.OPEN].do(command)
    unfinished = [state for state in S.STATES if state in S.UNFINISHED]
    assert ran.types == [f"mission.{outcome}"] + [event] * len(unfinished)
    assert [payload["work_item"] for _type, payload in ran.events[1:]] == [
        f"wi-{state}" for state in unfinished
    ]
    for _type, payload in ran.events[1:]:
        assert payload["propagated_from"] == f"mission.{outcome}"
        assert payload["mission"] == MISSION
    if command == "mission.fail":
        assert all(payload["evidence"] for _type, payload in ran.events[1:])
    for state, story in stories.items():
        assert story.state == (outcome if state in S.UNFINISHED else state), state
        assert driver.scenario.state[work_item_key(story.item)].state == story.state


def test_no_work_item_of_an_ended_mission_is_authorised() -> None:
    """R10.2-22: a failed mission takes no new WorkItems."""
    story = story_in(S.PROPOSAL)
    assert isinstance(story.driver, PureDriver)
    story.do("mission.fail")
    with pytest.raises(ProtocolError) as refused:
        story.driver.decide(story.call("work.authorize"))
    assert (refused.value.code, refused.value.requirement) == (
        ErrorCode.ILLEGAL_TRANSITION,
        "R10.2-22",
    )


def test_failure_evidence_is_required_even_when_the_state_allows_failing() -> None:
    """R10.2-13: ``work.fail`` carries failure evidence (EVIDENCE_MISSING, nothing decided)."""
    story = story_in(S.ACTIVE)
    assert isinstance(story.driver, PureDriver)
    call = story.call("work.fail")
    call.body["evidence"] = []
    before = snapshot(story.driver)
    with pytest.raises(ProtocolError) as refused:
        story.driver.decide(call)
    assert refused.value.code is ErrorCode.EVIDENCE_MISSING
    assert snapshot(story.driver) == before
    call.body["evidence"] = [evidence("c1", "agent:w1", verdict="fail")]
    story.run(call)
    assert story.state == S.FAILED
