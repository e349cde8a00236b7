"""Bounded offline execution, decided purely (R11.5-04..R11.5-13).

A buffered command carries the binding of R11.5-08; the authority checks it against the
historical lease window on its own clock (R11.5-10) and reconciles it with its usage charge in
one decision: the ``resource_usage_recorded`` event naming both sessions first, then the
command's own event (R11.5-11, R11.5-12), or nothing at all (R11.5-13).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from missionweave.protocol import states as S
from missionweave.protocol.budgets import USAGE_RECORDED
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.facts import Command
from missionweave.protocol.missions.model import mission_key
from missionweave.protocol.offline import (
    AFTER_GRACE_DEADLINE,
    AFTER_LEASE_CLOSURE,
    BEFORE_DISCONNECT,
    BEFORE_LEASE,
    BINDING_FIELDS,
    BINDING_PATH,
    CONTACT_WHILE_DISCONNECTED,
    EXTENSION,
    GRACE_TOO_LONG,
    IN_FUTURE,
    LEASE_EXPIRY_MISMATCH,
    MAX_GRACE,
    SESSION_MISMATCH,
    UNKNOWN_LEASE,
    with_ancestry,
)
from missionweave.protocol.timefmt import format_timestamp, parse_timestamp
from missionweave.protocol.work.checks import LEASE_TTL, item_keys
from missionweave.protocol.work.items import work_item_key

from .deciders import GROUP, NOW
from .offline_stories import (
    MINUTE,
    active_story,
    binding,
    buffered,
    driver_of,
    lease_of,
    reconnect,
)
from .work_scenarios import (
    COORDINATOR,
    MISSION,
    OTHER_WORKER,
    WORKER,
    Call,
    WorkStory,
    story_in,
    work_contract,
)

LEASE_END = NOW + LEASE_TTL  # the lease of ``active_story`` expires here
RECONNECT = NOW + 3 * MINUTE


def snapshot(story: WorkStory) -> tuple[int, dict[Any, str]]:
    scenario = driver_of(story).scenario
    return scenario.sequence, {key: repr(value) for key, value in scenario.state.items()}


def refused(story: WorkStory, call: Call, code: ErrorCode) -> ProtocolError:
    """``call`` is refused with ``code`` and decides nothing (no event, no state change)."""
    before = snapshot(story)
    with pytest.raises(ProtocolError) as caught:
        driver_of(story).decide(call)
    assert caught.value.code is code, caught.value
    assert snapshot(story) == before, "a refused buffered command changed something"
    return caught.value


def reconnected(**story: Any) -> WorkStory:
    """Active since NOW, disconnected, reconnected at ``RECONNECT`` (lease revoked)."""
    told = active_story(**story)
    reconnect(told, RECONNECT)
    return told


def outside(story: WorkStory, call: Call, reason: str) -> ProtocolError:
    error = refused(story, call, ErrorCode.OUTSIDE_GRACE_WINDOW)
    assert error.requirement == "R11.5-10"
    assert error.details["reason"] == reason, error.details
    return error


# --- acceptance --------------------------------------------------------------------------


def test_reconnected_progress_charges_usage_first_then_reports_it() -> None:
    """R11.5-09..R11.5-12: buffered progress re-signed with the new session after the
    reconnection revoked its lease is reconciled: the usage event naming both sessions, then
    ``work.progress_reported`` holding the binding."""
    story = reconnected()
    bound = binding(story)
    ran = story.run(buffered(story, "work.progress", bound))
    assert ran.types == [USAGE_RECORDED, "work.progress_reported"]
    charge, progress = (payload for _type, payload in ran.events)
    assert charge["work_item"] == story.item
    assert charge["usage"] == {"tokens": 1500, "compute": 12.5}
    assert charge["charged_missions"] == [MISSION]
    assert charge["historical_session_epoch"] == 1
    assert charge["reconciling_session_epoch"] == 2
    assert charge["lease_id"] == bound["lease_id"]
    assert charge["ownership_epoch"] == 1
    assert charge["agent"] == WORKER
    assert charge["command_type"] == "work.progress"
    assert progress["offline"] == bound
    assert progress["lease_id"] == bound["lease_id"]
    assert ran.result["reconciled"]["usage"] == {"tokens": 1500, "compute": 12.5}
    item = story.view()
    assert item is not None
    assert item["budgets"]["used"] == {"tokens": 1500, "compute": 12.5}
    assert item["state"] == S.QUEUED, "reconciliation changes no state"
    mission = driver_of(story).mission(MISSION)
    assert mission is not None
    assert mission["budgets"]["used"] == {"tokens": 1500, "compute": 12.5}


def test_zero_usage_appends_only_the_commands_own_event() -> None:
    """R11.5-12: a usage event per non-zero delta only; absent dimensions are 0."""
    story = reconnected()
    ran = story.run(buffered(story, "work.progress", binding(story, usage={"tokens": 0})))
    assert ran.types == ["work.progress_reported"]
    assert ran.result["reconciled"]["usage"] == {}


def test_zero_dimensions_are_left_out_of_the_charge() -> None:
    story = reconnected()
    ran = story.run(
        buffered(story, "work.progress", binding(story, usage={"tokens": 5, "money": 0}))
    )
    assert ran.events[0] == (USAGE_RECORDED, ran.events[0][1])
    assert ran.events[0][1]["usage"] == {"tokens": 5}


def test_buffered_checkpoint_records_the_checkpoint_and_changes_no_state() -> None:
    """R11.5-04, R11.5-12: the checkpoint is kept (a reassignment resumes from it, R11.5-01);
    the item stays where the reconnection left it."""
    story = reconnected()
    ran = story.run(buffered(story, "work.checkpoint", binding(story, usage={})))
    assert ran.types == ["work.checkpointed"]
    payload = ran.events[0][1]
    assert "start_deadline" not in payload
    item = story.view()
    assert item is not None
    assert item["state"] == S.QUEUED
    assert item["last_checkpoint"]["ref"] == "offline-ckpt"


def test_buffered_message_is_posted_in_the_bound_conversation() -> None:
    """R11.5-12 "the Message or checkpoint": a buffered work.message."""
    story = reconnected()
    ran = story.run(buffered(story, "work.message", binding(story)))
    assert ran.types == [USAGE_RECORDED, "work.message_posted"]
    assert ran.events[1][1]["message"] == ran.result["message"]
    assert ran.events[1][1]["offline"]["lease_id"] == story.lease_id


def test_a_blip_without_a_new_session_is_reconciled_under_the_still_active_lease() -> None:
    """R11.5-09: without a new session the epochs are unchanged; the lease is still active."""
    story = active_story()
    driver_of(story).at = NOW + 3 * MINUTE
    ran = story.run(buffered(story, "work.progress", binding(story)))
    assert ran.types == [USAGE_RECORDED, "work.progress_reported"]
    item = story.view()
    assert item is not None
    assert (item["state"], item["lease"]["status"]) == (S.ACTIVE, "active")


def test_buffered_exactly_at_the_edges_of_the_window_is_accepted() -> None:
    """R11.5-10: both ends of [lease start, grace deadline] are inside the window."""
    story = active_story()
    grace = LEASE_END + MAX_GRACE
    driver_of(story).at = grace + MINUTE
    for moment in (NOW, grace):
        bound = binding(
            story, disconnected_at=NOW, buffered_at=moment, grace_deadline=grace, usage={}
        )
        story.run(buffered(story, "work.progress", bound))


def test_lease_closed_after_buffering_is_inside_the_window() -> None:
    """R11.5-10: a checkpoint by another path closed the lease *after* this was buffered."""
    story = active_story()
    driver_of(story).at = NOW + 4 * MINUTE
    story.do("work.checkpoint")  # online again: closes the lease at NOW + 4 min
    bound = binding(story, buffered_at=NOW + 3 * MINUTE)
    ran = story.run(buffered(story, "work.progress", bound))
    assert ran.types == [USAGE_RECORDED, "work.progress_reported"]


# --- the binding's shape (R11.5-07, R11.5-08) ----------------------------------------------


@pytest.mark.parametrize("field", BINDING_FIELDS)
def test_every_binding_field_is_required(field: str) -> None:
    """R11.5-08: the binding records every listed field."""
    story = reconnected()
    bound = binding(story)
    del bound[field]
    error = refused(story, buffered(story, "work.progress", bound), ErrorCode.MALFORMED)
    assert error.details["path"] == f"{BINDING_PATH}.{field}"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("agent", "w2"),
        ("agent", "user:olga"),
        ("group", ""),
        ("work_item", 7),
        ("lease_id", None),
        ("session_epoch", "1"),
        ("session_epoch", -1),
        ("session_epoch", True),
        ("ownership_epoch", 0),
        ("disconnected_at", "2026-11-30 10:00:00"),
        ("buffered_at", "2026-11-30T10:00:00+00:00"),
        ("grace_deadline", 1764496800),
        ("lease_expires_at", None),
        ("usage", []),
        ("usage", {"gold": 1}),
        ("usage", {"tokens": -1}),
        ("usage", {"money": "1.0"}),
    ],
)
def test_a_bad_binding_field_is_malformed_at_its_path(field: str, value: Any) -> None:
    story = reconnected()
    bound = {**binding(story), field: value}
    error = refused(story, buffered(story, "work.progress", bound), ErrorCode.MALFORMED)
    assert error.details["path"].startswith(f"{BINDING_PATH}.{field}"), error.details


def test_an_unknown_binding_field_is_malformed() -> None:
    story = reconnected()
    bound = {**binding(story), "note": "hi"}
    error = refused(story, buffered(story, "work.progress", bound), ErrorCode.MALFORMED)
    assert error.details["path"] == f"{BINDING_PATH}.note"


def test_a_binding_that_is_not_an_object_is_malformed() -> None:
    story = reconnected()
    call = buffered(story, "work.progress", binding(story))
    call = Call(call.type, call.actor, call.body, {EXTENSION: ["not", "an", "object"]})
    error = refused(story, call, ErrorCode.MALFORMED)
    assert error.details["path"] == BINDING_PATH


@pytest.mark.parametrize(
    ("field", "value", "requirement"),
    [
        ("agent", OTHER_WORKER, "R11.5-08"),
        ("group", "g-elsewhere", "R11.5-10"),
        ("work_item", "wi-other", "R11.5-10"),
        ("lease_id", "lease-other", "R11.5-10"),
    ],
)
def test_a_binding_naming_another_signer_group_item_or_lease_is_malformed(
    field: str, value: str, requirement: str
) -> None:
    """R11.5-08 / R11.5-10: the binding describes this command: its signer, its group, the
    body's WorkItem (the bound conversation) and the body's lease id."""
    story = reconnected()
    call = buffered(story, "work.progress", binding(story))
    call = Call(call.type, call.actor, call.body, {EXTENSION: {**binding(story), field: value}})
    error = refused(story, call, ErrorCode.MALFORMED)
    assert error.details["path"] == f"{BINDING_PATH}.{field}"
    assert error.requirement == requirement


@pytest.mark.parametrize(
    ("type_", "requirement"),
    [
        ("work.submit", "R11.5-06"),
        ("work.usage", "R11.5-04"),
        ("lease.renew", "R11.5-04"),
        ("work.block", "R11.5-04"),
    ],
)
def test_only_progress_checkpoints_and_messages_may_be_buffered(
    type_: str, requirement: str
) -> None:
    """R11.5-04 (progress and checkpoints), R11.5-12 (messages); a submission waits for the
    reconciliation (R11.5-06): any other type with the binding is MALFORMED."""
    story = reconnected()
    call = story.call(type_)
    call = Call(call.type, call.actor, call.body, {EXTENSION: binding(story)})
    error = refused(story, call, ErrorCode.MALFORMED)
    assert error.requirement == requirement
    assert error.details["path"] == BINDING_PATH


def test_a_work_start_with_the_binding_is_malformed() -> None:
    """R11.5-05: no new WorkItem is started offline."""
    story = reconnected()
    call = story.call("work.start")
    call = Call(call.type, call.actor, call.body, {EXTENSION: binding(story)})
    assert refused(story, call, ErrorCode.MALFORMED).requirement == "R11.5-05"


# --- the historical window (R11.5-10) ------------------------------------------------------


def test_a_lease_id_unknown_to_the_item_is_outside_any_window() -> None:
    story = reconnected()
    bound = binding(story, lease_id="lease-made-up")
    outside(story, buffered(story, "work.progress", bound), UNKNOWN_LEASE)


def test_the_lease_of_another_work_item_is_outside_this_ones_window() -> None:
    """R11.5-10 "outside the bound WorkItem conversation": a lease of wi-2 for wi-1."""
    story = active_story()
    other = story_in(S.ACTIVE, driver_of(story), item="wi-2", proposal="p-2")
    other_lease = other.lease_id
    assert driver_of(story).scenario.state[work_item_key("wi-2")].lease_named(other_lease)
    driver_of(story).at = RECONNECT
    bound = binding(story, lease_id=other_lease)
    call = buffered(story, "work.progress", bound)
    outside(story, call, UNKNOWN_LEASE)


def test_a_session_epoch_the_lease_was_not_bound_to_is_outside() -> None:
    story = reconnected()
    bound = binding(story, session_epoch=2)
    outside(story, buffered(story, "work.progress", bound), SESSION_MISMATCH)


def test_a_lease_expiry_later_than_recorded_is_outside() -> None:
    story = reconnected()
    claimed = LEASE_END + MINUTE
    bound = binding(story, lease_expires_at=format_timestamp(claimed))
    outside(story, buffered(story, "work.progress", bound), LEASE_EXPIRY_MISMATCH)


def test_a_grace_longer_than_the_maximum_is_outside() -> None:
    story = reconnected()
    grace = LEASE_END + MAX_GRACE + timedelta(microseconds=1)
    bound = binding(story, grace_deadline=grace)
    outside(story, buffered(story, "work.progress", bound), GRACE_TOO_LONG)


@pytest.mark.parametrize("field", ["disconnected_at", "buffered_at"])
def test_times_in_the_future_of_the_authority_clock_are_outside(field: str) -> None:
    story = reconnected()
    later = RECONNECT + timedelta(microseconds=1)
    times = {"disconnected_at": NOW + MINUTE, "buffered_at": later}
    if field == "disconnected_at":
        times = {"disconnected_at": later, "buffered_at": later}
    outside(story, buffered(story, "work.progress", binding(story, **times)), IN_FUTURE)


@pytest.mark.parametrize("field", ["disconnected_at", "buffered_at"])
def test_times_before_the_lease_started_are_outside(field: str) -> None:
    story = reconnected()
    early = NOW - timedelta(microseconds=1)
    times = {"disconnected_at": early, "buffered_at": NOW + MINUTE}
    if field == "buffered_at":
        times = {"disconnected_at": early, "buffered_at": early}
    outside(story, buffered(story, "work.progress", binding(story, **times)), BEFORE_LEASE)


def test_buffered_before_the_disconnection_is_outside() -> None:
    story = reconnected()
    bound = binding(story, disconnected_at=NOW + 2 * MINUTE, buffered_at=NOW + MINUTE)
    outside(story, buffered(story, "work.progress", bound), BEFORE_DISCONNECT)


def _renewed_at(story: WorkStory, at: Any) -> None:
    """The owner renews its live lease at ``at`` (authority clock), as an online worker does."""
    driver_of(story).at = at
    lease = lease_of(story)
    story.run(Call("lease.renew", WORKER, {"work_item": story.item, "lease_id": lease["lease_id"]}))


def test_a_disconnection_before_a_renewal_the_authority_saw_is_outside() -> None:
    """Issue 16 §7, R11.5-10: the authority renewed the lease at NOW + 2 min, so the worker
    was connected then; a binding claiming it was offline from NOW + 1 min (and buffering at
    NOW + 3 min) backdates its disconnection, and is refused with the contact it contradicts."""
    story = active_story()
    _renewed_at(story, NOW + 2 * MINUTE)
    reconnect(story, NOW + 4 * MINUTE)
    bound = binding(story, disconnected_at=NOW + MINUTE, buffered_at=NOW + 3 * MINUTE)
    error = outside(story, buffered(story, "work.progress", bound), CONTACT_WHILE_DISCONNECTED)
    assert parse_timestamp(error.details["last_contact"]) == NOW + 2 * MINUTE


def test_a_disconnection_at_or_after_the_last_renewal_is_inside() -> None:
    """The bound is the last contact before ``buffered_at``, inclusive; and a renewal after
    ``buffered_at`` (the worker came back, renewed, then sent its buffer) bounds nothing."""
    story = active_story()
    _renewed_at(story, NOW + 2 * MINUTE)
    _renewed_at(story, NOW + 5 * MINUTE)
    driver_of(story).at = NOW + 6 * MINUTE
    at_renewal = binding(story, disconnected_at=NOW + 2 * MINUTE, buffered_at=NOW + 3 * MINUTE)
    assert story.run(buffered(story, "work.progress", at_renewal)).types[-1] == (
        "work.progress_reported"
    )


def test_buffered_after_the_grace_deadline_is_outside() -> None:
    """The lease expired unnoticed (no sweep yet): the grace deadline still bounds it."""
    story = active_story()
    driver_of(story).at = LEASE_END + 10 * MINUTE
    bound = binding(
        story,
        buffered_at=LEASE_END + 6 * MINUTE,
        grace_deadline=LEASE_END + 5 * MINUTE,
    )
    outside(story, buffered(story, "work.progress", bound), AFTER_GRACE_DEADLINE)


def test_buffered_after_the_lease_closed_is_a_stale_lease() -> None:
    """R11.5-10 "after lease closure": the reconnection revoked the lease at RECONNECT; a
    command 'buffered' after that was produced under no lease at all."""
    story = reconnected()
    driver_of(story).at = RECONNECT + MINUTE
    bound = binding(story, buffered_at=RECONNECT + timedelta(microseconds=1))
    error = refused(story, buffered(story, "work.progress", bound), ErrorCode.STALE_LEASE)
    assert error.requirement == "R11.5-10"
    assert error.details["reason"] == AFTER_LEASE_CLOSURE
    assert parse_timestamp(error.details["closed_at"]) == RECONNECT
    assert error.details["closed_by"] == "lease.revoked"


def test_buffered_after_an_online_checkpoint_released_the_lease_is_a_stale_lease() -> None:
    story = active_story()
    driver_of(story).at = NOW + MINUTE
    story.do("work.checkpoint")
    driver_of(story).at = NOW + 3 * MINUTE
    bound = binding(story, buffered_at=NOW + 2 * MINUTE)
    error = refused(story, buffered(story, "work.progress", bound), ErrorCode.STALE_LEASE)
    assert error.details["closed_by"] == "work.checkpointed"


def test_an_earlier_lease_of_the_same_owner_keeps_its_own_window() -> None:
    """The owner restarted under a new lease: a command buffered under the first one, before
    it closed, is still reconciled against *that* lease's window."""
    story = active_story()
    first = lease_of(story)
    bound = binding(story, buffered_at=NOW + MINUTE, disconnected_at=NOW + MINUTE)
    driver_of(story).at = NOW + 2 * MINUTE
    story.do("work.checkpoint")
    story.do("work.start")
    assert story.lease_id != first["lease_id"]
    driver_of(story).at = NOW + 3 * MINUTE
    ran = story.run(buffered(story, "work.progress", bound))
    assert ran.events[-1][1]["offline"]["lease_id"] == first["lease_id"]


# --- changed owner (R11.5-10) ----------------------------------------------------------------


def _expired_and_reassigned() -> tuple[WorkStory, dict[str, Any]]:
    story = active_story()
    bound = binding(story)
    driver_of(story).at = LEASE_END + MINUTE
    body = {"work_item": story.item, "ownership_epoch": 1, "reason": "lease_expired"}
    story.run(Call("work.reassign", "authority", body))
    return story, bound


def test_a_former_owner_is_stale_ownership() -> None:
    """R11.5-10 "for a changed owner": the lease expired and the item was reassigned."""
    story, bound = _expired_and_reassigned()
    reconnect(story, LEASE_END + 2 * MINUTE, agent=WORKER)
    error = refused(story, buffered(story, "work.progress", bound), ErrorCode.STALE_OWNERSHIP)
    assert error.requirement == "R11.5-10"


def test_an_owner_again_under_a_new_epoch_is_stale_ownership() -> None:
    """The same worker accepted the item again (a new ownership epoch): its old binding is
    from another ownership."""
    story, bound = _expired_and_reassigned()
    story.do("work.offer", workers=(WORKER,))
    story.do("work.accept_offer", worker=WORKER)
    assert story.epoch == 2
    error = refused(story, buffered(story, "work.progress", bound), ErrorCode.STALE_OWNERSHIP)
    assert error.details["ownership_epoch"] == 2
    bound = {**bound, "ownership_epoch": 2}
    refused(story, buffered(story, "work.progress", bound), ErrorCode.STALE_OWNERSHIP)


def test_a_principal_that_never_owned_the_item_is_forbidden() -> None:
    """wire.md §8 precedence: a stranger is FORBIDDEN before anything else."""
    story = reconnected()
    bound = {**binding(story), "agent": COORDINATOR}
    call = buffered(story, "work.message", bound, actor=COORDINATOR)
    refused(story, call, ErrorCode.FORBIDDEN)


def test_a_human_cannot_send_a_buffered_command() -> None:
    story = reconnected()
    call = buffered(story, "work.message", binding(story), actor="user:olga")
    error = refused(story, call, ErrorCode.MALFORMED)
    assert error.details["path"] == f"{BINDING_PATH}.agent"


# --- budgets (R11.5-12, R11.5-13) ------------------------------------------------------------


def test_an_item_budget_overflow_refuses_the_charge_and_the_command() -> None:
    """R11.5-13: the contract allows no side effects; nothing is appended or changed."""
    story = reconnected()
    bound = binding(story, usage={"tokens": 10, "side_effects": 1})
    error = refused(story, buffered(story, "work.checkpoint", bound), ErrorCode.BUDGET_EXCEEDED)
    assert error.requirement == "R11.5-13"
    assert error.details["budget"]["kind"] == "work_item"
    assert error.details["dimension"] == "side_effects"


def test_a_mission_budget_overflow_up_the_ancestry_refuses_everything() -> None:
    """R11.5-12 "full-ancestry budgets": the mission's money limit (5.0) is checked too."""
    contract = work_contract(budgets={"money": 100.0})
    story = reconnected(contract=contract)
    bound = binding(story, usage={"money": 6.0})
    error = refused(story, buffered(story, "work.progress", bound), ErrorCode.BUDGET_EXCEEDED)
    assert error.details["budget"] == {"kind": "mission", "id": MISSION, "limit": 5.0, "used": 0}


def test_the_charge_is_exactly_the_sum_of_the_reconciled_deltas() -> None:
    story = reconnected()
    for minute, tokens in ((1, 100), (2, 250), (3, 0)):
        bound = binding(story, buffered_at=NOW + minute * MINUTE, usage={"tokens": tokens})
        story.run(buffered(story, "work.progress", bound))
    item = story.view()
    assert item is not None
    assert item["budgets"]["used"] == {"tokens": 350}


# --- keys ------------------------------------------------------------------------------------


def test_a_buffered_command_loads_the_mission_ancestry() -> None:
    """The write path loads what ``keys`` names: with the binding, the budget ancestry too."""
    story = reconnected()
    keys = with_ancestry(item_keys)
    body = {"work_item": story.item, "text": "hello"}
    plain = Command("c", "work.message", GROUP, WORKER, body, NOW)
    view = {work_item_key(story.item): driver_of(story).scenario.state[work_item_key(story.item)]}
    assert keys(plain, view) == {work_item_key(story.item)}
    offline = Command("c", "work.message", GROUP, WORKER, body, NOW, extensions={EXTENSION: {}})
    assert keys(offline, view) == {work_item_key(story.item), mission_key(MISSION)}
