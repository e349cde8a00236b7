"""Priority changes on the pure core: ``work.reprioritize`` → ``work.reprioritized`` (R0-12,
R11.3-11, R11.1-07). No database.

A coordinator or a mission owner changes a WorkItem's requested urgency and deadline at any
state but the terminal ones. It is not a new revision: owner, lease, approvals and queue place
stay, and the contract the projection serves holds the new values, with every change kept on
the item.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from missionweave.protocol import states as S
from missionweave.protocol.authorization import authorize
from missionweave.protocol.commands import COMMANDS
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.memberships import Membership
from missionweave.protocol.timefmt import format_timestamp, parse_timestamp
from missionweave.protocol.work.items import WorkItem
from missionweave.protocol.work.priorities import (
    PRIORITY_LOG_LIMIT,
    REPRIORITIZE,
    REPRIORITIZED,
)

from .deciders import NOW
from .test_work_refusals import approval_contract, body, driver_of, refused
from .work_scenarios import COORDINATOR, MISSION_OWNER, WORKER, story_in

SOON = format_timestamp(NOW + timedelta(minutes=3))


def malformed_at(document: dict[str, Any]) -> str:
    with pytest.raises(ProtocolError) as caught:
        COMMANDS[REPRIORITIZE].validate(document)
    assert caught.value.code is ErrorCode.MALFORMED, caught.value
    return caught.value.details["path"]


def test_escalating_a_queued_item_changes_its_urgency_and_nothing_else() -> None:
    """R0-12, R11.3-11: the coordinator raises a queued item's urgency; the item keeps its
    revision, owner, ownership epoch and start deadline (no renewed acceptance, R10.1-05 is
    for substantial revisions), and the change is kept with the values before it."""
    story = story_in(S.QUEUED)
    before = story.view()
    ran = story.do(REPRIORITIZE, urgency="critical")

    assert ran.types == [REPRIORITIZED]
    deadline = before["contract"]["deadline"]
    assert ran.result == {"work_item": story.item, "urgency": "critical", "deadline": deadline}
    payload = ran.events[0][1]
    assert payload["previous"] == {"urgency": "normal", "deadline": before["contract"]["deadline"]}
    after = story.view()
    assert after["contract"] == {**before["contract"], "urgency": "critical"}
    for unchanged in ("state", "revision", "owner", "ownership_epoch", "start_deadline"):
        assert after[unchanged] == before[unchanged], unchanged
    (change,) = after["priority_changes"]
    assert change == {
        "urgency": "critical",
        "deadline": before["contract"]["deadline"],
        "previous": {"urgency": "normal", "deadline": before["contract"]["deadline"]},
        "reason": "the customer escalated",
        "by": COORDINATOR,
        "sequence": after["history"][-1]["sequence"],
        "recorded_at": format_timestamp(NOW),
    }


def test_a_mission_owner_moves_the_deadline_of_running_work_without_touching_its_lease() -> None:
    """R11.1-07: escalation goes through the mission owner too; an active item keeps its
    lease, so its owner goes on under the same lease id."""
    story = story_in(S.ACTIVE)
    lease = story.view()["lease"]
    story.do(REPRIORITIZE, actor=MISSION_OWNER, urgency=None, deadline=SOON)
    after = story.view()
    assert after["contract"]["deadline"] == SOON
    assert after["contract"]["urgency"] == "normal"
    assert after["lease"] == lease
    assert after["priority_changes"][-1]["by"] == MISSION_OWNER
    story.do("work.progress")  # the owner's next command under the same lease


def test_a_new_deadline_caps_the_next_start_deadline() -> None:
    """R11.3-02: a start deadline is capped by the contract's deadline, so after the change a
    checkpoint's fresh start deadline is no later than the new deadline."""
    story = story_in(S.ACTIVE)
    story.do(REPRIORITIZE, urgency=None, deadline=SOON)
    story.do("work.checkpoint")
    assert parse_timestamp(story.view()["start_deadline"]) <= parse_timestamp(SOON)


def test_approvals_of_the_revision_survive_a_priority_change() -> None:
    """R10.2-06: the approvals belong to the revision, which a priority change does not raise."""
    story = story_in(S.OFFERED, contract=approval_contract())
    story.do("work.accept_offer")
    story.do("approval.grant_execution")
    story.do(REPRIORITIZE, urgency="high")
    assert story.view()["approvals"] == [MISSION_OWNER]
    assert story.view()["revision"] == 1
    story.do("work.start")


@pytest.mark.parametrize("state", sorted(S.TERMINAL))
def test_a_finished_item_keeps_its_priority(state: str) -> None:
    """R10.2-19: verified and cancelled are terminal; nothing about them changes."""
    story = story_in(state)
    refused(story, story.call(REPRIORITIZE), ErrorCode.ILLEGAL_TRANSITION, "R10.2-22")


def test_a_change_that_changes_nothing_is_refused() -> None:
    """R0-12: the same urgency and deadline again is ILLEGAL_TRANSITION naming them, so a
    second person escalating what is already escalated learns it, and nothing is logged."""
    story = story_in(S.QUEUED)
    error = refused(
        story, story.call(REPRIORITIZE, urgency="normal"), ErrorCode.ILLEGAL_TRANSITION, "R0-12"
    )
    assert error.details["urgency"] == "normal"


def test_a_deadline_already_passed_is_malformed() -> None:
    """The start deadline is capped by the deadline, so a past one would put the owner out of
    time at once: MALFORMED at ``$.deadline``."""
    story = story_in(S.QUEUED)
    past = format_timestamp(NOW - timedelta(seconds=1))
    error = refused(
        story, story.call(REPRIORITIZE, urgency=None, deadline=past), ErrorCode.MALFORMED
    )
    assert error.details["path"] == "$.deadline"


def test_the_body_names_a_reason_and_something_to_change() -> None:
    """wire.md §9: ``work_item``, ``reason`` and at least one of ``urgency``, ``deadline``."""
    good = {"work_item": "wi-1", "reason": "escalated", "urgency": "high"}
    COMMANDS[REPRIORITIZE].validate(good)
    assert malformed_at({"work_item": "wi-1", "reason": "escalated"}) == "$"
    assert malformed_at({**good, "reason": " "}) == "$.reason"
    assert malformed_at({**good, "urgency": "urgent"}) == "$.urgency"
    assert malformed_at({**good, "deadline": "tomorrow"}) == "$.deadline"
    assert malformed_at({**good, "priority": 1}) == "$.priority"


def test_only_a_coordinator_or_a_mission_owner_may_change_priority() -> None:
    """R0-03, R11.1-07, R11.1-06: a worker (even the owner) cannot escalate its own work."""
    spec = COMMANDS[REPRIORITIZE]
    for roles in (("coordinator",), ("mission_owner",)):
        member = Membership("agent:x", roles, 1, True)
        authorize(spec, member, actor="agent:x", membership_epoch=1)
    worker = Membership(WORKER, ("worker",), 1, True)
    with pytest.raises(ProtocolError) as caught:
        authorize(spec, worker, actor=WORKER, membership_epoch=1)
    assert caught.value.code is ErrorCode.FORBIDDEN


def test_the_changes_kept_on_the_item_are_bounded_and_survive_a_snapshot() -> None:
    """The projection keeps the latest changes (the log keeps all) and a snapshot round trip
    (``as_dict`` → ``from_dict``) gives the same item."""
    story = story_in(S.QUEUED)
    for n in range(PRIORITY_LOG_LIMIT + 3):
        story.do(REPRIORITIZE, urgency=("high", "low")[n % 2])
    view = story.view()
    assert len(view["priority_changes"]) == PRIORITY_LOG_LIMIT
    assert view["priority_changes"][-1]["urgency"] == view["contract"]["urgency"]
    item = WorkItem.from_dict(view)
    assert item.as_dict() == view
    assert body(story.call(REPRIORITIZE), urgency="critical").body["urgency"] == "critical"
    assert driver_of(story).scenario.sequence > PRIORITY_LOG_LIMIT
