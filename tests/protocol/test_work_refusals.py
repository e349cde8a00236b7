"""Every refusal of the WorkItem commands, as given/when/then (pure, no database).

Given a WorkItem brought to a state by real commands (``work_scenarios``), when a command
breaks a rule, then it is refused with the rule's error code and R-ID — and nothing is
decided: the group's state and sequence are exactly as before. Where a refusal has a way out
(an answer, a grant, a verified dependency), the test takes it and shows the command passes.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from missionweave.protocol import states as S
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.timefmt import format_timestamp
from missionweave.protocol.work.checks import BLOCKED_LEASE, LEASE_TTL, START_WINDOW

from .deciders import NOW
from .work_scenarios import (
    COORDINATOR,
    HUMAN_COORDINATOR,
    HUMAN_COORDINATOR_OWNER,
    MISSION_OWNER,
    OTHER_WORKER,
    SECOND_OWNER,
    TABLE_COMMANDS,
    WORKER,
    Call,
    PureDriver,
    WorkStory,
    evidence,
    selection_basis,
    story_in,
    work_contract,
)

LAPSED = NOW + BLOCKED_LEASE + timedelta(minutes=1)
OWNER_LEASE_COMMANDS = (
    "lease.renew", "work.progress", "work.usage", "work.checkpoint", "work.block", "work.submit",
)  # fmt: skip


def driver_of(story: WorkStory) -> PureDriver:
    assert isinstance(story.driver, PureDriver)
    return story.driver


def snapshot(story: WorkStory) -> tuple[int, dict]:
    scenario = driver_of(story).scenario
    return scenario.sequence, {key: repr(value) for key, value in scenario.state.items()}


def refused(
    story: WorkStory, call: Call, code: ErrorCode, requirement: str | None = None, **kw: Any
) -> ProtocolError:
    """``call`` is refused with ``code`` (and ``requirement``) and decides nothing."""
    before = snapshot(story)
    with pytest.raises(ProtocolError) as caught:
        driver_of(story).decide(call, **kw)
    error = caught.value
    assert error.code is code, error
    if requirement is not None:
        assert error.requirement == requirement, error
    assert snapshot(story) == before, "a refused command decided something"
    return error


def body(call: Call, **changes: Any) -> Call:
    return replace(call, body={**call.body, **changes})


def approval_contract(approvals: int = 1) -> dict[str, Any]:
    return work_contract(
        risk={"class": "high", "requires_execution_approval": True, "approvals_required": approvals}
    )


def move_clock(story: WorkStory, at: Any) -> None:
    driver_of(story).at = at


# --- NOT_FOUND ------------------------------------------------------------------------------------

ITEM_COMMANDS = [
    c
    for c in TABLE_COMMANDS
    if c not in ("work.propose", "work.authorize", "mission.fail", "mission.cancel")
]


@pytest.mark.parametrize("command", ITEM_COMMANDS)
def test_a_command_on_an_unknown_work_item_is_not_found(command: str) -> None:
    """wire§4: a WorkItem that is not in this group is NOT_FOUND, naming $.work_item."""
    story = story_in(S.ACTIVE, linked=command.startswith("link."))
    call = body(story.call(command), work_item="wi-ghost")
    error = refused(story, call, ErrorCode.NOT_FOUND, "wire§4")
    assert error.details == {"path": "$.work_item", "work_item": "wi-ghost"}


@pytest.mark.parametrize("command", ["work.accept_offer", "work.reject_offer"])
def test_an_unknown_offer_is_not_found(command: str) -> None:
    """wire§9: the offer must be one made on this WorkItem."""
    story = story_in(S.OFFERED)
    error = refused(story, story.call(command, offer="o-ghost"), ErrorCode.NOT_FOUND)
    assert error.details == {"path": "$.offer"}


def test_authorizing_into_an_unknown_mission_or_from_an_unknown_proposal_is_not_found() -> None:
    """wire§4, R10.2-02: the mission and the proposal named must exist."""
    story = story_in(S.PROPOSAL)
    call = story.call("work.authorize")
    assert (
        refused(story, body(call, mission="m-ghost"), ErrorCode.NOT_FOUND).details["path"]
        == "$.mission"
    )
    error = refused(story, body(call, proposal="p-ghost"), ErrorCode.NOT_FOUND, "R10.2-02")
    assert error.details == {"path": "$.proposal"}


def test_a_proposal_is_authorised_once() -> None:
    """R10.2-02: a second WorkItem cannot be authorised from an authorised proposal."""
    story = story_in(S.OPEN)
    call = body(story.call("work.authorize"), work_item="wi-2", proposal=story.proposal)
    refused(story, call, ErrorCode.ILLEGAL_TRANSITION, "R10.2-02")


# --- FORBIDDEN ------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["work.accept_offer", "work.reject_offer"])
def test_only_the_offered_worker_may_answer_an_offer(command: str) -> None:
    """wire§9 ("the offered worker"), R10.3-02: another worker cannot take or refuse it."""
    story = story_in(S.OFFERED)
    call = replace(story.call(command, worker=WORKER), actor=OTHER_WORKER)
    refused(story, call, ErrorCode.FORBIDDEN, "wire§9")


@pytest.mark.parametrize("command", ["work.start", *OWNER_LEASE_COMMANDS])
def test_a_worker_that_never_owned_the_item_is_forbidden(command: str) -> None:
    """wire§8 precedence, wire§9 "owner": a principal that never owned the item is FORBIDDEN,
    whatever the lease id or epoch it sends."""
    story = story_in(S.ACTIVE)
    refused(story, replace(story.call(command), actor=OTHER_WORKER), ErrorCode.FORBIDDEN)


def test_a_worker_failing_an_item_it_does_not_own_is_forbidden() -> None:
    """R10.2-13, wire§9: ``work.fail`` is the owner's (with its lease id) or a coordinator's."""
    story = story_in(S.ACTIVE)
    failure = [evidence("c1", OTHER_WORKER, verdict="fail")]
    call = Call(
        "work.fail",
        OTHER_WORKER,
        {"work_item": story.item, "lease_id": story.lease_id, "evidence": failure},
    )
    refused(story, call, ErrorCode.FORBIDDEN, "wire§9")
    owner_call = Call(
        "work.fail",
        WORKER,
        {
            "work_item": story.item,
            "lease_id": story.lease_id,
            "evidence": failure,
            "permanent": True,  # else the contract's retry policy re-queues it (R11.4-08)
        },
    )
    story.run(owner_call)
    assert story.state == S.FAILED


# --- STALE_OWNERSHIP ------------------------------------------------------------------------------


def _re_offered_to_other_worker(story: WorkStory) -> None:
    """The owner lapsed; the coordinator re-offers (fencing it) and another worker accepts."""
    move_clock(story, LAPSED)
    story.do("work.offer", workers=(OTHER_WORKER,))
    story.do("work.accept_offer", worker=OTHER_WORKER)


@pytest.mark.parametrize("command", ["work.start", *OWNER_LEASE_COMMANDS[:-1]])
def test_the_former_owner_is_stale_ownership_after_a_re_offer(command: str) -> None:
    """R11.3-01, R10.2-03: a re-offer fences the lapsed owner; its commands, even with its old
    lease id and epoch, are STALE_OWNERSHIP."""
    story = story_in(S.ACTIVE)
    old = story.call(command)
    _re_offered_to_other_worker(story)
    assert story.owner == OTHER_WORKER
    error = refused(story, old, ErrorCode.STALE_OWNERSHIP, "R11.3-01")
    assert error.details["ownership_epoch"] == 2


def test_start_with_another_ownership_epoch_is_stale_ownership() -> None:
    """R11.3-01, R11.3-02: ``work.start`` carries the epoch its acceptance returned."""
    story = story_in(S.QUEUED)
    for epoch in (2, 7):
        error = refused(
            story, body(story.call("work.start"), ownership_epoch=epoch), ErrorCode.STALE_OWNERSHIP
        )
        assert error.details == {"ownership_epoch": 1}


def test_an_earlier_epoch_of_the_same_worker_is_stale_ownership() -> None:
    """R11.3-01: a worker that wins the item again gets a new epoch; its old one is stale."""
    story = story_in(S.ACTIVE)
    move_clock(story, LAPSED)
    story.do("work.offer", workers=(WORKER,))
    ran = story.do("work.accept_offer")
    assert ran.result["ownership_epoch"] == 2
    refused(story, body(story.call("work.start"), ownership_epoch=1), ErrorCode.STALE_OWNERSHIP)
    story.do("work.start")
    assert story.state == S.ACTIVE


# --- STALE_LEASE ----------------------------------------------------------------------------------


def _second_lease(story: WorkStory) -> str:
    """Checkpoint and start again in the same ownership epoch: a new lease id."""
    first = story.lease_id
    assert first is not None
    story.do("work.checkpoint")
    story.do("work.start")
    assert story.lease_id != first
    assert story.epoch == 1
    return first


@pytest.mark.parametrize("command", OWNER_LEASE_COMMANDS)
def test_an_earlier_lease_id_is_stale_even_in_the_same_epoch(command: str) -> None:
    """R11.3-05: a delayed command with an earlier lease id is refused although the ownership
    epoch has not changed; R11.3-04: every owner command carries the current lease id."""
    story = story_in(S.ACTIVE)
    first = _second_lease(story)
    refused(story, story.call(command, lease_id=first), ErrorCode.STALE_LEASE, "R11.3-05")
    story.do(command)


def test_a_worker_failure_with_an_earlier_lease_id_is_stale() -> None:
    """R11.3-04, R11.3-05: the owner's own ``work.fail`` references the current lease."""
    story = story_in(S.ACTIVE)
    first = _second_lease(story)
    call = Call(
        "work.fail",
        WORKER,
        {"work_item": story.item, "lease_id": first, "evidence": [evidence("c1", WORKER)]},
    )
    refused(story, call, ErrorCode.STALE_LEASE, "R11.3-05")


def test_an_earlier_lease_id_is_stale_whatever_the_state() -> None:
    """wire§8 precedence: the current owner with an older lease id is STALE_LEASE, not
    ILLEGAL_TRANSITION, even where the state would refuse the command too; and once the
    submission closed the last lease, its id is no longer current either (issue 16 §7)."""
    story = story_in(S.ACTIVE)
    first = _second_lease(story)
    story.do("work.submit")
    for command in OWNER_LEASE_COMMANDS:
        refused(story, story.call(command, lease_id=first), ErrorCode.STALE_LEASE, "R11.3-05")
    refused(story, story.call("lease.renew"), ErrorCode.STALE_LEASE, "R11.3-05")


def test_a_lease_released_at_a_checkpoint_is_stale_not_an_illegal_transition() -> None:
    """wire§8, issue 16 §7: after a checkpoint the owner still owns the item, back in
    ``queued`` with no lease; a command with the lease id it had is STALE_LEASE — that lease
    is not the current one — before the state, which would refuse it as well, is looked at.
    ``work.start`` (by epoch) still works, and gives a new current lease."""
    story = story_in(S.ACTIVE)
    old = story.lease_id
    story.do("work.checkpoint")
    assert story.state == S.QUEUED
    for command in OWNER_LEASE_COMMANDS:
        refused(story, story.call(command, lease_id=old), ErrorCode.STALE_LEASE, "R11.3-05")
    story.do("work.start")
    assert story.state == S.ACTIVE
    assert story.lease_id != old


@pytest.mark.parametrize("command", OWNER_LEASE_COMMANDS)
def test_an_expired_lease_is_stale_by_the_authority_clock(command: str) -> None:
    """R11.3-09: timeout expires the lease; the authority's clock decides, after the state
    check (wire§8)."""
    story = story_in(S.ACTIVE)
    expiry = NOW + LEASE_TTL
    error = refused(story, story.call(command), ErrorCode.STALE_LEASE, "R11.3-09", at=expiry)
    assert error.details["expires_at"] == format_timestamp(expiry)
    driver_of(story).run(story.call(command), at=expiry - timedelta(seconds=1))


def test_renewing_moves_the_lease_expiry() -> None:
    """R11.3-01: leases are renewable; a renewed lease is live past its first expiry."""
    story = story_in(S.ACTIVE)
    driver_of(story).run(story.call("lease.renew"), at=NOW + timedelta(minutes=4))
    driver_of(story).run(story.call("work.progress"), at=NOW + timedelta(minutes=8))
    refused(
        story,
        story.call("work.progress"),
        ErrorCode.STALE_LEASE,
        "R11.3-09",
        at=NOW + timedelta(minutes=9),
    )


# --- offers: expired, withdrawn, not yet live, already answered ----------------------------------


def test_an_expired_offer_is_refused_and_appends_nothing() -> None:
    """R10.2-05: expiry invalidates acceptance, appends no event and leaves ``offered``."""
    story = story_in(S.OFFERED)
    expires = story.view()["offers"][0]["expires_at"]
    call = story.call("work.accept_offer")
    error = refused(story, call, ErrorCode.OFFER_EXPIRED, "R10.2-05", at=NOW + timedelta(hours=1))
    assert error.details == {"offer": call.body["offer"], "expires_at": expires}
    assert story.state == S.OFFERED
    assert story.view()["offers"][0]["status"] == "open"
    story.do("work.accept_offer")  # before expires_at it is accepted


def test_the_losing_urgent_candidate_gets_offer_withdrawn() -> None:
    """R10.3-05, R10.3-06: the first acceptance wins and withdraws every other offer in the
    same command; the loser is OFFER_WITHDRAWN, accepting or rejecting."""
    story = story_in(S.OFFERED)
    losing = story.call("work.accept_offer", worker=OTHER_WORKER)
    ran = story.do("work.accept_offer", worker=WORKER)
    assert ran.types == ["work.offer_accepted", "work.offer_withdrawn"]
    assert ran.events[1][1] == {
        "work_item": story.item,
        "offer": losing.body["offer"],
        "worker": OTHER_WORKER,
        "reason": "accepted_by_another",
    }
    refused(story, losing, ErrorCode.OFFER_WITHDRAWN, "R10.3-06")
    refused(story, story.call("work.reject_offer", worker=OTHER_WORKER), ErrorCode.OFFER_WITHDRAWN)


def test_an_offer_superseded_by_a_new_offer_is_withdrawn() -> None:
    """R10.2-03: a new ``work.offer`` replaces the durable offer; the old one is withdrawn."""
    story = story_in(S.OFFERED)
    old = story.call("work.accept_offer", worker=WORKER)
    story.do("work.offer", workers=(OTHER_WORKER,))
    refused(story, old, ErrorCode.OFFER_WITHDRAWN, "R10.3-06")
    story.do("work.accept_offer", worker=OTHER_WORKER)
    assert story.owner == OTHER_WORKER


def _sequential(story: WorkStory, ttl: dict[str, timedelta]) -> None:
    call = story.call("work.offer", workers=(WORKER, OTHER_WORKER), mode="sequential")
    for offer in call.body["offers"]:
        offer["expires_at"] = format_timestamp(NOW + ttl[offer["worker"]])
    story.run(call)


def test_a_sequential_offer_is_not_live_before_the_candidates_ranked_ahead() -> None:
    """R10.3-03: one worker at a time; the second candidate's offer goes live when the first
    rejects."""
    story = story_in(S.OPEN)
    _sequential(story, {WORKER: timedelta(hours=1), OTHER_WORKER: timedelta(hours=2)})
    second = story.call("work.accept_offer", worker=OTHER_WORKER)
    error = refused(story, second, ErrorCode.ILLEGAL_TRANSITION, "R10.3-03")
    assert error.details == {"offer": second.body["offer"], "ahead": [story.offer_to(WORKER)]}
    story.do("work.reject_offer", worker=WORKER)
    story.run(second)
    assert story.owner == OTHER_WORKER


def test_a_sequential_offer_goes_live_when_the_one_ahead_expires() -> None:
    """R10.3-03, R10.2-05: an expired offer ahead no longer holds the next candidate back."""
    story = story_in(S.OPEN)
    _sequential(story, {WORKER: timedelta(minutes=5), OTHER_WORKER: timedelta(hours=2)})
    second = story.call("work.accept_offer", worker=OTHER_WORKER)
    refused(story, second, ErrorCode.ILLEGAL_TRANSITION, "R10.3-03")
    driver_of(story).run(second, at=NOW + timedelta(minutes=5))
    assert story.state == S.QUEUED


def test_an_answered_offer_cannot_be_answered_again() -> None:
    """R10.3-09, R10.2-04: a rejected offer is neither rejected again nor accepted."""
    story = story_in(S.OFFERED)
    story.do("work.reject_offer", worker=WORKER)
    refused(story, story.call("work.reject_offer"), ErrorCode.ILLEGAL_TRANSITION, "R10.3-09")
    refused(story, story.call("work.accept_offer"), ErrorCode.ILLEGAL_TRANSITION, "R10.2-04")


# --- revisions and the execution approval gate ----------------------------------------------------


def test_accepting_after_a_corrected_contract_is_stale_revision() -> None:
    """R10.1-05, R10.1-04: a corrected contract raises the revision and needs renewed
    acceptance; the answer to the old revision is STALE_REVISION."""
    story = story_in(S.OFFERED)
    old_offer = story.call("work.accept_offer")
    corrected = work_contract(goal="Summarise the incident reports of November and October")
    ran = story.do("work.offer", contract=corrected)
    assert ran.events[0][1]["revision"] == 2
    assert story.view()["revision"] == 2
    refused(story, old_offer, ErrorCode.OFFER_WITHDRAWN)
    stale = body(story.call("work.accept_offer"), contract_revision=1)
    error = refused(story, stale, ErrorCode.STALE_REVISION, "R10.1-05")
    assert error.details == {"revision": 2}
    story.do("work.accept_offer")


def test_re_offering_the_same_contract_keeps_the_revision() -> None:
    """R10.1-05: only a change of substance is a new revision."""
    story = story_in(S.OFFERED)
    ran = story.do("work.offer", contract=story.contract)
    assert ran.events[0][1]["revision"] == 1
    assert "contract" not in ran.events[0][1]


def test_a_grant_for_another_revision_is_stale_revision() -> None:
    """R10.2-06, wire§9: a grant names the revision it approves."""
    story = story_in(S.QUEUED)
    error = refused(
        story, body(story.call("approval.grant_execution"), contract_revision=2),
        ErrorCode.STALE_REVISION, "R10.1-05",
    )  # fmt: skip
    assert error.details == {"revision": 1}


def test_start_waits_for_the_required_distinct_approvals() -> None:
    """R10.1-01(i), R10.2-06: APPROVAL_REQUIRED until ``approvals_required`` distinct human
    mission owners granted execution of this revision."""
    story = story_in(S.OFFERED, contract=approval_contract(2))
    story.do("work.accept_offer")
    error = refused(story, story.call("work.start"), ErrorCode.APPROVAL_REQUIRED, "R10.1-01")
    assert error.details == {"approvals": 0, "approvals_required": 2}
    ran = story.do("approval.grant_execution")
    assert ran.result == {"approvals": 1, "approvals_required": 2}
    error = refused(story, story.call("work.start"), ErrorCode.APPROVAL_REQUIRED)
    assert error.details == {"approvals": 1, "approvals_required": 2}
    story.do("approval.grant_execution", actor=SECOND_OWNER)
    story.do("work.start")
    assert story.state == S.ACTIVE


def test_the_proposer_cannot_approve_execution() -> None:
    """R10.2-06, wire§9: not the principal who issued ``work.propose`` (SELF_APPROVAL)."""
    story = story_in(S.OFFERED, contract=approval_contract(), proposer=MISSION_OWNER)
    story.do("work.accept_offer")
    refused(story, story.call("approval.grant_execution"), ErrorCode.SELF_APPROVAL, "R10.2-06")
    story.do("approval.grant_execution", actor=SECOND_OWNER)


def test_the_authorizer_cannot_approve_execution() -> None:
    """R10.2-06, wire§9: not the principal who issued ``work.authorize`` (SELF_APPROVAL)."""
    story = story_in(S.OFFERED, contract=approval_contract(), authorizer=HUMAN_COORDINATOR_OWNER)
    story.do("work.accept_offer")
    call = story.call("approval.grant_execution", actor=HUMAN_COORDINATOR_OWNER)
    refused(story, call, ErrorCode.SELF_APPROVAL, "R10.2-06")


def test_the_same_person_approving_twice_is_duplicate_approval() -> None:
    """R10.2-06, wire§9: a second grant by the same person for the same revision."""
    story = story_in(S.OFFERED, contract=approval_contract(2))
    story.do("work.accept_offer")
    story.do("approval.grant_execution")
    refused(story, story.call("approval.grant_execution"), ErrorCode.DUPLICATE_APPROVAL, "R10.2-06")


def test_approvals_are_not_carried_to_a_new_revision() -> None:
    """R10.1-05, wire§9: grants never carry over; the corrected contract needs new ones (and
    the same person may grant again, for the new revision)."""
    story = story_in(S.OFFERED, contract=approval_contract())
    story.do("work.accept_offer")
    story.do("approval.grant_execution")
    assert story.view()["approvals"] == [MISSION_OWNER]
    move_clock(story, LAPSED)  # the owner never started: its start deadline has passed
    corrected = approval_contract() | {"goal": "Summarise November, with a timeline"}
    story.do("work.offer", contract=corrected)
    assert story.view()["approvals"] == []
    story.do("work.accept_offer")
    error = refused(story, story.call("work.start"), ErrorCode.APPROVAL_REQUIRED)
    assert error.details == {"approvals": 0, "approvals_required": 1}
    story.do("approval.grant_execution")
    story.do("work.start")


# --- dependencies ---------------------------------------------------------------------------------


def _authorised(driver: PureDriver, item: str, depends_on: list[str], **story: Any) -> WorkStory:
    told = story_in(S.NONE, driver, item=item, proposal=f"p-{item}", depends_on=depends_on, **story)
    told.do("work.authorize")
    return told


@pytest.mark.parametrize(
    ("existing", "closing", "cycle"),
    [
        ({}, ("wi-a", ["wi-a"]), ["wi-a", "wi-a"]),
        ({"wi-a": ["wi-b"]}, ("wi-b", ["wi-a"]), ["wi-b", "wi-a", "wi-b"]),
        (
            {"wi-a": ["wi-b"], "wi-b": ["wi-c"]},
            ("wi-c", ["wi-a"]),
            ["wi-c", "wi-a", "wi-b", "wi-c"],
        ),
        # wi-a depends on wi-x before wi-x exists; wi-x closes the cycle when authorised
        (
            {"wi-a": ["wi-x"], "wi-b": ["wi-a"]},
            ("wi-x", ["wi-b"]),
            ["wi-x", "wi-b", "wi-a", "wi-x"],
        ),
    ],
    ids=["self", "two", "three", "through-a-not-yet-authorised-item"],
)
def test_a_dependency_cycle_is_refused_naming_the_cycle(
    existing: dict[str, list[str]], closing: tuple[str, list[str]], cycle: list[str]
) -> None:
    """R10.4-04, R10.4-01, wire§9: DEPENDENCY_CYCLE; details.cycle is the path that closes."""
    driver = PureDriver()
    for item, deps in existing.items():
        _authorised(driver, item, deps)
    item, deps = closing
    story = story_in(S.NONE, driver, item=item, proposal=f"p-{item}", depends_on=deps)
    error = refused(story, story.call("work.authorize"), ErrorCode.DEPENDENCY_CYCLE, "R10.4-04")
    assert error.details == {"cycle": cycle}


def test_a_diamond_of_dependencies_is_not_a_cycle() -> None:
    """R10.4-01, R10.4-02: a DAG grows as discoveries occur."""
    driver = PureDriver()
    _authorised(driver, "wi-base", [])
    _authorised(driver, "wi-left", ["wi-base"])
    _authorised(driver, "wi-right", ["wi-base"])
    top = _authorised(driver, "wi-top", ["wi-left", "wi-right"])
    assert top.view()["depends_on"] == ["wi-left", "wi-right"]


def _waiting(driver: PureDriver, deps: list[str], policy: str = "all_verified") -> WorkStory:
    """A WorkItem accepted (offers and acceptance are allowed before the dependencies)."""
    story = _authorised(driver, "wi-main", deps, contract=work_contract(dependency_policy=policy))
    story.do("work.offer")
    story.do("work.accept_offer")
    return story


def test_start_waits_until_every_dependency_is_verified() -> None:
    """R10.4-03 (``all_verified``), wire§9: DEPENDENCY_UNMET lists the unmet dependencies,
    including one not yet authorised."""
    driver = PureDriver()
    dependency = story_in(S.SUBMITTED, driver, item="wi-dep", proposal="p-dep")
    story = _waiting(driver, ["wi-dep", "wi-later"])
    error = refused(story, story.call("work.start"), ErrorCode.DEPENDENCY_UNMET, "R10.4-03")
    assert error.details == {"unmet": ["wi-dep", "wi-later"], "policy": "all_verified"}
    dependency.do("work.accept_result")
    later = story_in(S.NONE, driver, item="wi-later", proposal="p-later")
    later.do("work.authorize")
    error = refused(story, story.call("work.start"), ErrorCode.DEPENDENCY_UNMET)
    assert error.details["unmet"] == ["wi-later"]
    later.do("work.cancel")
    refused(story, story.call("work.start"), ErrorCode.DEPENDENCY_UNMET)


@pytest.mark.parametrize(
    ("policy", "dependency_state", "met"),
    [
        ("all_verified", S.FAILED, False),
        ("all_verified", S.CANCELLED, False),
        ("all_verified", S.VERIFIED, True),
        ("all_terminal", S.ACTIVE, False),
        ("all_terminal", S.FAILED, True),
        ("all_terminal", S.CANCELLED, True),
        ("all_terminal", S.VERIFIED, True),
    ],
)
def test_the_dependency_policy_decides_which_states_count(
    policy: str, dependency_state: str, met: bool
) -> None:
    """R10.4-03, wire§9: for ``all_terminal`` verified, failed and cancelled count. An unmet
    dependency that ended is named in ``details.ended`` (R10.2-20, R10.2-21): waiting will
    not meet it."""
    driver = PureDriver()
    story_in(dependency_state, driver, item="wi-dep", proposal="p-dep")
    story = _waiting(driver, ["wi-dep"], policy)
    if met:
        story.do("work.start")
        assert story.state == S.ACTIVE
    else:
        error = refused(story, story.call("work.start"), ErrorCode.DEPENDENCY_UNMET)
        expected: dict = {"unmet": ["wi-dep"], "policy": policy}
        if dependency_state in (S.FAILED, S.CANCELLED):
            expected["ended"] = {"wi-dep": dependency_state}
        assert error.details == expected


# --- evidence and review --------------------------------------------------------------------------


def test_a_submission_without_evidence_for_every_criterion_is_evidence_missing() -> None:
    """R13.2-02, R10.2-11, wire§9: EVIDENCE_MISSING lists the criteria left uncovered."""
    story = story_in(S.ACTIVE)
    call = story.call("work.submit")
    only_c1 = body(call, evidence=[evidence("c1", WORKER)])
    error = refused(story, only_c1, ErrorCode.EVIDENCE_MISSING, "R13.2-02")
    assert error.details == {"missing": ["c2"]}
    error = refused(story, body(call, evidence=[]), ErrorCode.EVIDENCE_MISSING)
    assert error.details == {"missing": ["c1", "c2"]}
    story.run(call)


def test_a_review_without_a_verdict_for_every_criterion_is_evidence_missing() -> None:
    """R13.2-02, R13.2-03: accepting a result maps a verdict to each acceptance criterion."""
    story = story_in(S.SUBMITTED)
    call = story.call("work.accept_result")
    review = {**call.body["review"], "verdicts": call.body["review"]["verdicts"][:1]}
    error = refused(story, body(call, review=review), ErrorCode.EVIDENCE_MISSING, "R13.2-02")
    assert error.details == {"missing": ["c2"]}


@pytest.mark.parametrize("verdict", ["fail", "needs_changes"])
def test_a_failing_verdict_refuses_verification(verdict: str) -> None:
    """R10.2-12: only a successful review verifies; fail or re-offer instead."""
    story = story_in(S.SUBMITTED)
    call = story.call("work.accept_result")
    call.body["review"]["verdicts"][0]["verdict"] = verdict
    error = refused(story, call, ErrorCode.ILLEGAL_TRANSITION, "R10.2-12")
    assert error.details == {"failing": ["c1"]}
    story.do("work.fail")
    assert story.state == S.FAILED


@pytest.mark.parametrize("actor", [COORDINATOR, HUMAN_COORDINATOR])
def test_a_human_review_criterion_is_accepted_by_a_human_mission_owner(actor: str) -> None:
    """R13.2-03, wire§9: where a criterion's method is ``human_review``, the coordinator (agent
    or human without the mission_owner role) cannot accept the result."""
    story = story_in(S.SUBMITTED)
    refused(story, story.call("work.accept_result", actor=actor), ErrorCode.FORBIDDEN, "R13.2-03")
    story.do("work.accept_result", actor=HUMAN_COORDINATOR_OWNER)
    assert story.state == S.VERIFIED


def test_without_a_human_review_criterion_the_coordinator_accepts() -> None:
    """R10.2-12: a successful coordinator review verifies."""
    criteria = [work_contract()["acceptance_criteria"][0]]
    story = story_in(S.SUBMITTED, contract=work_contract(acceptance_criteria=criteria))
    story.do("work.accept_result", actor=COORDINATOR)
    assert story.state == S.VERIFIED


# --- private reasoning and invalid contracts ------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "make", "path", "requirement"),
    [
        (
            "work.offer",
            lambda c: body(c, selection_basis=selection_basis(reasoning="I like w2")),
            "$.selection_basis.reasoning",
            "R10.3-12",
        ),
        (
            "work.offer",
            lambda c: body(
                c,
                selection_basis=selection_basis(
                    reliability_evidence=[{"verified": 3, "chain_of_thought": "first I..."}]
                ),
            ),
            "$.selection_basis.reliability_evidence[0].chain_of_thought",
            "R10.3-12",
        ),
        (
            "work.submit",
            lambda c: body(
                c,
                evidence=[
                    evidence("c1", WORKER) | {"chain_of_thought": "..."},
                    evidence("c2", WORKER),
                ],
            ),
            "$.evidence[0].chain_of_thought",
            "R13.2-05",
        ),
        (
            "work.submit",
            lambda c: body(
                c,
                evidence=[
                    evidence("c1", WORKER),
                    evidence("c2", WORKER)
                    | {"result": {"verdict": "pass", "summary": "", "data": {"reasoning": "x"}}},
                ],
            ),
            "$.evidence[1].result.data.reasoning",
            "R13.2-05",
        ),
        (
            "evidence.record",
            lambda c: body(c, reasoning="because"),
            "$.reasoning",
            "R13.2-05",
        ),
        (
            "work.fail",
            lambda c: body(c, evidence=[evidence("c1", COORDINATOR) | {"reasoning": "x"}]),
            "$.evidence[0].reasoning",
            "R13.2-05",
        ),
        (
            "work.accept_result",
            lambda c: body(c, review={**c.body["review"], "chain_of_thought": "hmm"}),
            "$.review.chain_of_thought",
            "R13.2-05",
        ),
        (
            "work.accept_result",
            lambda c: body(
                c,
                review={
                    **c.body["review"],
                    "verdicts": [
                        {**c.body["review"]["verdicts"][0], "reasoning": "x"},
                        *c.body["review"]["verdicts"][1:],
                    ],
                },
            ),
            "$.review.verdicts[0].reasoning",
            "R13.2-05",
        ),
    ],
    ids=[
        "selection_basis", "selection_basis-nested", "submit-evidence", "submit-evidence-data",
        "evidence.record", "fail-evidence", "review", "review-verdict",
    ],
)  # fmt: skip
def test_private_reasoning_is_malformed_wherever_it_appears(
    command: str, make: Any, path: str, requirement: str
) -> None:
    """R10.3-12 (selection basis), R13.2-05 (evidence, review), wire§9: a ``reasoning`` or
    ``chain_of_thought`` key anywhere is MALFORMED, naming the path."""
    state = {"work.offer": S.OPEN, "work.fail": S.ACTIVE, "work.submit": S.ACTIVE}.get(
        command, S.SUBMITTED
    )
    story = story_in(state)
    error = refused(story, make(story.call(command)), ErrorCode.MALFORMED, requirement)
    assert error.details == {"path": path}


def test_a_selection_basis_needs_all_six_fields() -> None:
    """R10.3-11: the selection basis is structured: a missing field is MALFORMED."""
    story = story_in(S.OPEN)
    basis = selection_basis()
    del basis["expected_cost"]
    error = refused(
        story, body(story.call("work.offer"), selection_basis=basis), ErrorCode.MALFORMED
    )
    assert error.details == {"path": "$.selection_basis.expected_cost"}


@pytest.mark.parametrize("state", [S.PROPOSAL, S.OPEN])
def test_an_invalid_contract_is_refused_field_by_field(state: str) -> None:
    """R10.1-01, wire§10: CONTRACT_INVALID on ``work.authorize`` and on a corrected contract in
    ``work.offer``, naming every bad field by JSON path; the revision is the authority's."""
    story = story_in(state)
    command = "work.authorize" if state == S.PROPOSAL else "work.offer"
    bad = work_contract(urgency="whenever", revision=3)
    del bad["goal"]
    call = body(story.call(command), contract=bad)
    error = refused(story, call, ErrorCode.CONTRACT_INVALID, "R10.1-01")
    assert [e["path"] for e in error.details["errors"]] == [
        "$.contract.goal",
        "$.contract.urgency",
        "$.contract.revision",
    ]


# --- ownership: offers while owned, questions, late results ---------------------------------------


@pytest.mark.parametrize(
    ("state", "lapse"),
    [
        (S.QUEUED, START_WINDOW),
        (S.ACTIVE, LEASE_TTL),
        (S.BLOCKED, BLOCKED_LEASE),
    ],
)
def test_an_item_is_offered_again_only_once_its_owner_lapsed(state: str, lapse: timedelta) -> None:
    """R10.2-03: refused while an owner holds the item (start deadline, lease, bounded blocked
    lease R11.4-05); afterwards the offer fences the old owner, whose commands become
    STALE_OWNERSHIP, and the new acceptance starts a higher epoch (R11.5-01)."""
    story = story_in(state)
    old_owner_call = story.call("work.start")
    error = refused(
        story,
        story.call("work.offer", workers=(OTHER_WORKER,)),
        ErrorCode.ILLEGAL_TRANSITION,
        "R10.2-03",
        at=NOW + lapse - timedelta(seconds=1),
    )
    assert error.details == {"work_item": story.item, "owner": WORKER}
    move_clock(story, NOW + lapse)
    ran = story.do("work.offer", workers=(OTHER_WORKER,))
    assert ran.events[0][1]["fenced_owner"] == WORKER
    refused(story, old_owner_call, ErrorCode.STALE_OWNERSHIP, "R11.3-01")
    accepted = story.do("work.accept_offer", worker=OTHER_WORKER)
    assert accepted.result["ownership_epoch"] == 2


def test_the_start_deadline_is_capped_by_the_contract_deadline() -> None:
    """R11.3-02: an ownership grant includes an epoch and a start deadline."""
    deadline = format_timestamp(NOW + timedelta(minutes=3))
    story = story_in(S.OFFERED, contract=work_contract(deadline=deadline))
    ran = story.do("work.accept_offer")
    assert ran.result == {"ownership_epoch": 1, "start_deadline": deadline}
    other = story_in(S.OFFERED)
    assert other.do("work.accept_offer").result["start_deadline"] == format_timestamp(
        NOW + START_WINDOW
    )


def test_an_unanswered_essential_question_blocks_acceptance() -> None:
    """R10.1-02, R10.1-03: the worker raises essential ambiguity in the conversation and cannot
    accept while it is unanswered; an answer (``in_reply_to``) clears it."""
    story = story_in(S.OFFERED)
    asked = story.do("work.message", essential=True).result["message"]
    story.do("work.message", actor=COORDINATOR)  # chatter that answers nothing
    error = refused(
        story, story.call("work.accept_offer"), ErrorCode.ILLEGAL_TRANSITION, "R10.1-03"
    )
    assert error.details == {"open_questions": [asked]}
    story.do("work.message", actor=COORDINATOR, in_reply_to=asked)
    story.do("work.accept_offer")


def test_a_corrected_contract_resolves_the_essential_question() -> None:
    """R10.1-04: the coordinator resolves it with a new ``work.offer`` of a corrected contract."""
    story = story_in(S.OFFERED)
    story.do("work.message", essential=True)
    refused(story, story.call("work.accept_offer"), ErrorCode.ILLEGAL_TRANSITION, "R10.1-03")
    story.do("work.offer", contract=work_contract(goal="Summarise the 12 November reports"))
    assert story.view()["open_questions"] == []
    story.do("work.accept_offer")


def test_a_late_result_from_a_former_owner_is_recorded_and_changes_nothing() -> None:
    """R11.5-02, R11.5-03, wire§6: the old owner's ``work.submit`` is 202
    ``work.late_result_recorded``; it never completes the item."""
    story = story_in(S.ACTIVE)
    late = story.call("work.submit")
    _re_offered_to_other_worker(story)
    before = story.view()
    ran = story.run(late)
    assert ran.status == 202
    assert ran.types == ["work.late_result_recorded"]
    assert ran.events[0][1]["former_owner"] == WORKER
    assert ran.events[0][1]["current_ownership_epoch"] == 2
    assert ran.result == {"late_result": True, "state": S.QUEUED}
    after = story.view()
    assert after["state"] == before["state"] == S.QUEUED
    assert after["owner"] == OTHER_WORKER
    assert after["submission"] is None
    assert after["late_results"] == 1


def _owner_still_holds(story: WorkStory, until: Any) -> None:
    """A re-offer is refused up to ``until`` and fences the owner from then on."""
    offer = story.call("work.offer", workers=(OTHER_WORKER,))
    before = until - timedelta(seconds=1)
    refused(story, offer, ErrorCode.ILLEGAL_TRANSITION, "R10.2-03", at=before)
    ran = driver_of(story).run(offer, at=until)
    assert ran.events[0][1]["fenced_owner"] == WORKER


def test_a_checkpoint_keeps_a_bounded_ownership_lease() -> None:
    """R10.2-08, R11.3-13: a checkpoint releases execution but the owner keeps the item for a
    fresh start window — even after working longer than the window of its acceptance."""
    story = story_in(S.ACTIVE)
    for minute in (4, 8, 12):
        move_clock(story, NOW + timedelta(minutes=minute))
        story.do("lease.renew")
    checkpointed = NOW + timedelta(minutes=13)
    move_clock(story, checkpointed)
    ran = story.do("work.checkpoint")
    assert ran.events[0][1]["start_deadline"] == format_timestamp(checkpointed + START_WINDOW)
    _owner_still_holds(story, checkpointed + START_WINDOW)


def test_unblocking_to_queued_gives_the_owner_time_to_start() -> None:
    """R10.2-10, R11.4-05: re-queued after a long block, the owner has a fresh start window."""
    story = story_in(S.BLOCKED)
    unblocked = NOW + timedelta(minutes=25)
    move_clock(story, unblocked)
    story.do("work.unblock", to=S.QUEUED)
    assert story.view()["start_deadline"] == format_timestamp(unblocked + START_WINDOW)
    _owner_still_holds(story, unblocked + START_WINDOW)


def test_a_second_child_mission_while_the_first_runs_is_refused() -> None:
    """R10.2-15: a blocked WorkItem waits for one linked child; a second would orphan it."""
    story = story_in(S.BLOCKED, linked=True)
    before = story.view
    with pytest.raises(ProtocolError) as refused:
        story.do("mission.create_child")
    assert refused.value.code is ErrorCode.ILLEGAL_TRANSITION
    assert refused.value.requirement == "R10.2-15"
    assert story.view == before
