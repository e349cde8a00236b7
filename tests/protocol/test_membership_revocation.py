"""A membership revocation fences the member's work at once (wire.md §4, issue 13 §2).

Right after ``membership.revoked``, in the same decision: ``lease.revoked`` for an active
lease (its capability tokens then fail ``capabilities:check``, R11.3-06..08) and the item
reassigned exactly as after an expired lease (R11.5-01), reason ``membership_revoked``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from missionweave.protocol import states as S
from missionweave.protocol.memberships import REVOKE, owned_items_key
from missionweave.protocol.timefmt import format_timestamp
from missionweave.protocol.work.leases import MEMBERSHIP_REVOKED, REOFFER_WINDOW

from .deciders import NOW
from .lease_stories import active, clock, driver_of, item, offered
from .work_scenarios import OTHER_WORKER, WORKER, WorkStory

LATER = NOW + timedelta(minutes=1)


def _member(story: WorkStory, owned: tuple[str, ...]) -> None:
    """``WORKER`` is an active member, and the projection says it owns ``owned``."""
    scenario = driver_of(story).scenario
    scenario.given(("membership.granted", {"principal": WORKER, "roles": ["worker"], "epoch": 1}))
    scenario.outside[owned_items_key(WORKER)] = owned


def _revoke(story: WorkStory) -> tuple[list[tuple[str, dict[str, Any]]], dict[str, Any]]:
    scenario = driver_of(story).scenario
    decision = scenario.when(REVOKE, {"principal": WORKER}, now=LATER)
    return scenario.then(decision, at=LATER), decision.result


def test_r11_5_01_revoking_an_active_owner_revokes_its_lease_then_reassigns_and_re_offers() -> None:
    """R11.5-01, R11.3-07: ``membership.revoked``, ``lease.revoked``, ``work.reassigned``,
    ``work.offered`` — in that order, one decision — and the lease is closed, so its tokens
    no longer pass (``capabilities`` refuses a lease that is not active)."""
    story = active((WORKER, OTHER_WORKER))
    lease = item(story)["lease"]
    _member(story, (story.item,))
    clock(story, LATER)
    events, result = _revoke(story)
    assert [type_ for type_, _ in events] == [
        "membership.revoked",
        "lease.revoked",
        "work.reassigned",
        "work.offered",
    ]
    revoked, lease_revoked, reassigned, reoffer = (payload for _type, payload in events)
    assert revoked == {"principal": WORKER, "epoch": 2}
    assert result == {"principal": WORKER, "epoch": 2}
    assert lease_revoked == {
        "work_item": story.item,
        "lease_id": lease["lease_id"],
        "agent": WORKER,
        "reason": MEMBERSHIP_REVOKED,
        "session_epoch": 1,
        "membership_epoch": 2,
        "start_deadline": None,
    }
    assert reassigned == {
        "work_item": story.item,
        "reason": MEMBERSHIP_REVOKED,
        "from_owner": WORKER,
        "ownership_epoch": 1,
        "lease_id": lease["lease_id"],
        "resume_from": None,
        "offered_to": OTHER_WORKER,
    }
    [offer] = reoffer["offers"]
    assert offer["worker"] == OTHER_WORKER
    assert offer["expires_at"] == format_timestamp(LATER + REOFFER_WINDOW)

    after = item(story)
    assert after["state"] == S.OFFERED
    assert after["owner"] is None
    assert after["former_owners"] == [WORKER]
    assert after["lease"]["status"] == "revoked"
    assert after["lease"]["closed_by"] == "lease.revoked"
    assert after["lease"]["closed_at"] == format_timestamp(LATER)
    # R11.5-01: the next owner holds a higher ownership epoch
    clock(story, LATER)
    accepted = story.do("work.accept_offer", worker=OTHER_WORKER, offer=offer["offer"])
    assert accepted.events[0][1]["ownership_epoch"] == 2


def test_r11_5_01_revoking_a_queued_owner_reassigns_without_a_lease_event() -> None:
    """R11.5-01: an accepted, not yet started item goes to the next offered worker at once,
    as after a missed start deadline: no lease to revoke."""
    story = offered((WORKER, OTHER_WORKER), mode="sequential")
    story.do("work.accept_offer")
    assert item(story)["state"] == S.QUEUED
    _member(story, (story.item,))
    events, _result = _revoke(story)
    assert [type_ for type_, _ in events] == [
        "membership.revoked",
        "work.reassigned",
        "work.offered",
    ]
    assert events[1][1]["reason"] == MEMBERSHIP_REVOKED
    assert events[1][1]["lease_id"] is None
    assert events[1][1]["offered_to"] == OTHER_WORKER
    assert item(story)["state"] == S.OFFERED
    assert item(story)["owner"] is None


def test_r11_5_01_without_an_eligible_worker_the_item_goes_back_to_open() -> None:
    """R11.5-01: nobody else was offered this revision, so the item is ``open``."""
    story = active((WORKER,))
    _member(story, (story.item,))
    events, _result = _revoke(story)
    assert [type_ for type_, _ in events] == [
        "membership.revoked",
        "lease.revoked",
        "work.reassigned",
    ]
    after = item(story)
    assert (after["state"], after["owner"]) == (S.OPEN, None)


def test_items_the_member_no_longer_owns_are_left_alone() -> None:
    """The projection query only names items to load; the decision re-checks each one, so a
    stale hint (another owner, an unknown id) appends nothing for it."""
    story = active((OTHER_WORKER,))
    _member(story, (story.item, "wi-unknown"))
    events, _result = _revoke(story)
    assert [type_ for type_, _ in events] == ["membership.revoked"]
    assert item(story)["owner"] == OTHER_WORKER


def test_a_member_without_work_is_revoked_with_the_one_event() -> None:
    """wire§4: nothing owned, nothing fenced."""
    story = active((OTHER_WORKER,))
    _member(story, ())
    events, _result = _revoke(story)
    assert events == [("membership.revoked", {"principal": WORKER, "epoch": 2})]
