"""What a blocked WorkItem waits for, on its projection (R11.4-04; issue 35 §3; wire.md §4)."""

from __future__ import annotations

from datetime import timedelta

from missionweave.protocol import states as S
from missionweave.protocol.work.items import BLOCKED_LEASE

from .lease_stories import active, at_time, clock, item, reassign
from .work_scenarios import OTHER_WORKER, WORKER


def test_a_block_records_what_it_needs_who_blocked_and_when_until_unblocked() -> None:
    story = active()
    ran = story.do("work.block")
    (payload,) = [p for t, p in ran.events if t == "work.blocked"]
    found = item(story)["blocked_for"]
    assert found == {
        "resolution": payload["required_resolution"],
        "by": WORKER,
        "at": item(story)["blocked_at"],
    }
    story.do("work.unblock", to=S.QUEUED)
    assert item(story)["blocked_for"] is None


def test_a_reassignment_of_a_blocked_item_clears_what_it_waited_for() -> None:
    """R11.4-05, R11.5-01: an owner that outstays its bounded block is fenced; the item is
    offered again, waiting for nothing."""
    story = active((WORKER, OTHER_WORKER))
    story.do("work.block")
    clock(story, at_time(item(story)["blocked_at"]) + BLOCKED_LEASE + timedelta(seconds=1))
    story.run(reassign(story, "blocked_lease_expired"))
    assert item(story)["state"] != S.BLOCKED
    assert item(story)["blocked_for"] is None
