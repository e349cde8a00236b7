"""What counts as an attempt (R11.4-08, R11.4-04, R11.3-10, issue 35).

A retry policy's ``max_attempts`` bounds fresh attempts: the first start, a start after a
scheduled retry, and a new owner's start after a reassignment. A start that resumes after the
owner stopped on purpose — a checkpoint that releases the lease (a preemption), a block and its
unblock, a replaced session's revoked lease — continues the attempt it stopped, so a worker that
yields its slot politely never uses up its retries.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from missionweave.protocol import states as S
from missionweave.protocol.work.items import LEASE_EXPIRED

from .lease_stories import (
    active,
    at_time,
    clock,
    driver_of,
    item,
    owner_fail,
    reassign,
    revoke,
)
from .test_retries import retry
from .work_scenarios import OTHER_WORKER, WORKER, WorkStory, work_contract


def started_attempt(story: WorkStory) -> int:
    """Starts the item and returns the attempt its ``work.started`` names."""
    ran = story.do("work.start")
    (payload,) = [p for t, p in ran.events if t == "work.started"]
    return int(payload["attempt"])


def failing(story: WorkStory) -> Any:
    clock(story, driver_of(story).at + timedelta(seconds=1))
    return story.run(owner_fail(story))


def test_a_released_checkpoint_resumes_the_same_attempt() -> None:
    """R11.5-01, MWP-WRK-015: a checkpoint that releases the lease (how the Worker preempts
    itself) and the next start are one attempt."""
    story = active()
    story.do("work.checkpoint")
    assert item(story)["state"] == S.QUEUED
    assert started_attempt(story) == 1
    assert item(story)["attempts"] == 1


def test_a_block_and_its_unblock_resume_the_same_attempt() -> None:
    """R11.4-04: blocking frees the slot; the start after ``work.unblocked`` resumes."""
    story = active()
    story.do("work.block")
    story.do("work.unblock", to=S.QUEUED)
    assert started_attempt(story) == 1
    assert item(story)["attempts"] == 1


def test_a_replaced_sessions_revoked_lease_resumes_the_same_attempt() -> None:
    """R11.3-10: the owner's new runtime picks the item up again; nothing failed."""
    story = active()
    story.run(revoke(story))
    assert item(story)["state"] == S.QUEUED
    assert started_attempt(story) == 1


def test_a_scheduled_retry_starts_a_fresh_attempt() -> None:
    """R11.4-08: a failure spends the attempt; its retry is the next one."""
    story = active(contract=work_contract(retry=retry(3, 30, 2.0, 100)))
    assert failing(story).types == ["work.retry_scheduled"]
    clock(story, at_time(item(story)["retry_at"]))
    assert started_attempt(story) == 2


def test_pauses_never_use_up_the_retry_policys_attempts() -> None:
    """R11.4-08 with R11.4-04: with ``max_attempts`` 2, three blocks and a preemption leave
    both attempts: the first failure schedules a retry, only the second exhausts them."""
    story = active(contract=work_contract(retry=retry(2, 30, 2.0, 100)))
    for _ in range(3):
        story.do("work.block")
        story.do("work.unblock", to=S.QUEUED)
        story.do("work.start")
    story.do("work.checkpoint")
    story.do("work.start")
    assert item(story)["attempts"] == 1
    assert failing(story).types == ["work.retry_scheduled"]
    clock(story, at_time(item(story)["retry_at"]))
    assert started_attempt(story) == 2
    ran = failing(story)
    assert ran.types == ["work.failed"]
    assert ran.events[0][1]["retries_exhausted"] == "attempts"


def test_a_new_owner_after_a_reassignment_starts_a_fresh_attempt() -> None:
    """R11.5-01: the fenced owner's attempt ended unfinished (its lease expired), even if it
    had checkpointed and resumed before; the next owner's start is a new attempt."""
    story = active((WORKER, OTHER_WORKER))
    story.do("work.checkpoint")
    story.do("work.start")
    clock(story, at_time(item(story)["lease"]["expires_at"]))
    story.run(reassign(story, LEASE_EXPIRED))
    story.do("work.accept_offer", worker=OTHER_WORKER)
    assert started_attempt(story) == 2
    assert item(story)["attempts"] == 2
