"""Automatic retries, decided purely (R11.4-08, R11.4-10, R10.2-13).

The owner's ``work.fail`` of an ``active`` item schedules another attempt after a backoff while
the contract's retry policy allows it — bounded by attempts, deadline and cost — and is
``work.failed`` with ``retries_exhausted`` otherwise; the coordinator's failure is final.
"""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from missionweave.protocol import states as S
from missionweave.protocol.errors import ErrorCode
from missionweave.protocol.timefmt import format_timestamp
from missionweave.protocol.work.checks import LEASE_TTL, START_WINDOW
from missionweave.protocol.work.items import START_DEADLINE_MISSED, WorkItem
from missionweave.protocol.work.leases import retry_plan

from .deciders import NOW
from .lease_stories import (
    MICROSECOND,
    active,
    at_time,
    clock,
    coordinator_fail,
    driver_of,
    item,
    owner_fail,
    refused,
    with_body,
)
from .work_scenarios import WORKER, WorkStory, work_contract


def retry(
    max_attempts: int = 3, initial: float = 30, multiplier: float = 2.0, ceiling: float = 600
) -> dict[str, Any]:
    return {
        "max_attempts": max_attempts,
        "initial_backoff_s": initial,
        "backoff_multiplier": multiplier,
        "max_backoff_s": ceiling,
    }


def failing(story: WorkStory, **options: Any) -> Any:
    """The owner fails one second into its attempt; the decided run."""
    clock(story, driver_of(story).at + timedelta(seconds=1))
    return story.run(owner_fail(story, **options))


# --- the backoff sequence ----------------------------------------------------------------------


def test_the_failed_attempts_lease_is_stale_while_the_retry_waits() -> None:
    """wire§8, issue 16 §7: a scheduled retry revokes the lease and the item waits in
    ``queued``, still the owner's; the revoked lease's id is STALE_LEASE, not an illegal
    transition, for every command that carries one."""
    story = active(contract=work_contract(retry=retry(3, 30, 2.0, 100)))
    old = item(story)["lease"]["lease_id"]
    assert failing(story).types == ["work.retry_scheduled"]
    assert item(story)["state"] == S.QUEUED
    assert item(story)["lease"]["status"] == "revoked"
    for command in ("work.progress", "work.usage", "lease.renew", "work.checkpoint"):
        call = story.call(command, lease_id=old)
        refused(story, call, ErrorCode.STALE_LEASE, "R11.3-05")


def test_each_retry_waits_initial_times_multiplier_to_the_attempts_so_far_capped() -> None:
    """R11.4-08: attempt n+1 waits ``initial_backoff_s × multiplier^(n-1)`` capped at
    ``max_backoff_s``: 30, 60, 100, 100 s; the same owner and epoch, a ``queued`` item whose
    start waits out the backoff; the fifth failure exhausts the attempts (R11.4-10)."""
    story = active(contract=work_contract(retry=retry(5, 30, 2.0, 100)))
    for attempt, backoff in enumerate([30, 60, 100, 100], start=1):
        lease = item(story)["lease"]
        ran = failing(story)
        failed_at = driver_of(story).at
        assert ran.types == ["work.retry_scheduled"]
        plan = ran.events[0][1]
        retry_at = failed_at + timedelta(seconds=backoff)
        assert plan["attempt"] == attempt + 1
        assert plan["max_attempts"] == 5
        assert plan["backoff_s"] == backoff
        assert plan["retry_at"] == format_timestamp(retry_at)
        assert plan["start_deadline"] == format_timestamp(retry_at + START_WINDOW)
        assert plan["evidence"][0]["result"]["verdict"] == "fail"
        assert ran.result == {"outcome": "work.retry_scheduled"}
        after = item(story)
        assert (after["state"], after["owner"], after["ownership_epoch"]) == (S.QUEUED, WORKER, 1)
        assert after["retry_at"] == plan["retry_at"]
        assert (after["lease"]["lease_id"], after["lease"]["status"]) == (
            lease["lease_id"],
            "revoked",
        )
        assert after["lease"]["closed_by"] == "work.retry_scheduled"
        # R11.4-08: not a moment before the backoff ends...
        clock(story, retry_at - MICROSECOND)
        error = refused(story, story.call("work.start"), ErrorCode.ILLEGAL_TRANSITION, "R11.4-08")
        assert error.details == {"work_item": story.item, "retry_at": plan["retry_at"]}
        # ...and from then on, the next attempt with a fresh lease
        clock(story, retry_at)
        started = story.do("work.start")
        assert started.events[0][1]["attempt"] == attempt + 1
        assert item(story)["retry_at"] is None
    ran = failing(story)
    assert ran.types == ["work.failed"]
    assert ran.events[0][1]["retries_exhausted"] == "attempts"
    assert item(story)["state"] == S.FAILED
    assert item(story)["attempts"] == 5


@given(
    initial=st.integers(min_value=0, max_value=3600),
    multiplier=st.floats(min_value=1.0, max_value=10.0),
    extra=st.integers(min_value=0, max_value=86400),
    attempts=st.integers(min_value=1, max_value=12),
)
def test_the_backoff_grows_by_the_multiplier_until_the_cap(
    initial: int, multiplier: float, extra: int, attempts: int
) -> None:
    """R11.4-08: as a recurrence — the first retry waits ``min(initial, max)``, each next one
    ``min(previous × multiplier, max)`` — never more than ``max_backoff_s``."""
    ceiling = initial + extra
    policy = retry(attempts + 1, initial, multiplier, ceiling)
    base = WorkItem.from_dict(item(active(contract=work_contract(retry=policy))))
    expected = float(min(initial, ceiling))
    for n in range(1, attempts + 1):
        plan, why = retry_plan(replace(base, attempts=n), NOW)
        assert plan is not None, why
        assert math.isclose(plan["backoff_s"], expected, rel_tol=1e-9), (n, plan)
        assert plan["backoff_s"] <= ceiling
        expected = min(expected * multiplier, ceiling)
    plan, why = retry_plan(replace(base, attempts=attempts + 1), NOW)
    assert (plan, why) == (None, "attempts")


@pytest.mark.parametrize(
    ("policy", "attempts"),
    [
        (retry(10, 1e12, 1.0, 1e12), 1),  # a backoff past year 9999
        (retry(10, 1.0, 1e300, 1e300), 2),  # 1e300 s
        (retry(10, 1.0, 1e300, 1e300), 3),  # 1e300² overflows a float
    ],
)
def test_a_backoff_beyond_any_representable_time_exhausts_retries_by_deadline(
    policy: dict[str, Any], attempts: int
) -> None:
    """R11.4-08, wire§8: a valid but absurd policy never breaks the decider (no 5xx); such a
    retry could never start before the contract deadline."""
    base = WorkItem.from_dict(item(active(contract=work_contract(retry=policy))))
    assert retry_plan(replace(base, attempts=attempts), NOW) == (None, "deadline")


# --- exhaustion ------------------------------------------------------------------------------


def test_a_single_attempt_policy_fails_at_once() -> None:
    """R11.4-08, R11.4-10: ``max_attempts: 1`` allows no retry."""
    story = active(contract=work_contract(retry=retry(max_attempts=1)))
    ran = failing(story)
    assert ran.types == ["work.failed"]
    assert ran.events[0][1]["retries_exhausted"] == "attempts"
    assert ran.result == {"outcome": "work.failed"}


def test_no_retry_starts_at_or_after_the_contract_deadline() -> None:
    """R11.4-08: the deadline bounds retries — a retry due at or after it is not scheduled."""
    deadline = NOW + timedelta(seconds=31)
    contract = work_contract(deadline=format_timestamp(deadline), retry=retry(initial=30))
    story = active(contract=contract)
    ran = failing(story)  # at NOW + 1 s: the retry would be at NOW + 31 s, the deadline
    assert ran.types == ["work.failed"]
    assert ran.events[0][1]["retries_exhausted"] == "deadline"
    assert ran.events[0][1]["evidence"][0]["criterion"] == "c1"  # R11.4-10: with evidence
    assert item(story)["state"] == S.FAILED


def test_a_retry_just_before_the_deadline_has_its_start_deadline_capped() -> None:
    """R11.4-08, R11.3-02: a retry ending before the deadline is scheduled; its start deadline
    never passes the contract deadline."""
    deadline = NOW + timedelta(seconds=32)
    contract = work_contract(deadline=format_timestamp(deadline), retry=retry(initial=30))
    story = active(contract=contract)
    ran = failing(story)
    assert ran.types == ["work.retry_scheduled"]
    assert ran.events[0][1]["start_deadline"] == format_timestamp(deadline)
    due = WorkItem.from_dict(item(story)).due()
    assert due == (format_timestamp(deadline), START_DEADLINE_MISSED)


@pytest.mark.parametrize(
    ("spent", "outcome"), [(4.99, "work.retry_scheduled"), (5.0, "work.failed")]
)
def test_a_spent_money_budget_exhausts_retries(spent: float, outcome: str) -> None:
    """R11.4-08: retries are bounded by the cost budget (the contract's ``money``)."""
    story = active(contract=work_contract(retry=retry()))
    assert item(story)["budgets"]["limits"]["money"] == 5.0
    story.run(with_body(story.call("work.usage"), usage={"money": spent}))
    ran = failing(story)
    assert ran.types == [outcome]
    if outcome == "work.failed":
        assert ran.events[0][1]["retries_exhausted"] == "cost"


def test_a_permanent_failure_is_never_retried() -> None:
    """R11.4-10: ``permanent: true`` ends it with ``work.failed``, attempts left or not."""
    story = active(contract=work_contract(retry=retry(max_attempts=9)))
    ran = failing(story, permanent=True)
    assert ran.types == ["work.failed"]
    assert ran.events[0][1]["retries_exhausted"] == "permanent"
    assert ran.events[0][1]["permanent"] is True
    assert item(story)["state"] == S.FAILED
    refused(story, story.call("work.start"), ErrorCode.ILLEGAL_TRANSITION, "R10.2-07")


def test_permanent_false_is_an_ordinary_retryable_failure() -> None:
    """R11.4-08: ``permanent: false`` is the default."""
    story = active(contract=work_contract(retry=retry()))
    assert failing(story, permanent=False).types == ["work.retry_scheduled"]


def test_permanent_must_be_a_boolean() -> None:
    """R11.4-10, wire§9: anything else is MALFORMED."""
    story = active()
    call = owner_fail(story)
    error = refused(story, with_body(call, permanent="yes"), ErrorCode.MALFORMED, "R11.4-10")
    assert error.details == {"path": "$.permanent"}


def test_the_coordinators_failure_is_final() -> None:
    """R10.2-13, R11.4-08: a coordinator's ``work.fail`` is ``work.failed`` — no retry, even
    with attempts left — and the item is terminal for this revision (R10.2-19)."""
    story = active(contract=work_contract(retry=retry(max_attempts=9)))
    ran = story.run(coordinator_fail(story))
    assert ran.types == ["work.failed"]
    assert "retries_exhausted" not in ran.events[0][1]
    after = item(story)
    assert after["state"] == S.FAILED
    assert after["retry_at"] is None
    assert after["lease"]["status"] == "revoked"
    assert WorkItem.from_dict(after).due() is None


def test_a_worker_failure_under_an_expired_lease_is_stale() -> None:
    """R11.3-09, R11.3-04: like every owner's command, a failure needs a live lease — else an
    owner whose lease ran out could schedule itself a retry past the reassignment."""
    story = active(contract=work_contract(retry=retry()))
    clock(story, at_time(item(story)["lease"]["expires_at"]))
    refused(story, owner_fail(story), ErrorCode.STALE_LEASE, "R11.3-09")
    clock(story, NOW + LEASE_TTL - MICROSECOND)
    assert story.run(owner_fail(story)).types == ["work.retry_scheduled"]
