"""Leases over time, decided purely: when an item falls due (``WorkItem.due()``), the
authority's ``work.reassign`` (R11.5-01, R11.3-09, R11.4-05) and ``lease.revoke`` (R11.3-10),
and the bounds of ``lease_ttl_s`` and ``start_within_s``.

Every refusal is checked to decide nothing (the group's state and sequence unchanged): a
sweep that read a stale candidate must not change anything under the lock.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from missionweave.protocol import states as S
from missionweave.protocol.errors import ErrorCode
from missionweave.protocol.timefmt import format_timestamp
from missionweave.protocol.work.checks import (
    BLOCKED_LEASE,
    LEASE_TTL,
    MAX_LEASE_TTL_S,
    MAX_START_WINDOW_S,
    START_WINDOW,
)
from missionweave.protocol.work.items import (
    BLOCKED_LEASE_EXPIRED,
    LEASE_EXPIRED,
    START_DEADLINE_MISSED,
    WorkItem,
)
from missionweave.protocol.work.leases import (
    REOFFER_WINDOW,
    reassign_command_id,
    revoke_command_id,
)

from .deciders import NOW
from .lease_stories import (
    BYSTANDER,
    MICROSECOND,
    active,
    at_time,
    clock,
    driver_of,
    in_state,
    item,
    offered,
    owner_fail,
    reassign,
    refused,
    revoke,
    with_body,
)
from .work_scenarios import OTHER_WORKER, SESSION_EPOCH, WORKER, WorkStory, work_contract

LATER = NOW + timedelta(minutes=1)


def ran_sequence_of_start(story: WorkStory) -> int:
    """The sequence of the item's latest ``work.started`` (from its history)."""
    starts = [h["sequence"] for h in item(story)["history"] if h["type"] == "work.started"]
    return starts[-1]


def _expire(story: WorkStory) -> None:
    clock(story, at_time(item(story)["lease"]["expires_at"]))


def due_of(story: WorkStory) -> tuple[str, str] | None:
    return WorkItem.from_dict(item(story)).due()


# --- when an item falls due ----------------------------------------------------------------


def test_an_active_item_falls_due_when_its_lease_expires() -> None:
    """R11.3-09, R11.5-01: an active lease's expiry is when the authority may act."""
    story = active()
    lease = item(story)["lease"]
    assert lease["expires_at"] == format_timestamp(NOW + LEASE_TTL)
    assert due_of(story) == (lease["expires_at"], LEASE_EXPIRED)


def test_a_queued_owner_falls_due_at_its_start_deadline() -> None:
    """R11.3-02, R11.5-01: an accepted item not started by its start deadline."""
    story = offered()
    story.do("work.accept_offer")
    deadline = format_timestamp(NOW + START_WINDOW)
    assert item(story)["start_deadline"] == deadline
    assert due_of(story) == (deadline, START_DEADLINE_MISSED)


def test_a_blocked_owner_falls_due_when_its_bounded_blocked_lease_ends() -> None:
    """R11.4-05: ownership survives a block for ``BLOCKED_LEASE`` only."""
    story = active()
    clock(story, LATER)
    story.do("work.block")
    assert due_of(story) == (format_timestamp(LATER + BLOCKED_LEASE), BLOCKED_LEASE_EXPIRED)


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        (S.OPEN, None),  # re-opened: no owner
        (S.OFFERED, None),
        (S.QUEUED, "start_deadline"),
        (S.ACTIVE, "lease"),
        (S.BLOCKED, "blocked"),
        (S.SUBMITTED, None),
        (S.VERIFIED, None),
        (S.FAILED, None),
        (S.CANCELLED, None),
    ],
)
def test_due_in_every_state(state: str, expected: str | None) -> None:
    """R11.5-01, R11.3-02, R11.3-09, R11.4-05: only an owner's queued, active or blocked item
    is ever due; an item without an owner or in review or finished never is."""
    story = in_state(state)
    view = item(story)
    due = WorkItem.from_dict(view).due()
    if expected is None:
        assert due is None
    elif expected == "start_deadline":
        assert due == (view["start_deadline"], START_DEADLINE_MISSED)
    elif expected == "lease":
        assert due == (view["lease"]["expires_at"], LEASE_EXPIRED)
    else:
        blocked_at = at_time(view["blocked_at"])
        assert due == (format_timestamp(blocked_at + BLOCKED_LEASE), BLOCKED_LEASE_EXPIRED)


def test_a_block_while_a_child_mission_runs_never_falls_due() -> None:
    """R10.2-15: the owner's item is protected while its linked child mission runs."""
    story = in_state(S.BLOCKED, linked=True)
    assert item(story)["child"]["status"] == "running"
    assert due_of(story) is None


# --- work.reassign: the three reasons --------------------------------------------------------


def test_an_expired_lease_is_recorded_then_the_item_reassigned_and_re_offered() -> None:
    """R11.5-01, R11.3-09: at the lease's expiry the authority appends ``lease.expired``, then
    ``work.reassigned`` (the owner fenced), then ``work.offered`` to the next eligible worker
    — in that order, as one decision."""
    story = active((WORKER, OTHER_WORKER))
    lease = item(story)["lease"]
    due = at_time(lease["expires_at"])
    clock(story, due)
    ran = story.run(reassign(story, LEASE_EXPIRED))
    assert ran.types == ["lease.expired", "work.reassigned", "work.offered"]
    expired, reassigned, reoffer = (payload for _type, payload in ran.events)
    assert expired == {
        "work_item": story.item,
        "lease_id": lease["lease_id"],
        "agent": WORKER,
        "ownership_epoch": 1,
        "expires_at": lease["expires_at"],
    }
    assert reassigned == {
        "work_item": story.item,
        "reason": LEASE_EXPIRED,
        "from_owner": WORKER,
        "ownership_epoch": 1,
        "lease_id": lease["lease_id"],
        "resume_from": None,
        "offered_to": OTHER_WORKER,
    }
    [offer] = reoffer["offers"]
    assert offer["worker"] == OTHER_WORKER
    assert offer["expires_at"] == format_timestamp(due + REOFFER_WINDOW)
    assert reoffer["mode"] == "sequential"
    assert ran.result == {
        "work_item": story.item,
        "offered_to": OTHER_WORKER,
        "offer": offer["offer"],
    }

    after = item(story)
    assert after["state"] == S.OFFERED
    assert after["owner"] is None
    assert after["former_owners"] == [WORKER]
    assert after["reassignments"] == 1
    assert after["lease"]["status"] == "expired"
    assert after["lease"]["closed_at"] == format_timestamp(due)
    assert after["lease"]["closed_by"] == "lease.expired"
    # R11.5-01: the next owner holds a higher ownership epoch
    accepted = story.do("work.accept_offer", worker=OTHER_WORKER, offer=offer["offer"])
    assert accepted.events[0][1]["ownership_epoch"] == 2


def test_a_missed_start_deadline_reassigns_without_a_lease_event() -> None:
    """R11.3-02, R11.5-01: the owner never started; nothing to expire, so no ``lease.expired``."""
    story = offered((WORKER, OTHER_WORKER))
    story.do("work.accept_offer")
    clock(story, NOW + START_WINDOW)
    ran = story.run(reassign(story, START_DEADLINE_MISSED))
    assert ran.types == ["work.reassigned", "work.offered"]
    assert ran.events[0][1]["lease_id"] is None
    assert item(story)["state"] == S.OFFERED
    assert item(story)["start_deadline"] is None


def test_an_outstayed_blocked_lease_reassigns_from_the_block_checkpoint() -> None:
    """R11.4-05, R11.4-06, R11.5-01: reassignment resumes from the block's checkpoint."""
    story = active((WORKER, OTHER_WORKER))
    story.do("work.block")
    clock(story, NOW + BLOCKED_LEASE)
    ran = story.run(reassign(story, BLOCKED_LEASE_EXPIRED))
    assert ran.types == ["work.reassigned", "work.offered"]
    resume = ran.events[0][1]["resume_from"]
    assert resume["ref"] == "ckpt-1"
    after = item(story)
    assert after["state"] == S.OFFERED
    assert after["blocked_at"] is None
    assert after["lease"]["status"] == "released"  # released by the block, not revoked again


def test_reassignment_resumes_from_the_last_checkpoint() -> None:
    """R11.5-01: ``work.reassigned`` names the last durable checkpoint to resume from."""
    story = active((WORKER, OTHER_WORKER))
    story.do("work.checkpoint")
    story.do("work.start")
    lease = item(story)["lease"]
    clock(story, at_time(lease["expires_at"]))
    ran = story.run(reassign(story, LEASE_EXPIRED))
    resume = ran.events[1][1]["resume_from"]
    assert resume["ref"] == "ckpt-1"
    assert resume["sequence"] < ran_sequence_of_start(story)


def test_a_fenced_owners_lease_never_passes_for_the_new_owners_current_lease() -> None:
    """R11.3-03, R11.3-04, R11.3-05: a lease is bound to its ownership epoch. After the
    reassignment the new owner has no lease until it starts; naming the fenced owner's lease
    id is STALE_LEASE (not a way to fail the item before starting), and a missed start names
    no lease at all."""
    story = active((WORKER, OTHER_WORKER))
    old = item(story)["lease"]["lease_id"]
    _expire(story)
    offer = story.run(reassign(story, LEASE_EXPIRED)).result["offer"]
    story.do("work.accept_offer", worker=OTHER_WORKER, offer=offer)
    after = item(story)
    assert (after["owner"], after["ownership_epoch"], after["lease"]) == (OTHER_WORKER, 2, None)
    assert [lease["lease_id"] for lease in after["lease_history"]] == [old]
    failure = owner_fail(story, lease_id=old)
    assert failure.actor == OTHER_WORKER
    refused(story, failure, ErrorCode.STALE_LEASE, "R11.3-05")
    renew = with_body(story.call("lease.renew"), lease_id=old)
    refused(story, renew, ErrorCode.STALE_LEASE, "R11.3-05")
    clock(story, at_time(after["start_deadline"]))
    missed = story.run(reassign(story, START_DEADLINE_MISSED))
    assert missed.events[0][1]["lease_id"] is None


def test_a_started_lease_is_bound_to_agent_session_item_epoch_a_stable_id_and_expiry() -> None:
    """R0-11, R11.3-03 (MWP-WRK-013): ``work.start`` gives a lease bound to the owner agent,
    its session epoch, the WorkItem and the ownership epoch, with an id and an expiry; a
    renewal moves the expiry and keeps the id."""
    story = offered()
    story.do("work.accept_offer", worker=WORKER)
    clock(story, LATER)
    lease = story.do("work.start").events[0][1]["lease"]
    assert {name: value for name, value in lease.items() if name != "lease_id"} == {
        "agent": WORKER,
        "session_epoch": SESSION_EPOCH,
        "work_item": story.item,
        "ownership_epoch": 1,
        "started_at": format_timestamp(LATER),
        "expires_at": format_timestamp(LATER + LEASE_TTL),
    }
    assert lease["lease_id"]
    current = item(story)["lease"]
    assert (current["lease_id"], current["agent"]) == (lease["lease_id"], WORKER)
    clock(story, LATER + timedelta(minutes=2))
    story.do("lease.renew")
    renewed = item(story)["lease"]
    assert renewed["lease_id"] == lease["lease_id"]
    assert renewed["expires_at"] == format_timestamp(LATER + timedelta(minutes=2) + LEASE_TTL)


# --- work.reassign: refusals -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("reason", "setup"),
    [
        (LEASE_EXPIRED, "active"),
        (START_DEADLINE_MISSED, "queued"),
        (BLOCKED_LEASE_EXPIRED, "blocked"),
    ],
)
def test_a_reassignment_before_the_due_time_is_refused(reason: str, setup: str) -> None:
    """R11.5-01: one microsecond early is ILLEGAL_TRANSITION and decides nothing; at the due
    time itself it is decided."""
    story = offered((WORKER, OTHER_WORKER))
    story.do("work.accept_offer")
    if setup != "queued":
        story.do("work.start")
    if setup == "blocked":
        story.do("work.block")
    due, why = due_of(story) or ("", "")
    assert why == reason
    clock(story, at_time(due) - MICROSECOND)
    error = refused(story, reassign(story, reason), ErrorCode.ILLEGAL_TRANSITION, "R11.5-01")
    assert list(error.details["due"]) == [due, reason]
    clock(story, at_time(due))
    assert story.run(reassign(story, reason)).types[-2:] == ["work.reassigned", "work.offered"]


def test_a_reassignment_for_an_epoch_that_moved_on_is_refused() -> None:
    """R11.5-01, R11.3-01: a sweep that read epoch 1 must not fence the epoch-2 owner."""
    story = active((WORKER, OTHER_WORKER))
    clock(story, at_time(item(story)["lease"]["expires_at"]))
    stale = reassign(story, LEASE_EXPIRED)
    ran = story.run(stale)
    offer = ran.result["offer"]
    story.do("work.accept_offer", worker=OTHER_WORKER, offer=offer)
    story.do("work.start")
    assert story.epoch == 2
    clock(story, at_time(item(story)["lease"]["expires_at"]))
    refused(story, stale, ErrorCode.ILLEGAL_TRANSITION, "R11.5-01")
    refused(story, reassign(story, LEASE_EXPIRED, epoch=3), ErrorCode.ILLEGAL_TRANSITION)
    # each epoch is fenced once: the sweep's command id names the epoch
    assert reassign_command_id(story.item, 1) != reassign_command_id(story.item, 2)
    assert reassign_command_id(story.item, 2) == reassign_command_id(story.item, 2)


def test_a_renewed_lease_is_not_reassigned_at_its_first_expiry() -> None:
    """R11.3-03, R11.5-01: a renewal moves the due time; a sweep holding the old one changes
    nothing until the new expiry."""
    story = active()
    first_expiry = NOW + LEASE_TTL
    clock(story, NOW + timedelta(minutes=4))
    story.do("lease.renew")
    renewed = at_time(item(story)["lease"]["expires_at"])
    assert renewed == NOW + timedelta(minutes=4) + LEASE_TTL
    clock(story, first_expiry + timedelta(seconds=30))
    refused(story, reassign(story, LEASE_EXPIRED), ErrorCode.ILLEGAL_TRANSITION, "R11.5-01")
    clock(story, renewed)
    assert story.run(reassign(story, LEASE_EXPIRED)).types[0] == "lease.expired"


def test_a_reassignment_for_another_reason_than_the_due_one_is_refused() -> None:
    """R11.5-01: a checkpoint after the sweep read the item changes why (and when) it is due."""
    story = active()
    stale = reassign(story, LEASE_EXPIRED)
    story.do("work.checkpoint")
    clock(story, NOW + LEASE_TTL)
    refused(story, stale, ErrorCode.ILLEGAL_TRANSITION, "R11.5-01")
    refused(story, reassign(story, BLOCKED_LEASE_EXPIRED), ErrorCode.ILLEGAL_TRANSITION)


@pytest.mark.parametrize("state", [S.OPEN, S.OFFERED, S.SUBMITTED, S.VERIFIED, S.FAILED])
def test_reassigning_outside_queued_active_blocked_is_illegal(state: str) -> None:
    """R11.5-01, R10.2-22: the row's sources are queued, active and blocked only."""
    story = in_state(state)
    clock(story, NOW + timedelta(days=1))
    error = refused(
        story, reassign(story, LEASE_EXPIRED, epoch=1), ErrorCode.ILLEGAL_TRANSITION, "R11.5-01"
    )
    assert error.details["state"] == state


# --- work.reassign: who is next ----------------------------------------------------------


def test_with_no_eligible_worker_the_item_goes_back_to_open() -> None:
    """R11.5-01: nobody else was offered this revision, so the item is ``open`` for the
    coordinator, and no offer is appended."""
    story = active((WORKER,))
    _expire(story)
    ran = story.run(reassign(story, LEASE_EXPIRED))
    assert ran.types == ["lease.expired", "work.reassigned"]
    assert ran.events[1][1]["offered_to"] is None
    assert ran.result == {"work_item": story.item, "offered_to": None}
    after = item(story)
    assert (after["state"], after["owner"]) == (S.OPEN, None)
    assert WorkItem.from_dict(after).due() is None


def test_the_next_worker_is_the_first_offered_who_neither_rejected_nor_owned_it() -> None:
    """R11.5-01: in offer order, skipping a worker who rejected and the owners so far."""
    story = offered((OTHER_WORKER, WORKER, BYSTANDER))
    story.do("work.reject_offer", worker=OTHER_WORKER)
    story.do("work.accept_offer", worker=WORKER)
    story.do("work.start")
    _expire(story)
    ran = story.run(reassign(story, LEASE_EXPIRED))
    assert ran.events[1][1]["offered_to"] == BYSTANDER


def test_former_owners_are_never_offered_the_item_again() -> None:
    """R11.5-01, R11.3-01: the second reassignment skips the first fenced owner too."""
    story = active((WORKER, OTHER_WORKER, BYSTANDER))
    _expire(story)
    first = story.run(reassign(story, LEASE_EXPIRED))
    assert first.events[1][1]["offered_to"] == OTHER_WORKER
    story.do("work.accept_offer", worker=OTHER_WORKER, offer=first.result["offer"])
    story.do("work.start")
    _expire(story)
    second = story.run(reassign(story, LEASE_EXPIRED))
    assert second.events[1][1]["from_owner"] == OTHER_WORKER
    assert second.events[1][1]["offered_to"] == BYSTANDER
    assert item(story)["former_owners"] == [WORKER, OTHER_WORKER]
    assert item(story)["reassignments"] == 2


def test_offers_of_an_earlier_contract_revision_do_not_count() -> None:
    """R10.1-05, R11.5-01: a worker offered only the superseded contract is not eligible."""
    story = offered((OTHER_WORKER,))
    corrected = work_contract(goal="Summarise the November incident reports, with totals")
    story.do("work.offer", workers=(WORKER,), contract=corrected)
    assert story.revision == 2
    story.do("work.accept_offer")
    story.do("work.start")
    _expire(story)
    ran = story.run(reassign(story, LEASE_EXPIRED))
    assert ran.events[1][1]["offered_to"] is None


def test_the_re_offer_keeps_the_coordinators_start_window() -> None:
    """R11.3-02, R11.5-01: the start window the coordinator gave (``start_within_s``) carries
    to the authority's re-offer, so the next owner gets the same time to start."""
    story = active((WORKER, OTHER_WORKER), start_within_s=90)
    _expire(story)
    ran = story.run(reassign(story, LEASE_EXPIRED))
    assert ran.events[2][1]["start_within_s"] == 90
    accepted_at = driver_of(story).at + timedelta(seconds=5)
    clock(story, accepted_at)
    accept = story.do("work.accept_offer", worker=OTHER_WORKER, offer=ran.result["offer"])
    deadline = accept.events[0][1]["start_deadline"]
    assert deadline == format_timestamp(accepted_at + timedelta(seconds=90))
    assert due_of(story) == (deadline, START_DEADLINE_MISSED)


def test_without_a_start_window_the_re_offer_uses_the_default() -> None:
    """R11.3-02: no ``start_within_s`` on the original offer, none on the re-offer."""
    story = active((WORKER, OTHER_WORKER))
    _expire(story)
    ran = story.run(reassign(story, LEASE_EXPIRED))
    assert "start_within_s" not in ran.events[2][1]
    accept = story.do("work.accept_offer", worker=OTHER_WORKER, offer=ran.result["offer"])
    assert accept.events[0][1]["start_deadline"] == format_timestamp(
        driver_of(story).at + START_WINDOW
    )


# --- lease.revoke: session replacement ---------------------------------------------------------


def test_a_replaced_session_revokes_the_lease_and_queues_the_item_for_the_same_owner() -> None:
    """R11.3-10, R11.3-09: ``lease.revoked`` closes the lease; the item is ``queued`` for the
    same owner and epoch with a fresh start deadline."""
    story = active(start_within_s=120)
    lease = item(story)["lease"]
    clock(story, LATER)
    ran = story.run(revoke(story, session_epoch=2))
    assert ran.types == ["lease.revoked"]
    assert ran.events[0][1] == {
        "work_item": story.item,
        "lease_id": lease["lease_id"],
        "agent": WORKER,
        "reason": "session_replaced",
        "session_epoch": 1,
        "replaced_by_session_epoch": 2,
        "start_deadline": format_timestamp(LATER + timedelta(seconds=120)),
    }
    after = item(story)
    assert (after["state"], after["owner"], after["ownership_epoch"]) == (S.QUEUED, WORKER, 1)
    assert after["start_deadline"] == format_timestamp(LATER + timedelta(seconds=120))
    assert after["lease"]["status"] == "revoked"
    assert after["lease"]["closed_at"] == format_timestamp(LATER)
    assert after["lease"]["closed_by"] == "lease.revoked"
    assert due_of(story) == (after["start_deadline"], START_DEADLINE_MISSED)


def test_the_new_session_starts_with_a_fresh_lease_and_history_keeps_the_revoked_one() -> None:
    """R11.3-10, R11.3-03: the new runtime starts with a new lease id bound to the new session
    epoch; the revoked lease stays in the lease history with when and why it closed; its id
    is then STALE_LEASE (R11.3-05)."""
    story = active()
    old = item(story)["lease"]
    clock(story, LATER)
    story.run(revoke(story, session_epoch=2))
    driver_of(story).session_epoch = 2
    clock(story, LATER + timedelta(seconds=1))
    started = story.do("work.start")
    new = started.events[0][1]["lease"]
    assert new["lease_id"] != old["lease_id"]
    assert new["session_epoch"] == 2
    assert new["ownership_epoch"] == old["ownership_epoch"] == 1
    [closed] = item(story)["lease_history"]
    assert closed["lease_id"] == old["lease_id"]
    assert closed["session_epoch"] == 1
    assert (closed["status"], closed["closed_by"]) == ("revoked", "lease.revoked")
    assert closed["closed_at"] == format_timestamp(LATER)
    stale = with_body(story.call("lease.renew"), lease_id=old["lease_id"])
    refused(story, stale, ErrorCode.STALE_LEASE, "R11.3-05")


def test_the_leases_own_session_epoch_does_not_revoke_it() -> None:
    """R11.3-10: only a newer session replaces the one the lease is bound to."""
    story = active()
    assert item(story)["lease"]["session_epoch"] == 1
    refused(story, revoke(story, session_epoch=1), ErrorCode.ILLEGAL_TRANSITION, "R11.3-10")
    zero = revoke(story, session_epoch=0)
    assert refused(story, zero, ErrorCode.MALFORMED).details == {"path": "$.session_epoch"}


def test_a_lease_started_by_the_new_session_survives_a_late_revocation() -> None:
    """R11.3-10: a revocation computed for epoch 2 never touches a lease of session 2."""
    story = active()
    story.run(revoke(story, session_epoch=2))
    driver_of(story).session_epoch = 2
    story.do("work.start")
    refused(story, revoke(story, session_epoch=2), ErrorCode.ILLEGAL_TRANSITION, "R11.3-10")


def test_a_lease_that_is_not_active_or_not_current_is_not_revoked() -> None:
    """R11.3-10, R11.3-09: a released lease (checkpoint) or an unknown lease id is no grant
    to revoke: ILLEGAL_TRANSITION, nothing decided."""
    story = active()
    refused(
        story,
        revoke(story, lease_id="lease_someone_else"),
        ErrorCode.ILLEGAL_TRANSITION,
        "R11.3-10",
    )
    story.do("work.checkpoint")
    refused(story, revoke(story), ErrorCode.ILLEGAL_TRANSITION, "R11.3-10")
    assert revoke_command_id("lease_x", 2) == revoke_command_id("lease_x", 2)
    assert revoke_command_id("lease_x", 2) != revoke_command_id("lease_x", 3)


# --- bounds of lease_ttl_s and start_within_s ----------------------------------------------------

BAD_SECONDS = [0, -5, True, 1.5, "60", [60]]


@pytest.mark.parametrize("value", [*BAD_SECONDS, MAX_LEASE_TTL_S + 1])
@pytest.mark.parametrize("command", ["work.start", "lease.renew"])
def test_lease_ttl_outside_its_bounds_is_malformed(command: str, value: object) -> None:
    """R11.3-03, wire§9: ``lease_ttl_s`` is a whole number of seconds from 1 to 3600."""
    story = offered()
    story.do("work.accept_offer")
    if command == "lease.renew":
        story.do("work.start")
    error = refused(story, with_body(story.call(command), lease_ttl_s=value), ErrorCode.MALFORMED)
    assert error.details == {"path": "$.lease_ttl_s"}


@pytest.mark.parametrize("seconds", [1, MAX_LEASE_TTL_S])
def test_lease_ttl_at_its_bounds_sets_the_expiry(seconds: int) -> None:
    """R11.3-03: the lease runs ``lease_ttl_s`` from now on start and on renewal."""
    story = offered()
    story.do("work.accept_offer")
    started = story.run(with_body(story.call("work.start"), lease_ttl_s=seconds))
    assert started.result["lease"]["expires_at"] == format_timestamp(
        NOW + timedelta(seconds=seconds)
    )
    clock(story, NOW + timedelta(microseconds=500))
    renewed = story.run(with_body(story.call("lease.renew"), lease_ttl_s=seconds))
    expires = format_timestamp(NOW + timedelta(microseconds=500, seconds=seconds))
    assert renewed.result["lease"]["expires_at"] == expires
    assert item(story)["lease"]["expires_at"] == expires


@pytest.mark.parametrize("value", [*BAD_SECONDS, MAX_START_WINDOW_S + 1])
def test_start_within_outside_its_bounds_is_malformed(value: object) -> None:
    """R11.3-02, wire§9: ``start_within_s`` is a whole number of seconds from 1 to 7 days."""
    story = offered()
    call = with_body(story.call("work.offer", workers=(OTHER_WORKER,)), start_within_s=value)
    error = refused(story, call, ErrorCode.MALFORMED)
    assert error.details == {"path": "$.start_within_s"}


@pytest.mark.parametrize("seconds", [1, MAX_START_WINDOW_S])
def test_start_within_at_its_bounds_sets_the_start_deadline(seconds: int) -> None:
    """R11.3-02: the acceptance's start deadline is ``start_within_s`` after it."""
    story = offered(start_within_s=seconds)
    accepted = story.do("work.accept_offer")
    assert accepted.events[0][1]["start_deadline"] == format_timestamp(
        NOW + timedelta(seconds=seconds)
    )
