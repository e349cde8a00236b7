"""Progress at a stated cadence (R11.4-01..03) and the pure rules the runtime decides by:
who yields a slot (R0-12, R11.1-06), when a schedule is disclosed again (R11.2-01), how a
``WorkRow`` becomes a ``QueuedItem``."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from missionweave.protocol import states as S
from missionweave.protocol.timefmt import format_timestamp
from missionweave.worker.config import GroupConfig, ProgressCadence
from missionweave.worker.contention import Occupant, choose_victims
from missionweave.worker.disclosure import Disclosed, material
from missionweave.worker.handlers import Progress, ProgressState, TaskResult
from missionweave.worker.intake import offer_decidable, queued_item
from missionweave.worker.progress import (
    BLOCKED,
    ESTIMATE,
    HEARTBEAT,
    MILESTONE,
    STARTED,
    UNBLOCKED,
    Estimate,
    Reported,
    report_due,
)
from missionweave.worker.scheduler import QueuedItem, StartEstimate
from missionweave.worker.slots import SlotContext
from tests.worker.fake_work import result_for
from tests.worker.runtime_world import START, world

T0 = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)
CADENCE = ProgressCadence(
    max_interval_s=60, min_interval_s=5, estimate_shift_s=120, estimate_shift_fraction=0.2
)
AN_HOUR = Estimate(T0 + timedelta(hours=1), 0.6)
ALPHA = "g-alpha"


def _due(last: Reported | None, state: ProgressState, estimate: Estimate, after_s: float) -> Any:
    return report_due(last, state, estimate, T0 + timedelta(seconds=after_s), CADENCE)


# --- the cadence (pure) --------------------------------------------------------------------------


def test_the_first_report_follows_the_start() -> None:
    """R11.4-03: a started item reports at once."""
    assert _due(None, ProgressState(), AN_HOUR, 0) == STARTED


def test_a_blocker_is_reported_at_once_even_within_the_minimum_interval() -> None:
    """R11.4-03 "when blocked": a blocker is never held back, nor is its clearing."""
    last = Reported(T0, ProgressState(), AN_HOUR)
    blocked = ProgressState(blockers=("waiting for the reports archive",))
    assert _due(last, blocked, AN_HOUR, 1) == BLOCKED
    assert _due(Reported(T0, blocked, AN_HOUR), ProgressState(), AN_HOUR, 1) == UNBLOCKED


def test_a_milestone_is_reported_but_not_within_the_minimum_interval() -> None:
    """R11.4-03 "at meaningful checkpoints", at most one report per ``min_interval_s``."""
    last = Reported(T0, ProgressState(), AN_HOUR)
    reached = ProgressState(milestones=("collected",))
    assert _due(last, reached, AN_HOUR, 2) is None
    assert _due(last, reached, AN_HOUR, 5) == MILESTONE


def test_only_a_material_estimate_change_is_reported() -> None:
    """R11.4-03 "when an estimate changes materially": a shift of 120 s or 20 % of the time
    left, or of 0.2 in confidence; smaller ones wait for the heartbeat."""
    last = Reported(T0, ProgressState(), AN_HOUR)
    small = Estimate(AN_HOUR.finish_at + timedelta(seconds=30), 0.6)
    large = Estimate(AN_HOUR.finish_at + timedelta(seconds=600), 0.6)
    surer = Estimate(AN_HOUR.finish_at, 0.9)
    assert _due(last, ProgressState(), small, 10) is None
    assert _due(last, ProgressState(), large, 10) == ESTIMATE
    assert _due(last, ProgressState(), surer, 10) == ESTIMATE
    near = Reported(T0, ProgressState(), Estimate(T0 + timedelta(seconds=100), 0.6))
    assert _due(near, ProgressState(), Estimate(T0 + timedelta(seconds=125), 0.6), 10) == ESTIMATE


def test_an_overrunning_item_reports_once_per_absolute_shift_not_every_tick() -> None:
    """Past its expected finish, the fraction of the time left is zero: only a shift of
    ``estimate_shift_s`` is material, so an overrun does not report on every tick."""
    due = Estimate(T0, 0.3)
    last = Reported(T0, ProgressState(), due)
    assert _due(last, ProgressState(), Estimate(T0 + timedelta(seconds=30), 0.3), 30) is None
    assert _due(last, ProgressState(), Estimate(T0 + timedelta(seconds=50), 0.3), 50) is None
    later = Estimate(T0 + timedelta(seconds=120), 0.3)
    assert _due(last, ProgressState(), later, 55) == ESTIMATE


def test_silence_ends_with_a_heartbeat_at_the_maximum_interval() -> None:
    """The stated maximum interval: an item that changes nothing still reports every 60 s."""
    last = Reported(T0, ProgressState(), AN_HOUR)
    assert _due(last, ProgressState(), AN_HOUR, 59) is None
    assert _due(last, ProgressState(), AN_HOUR, 60) == HEARTBEAT


# --- the cadence in a running worker -------------------------------------------------------------


def test_a_running_item_reports_on_start_milestones_blockers_and_heartbeats(
    tmp_path: Path,
) -> None:
    """R11.4-01..03: structured ``work.progress`` (phase, milestones, blockers, estimate — no
    percentages) on start, on each milestone, at once when blocked, and at the maximum
    interval; each is accepted by the authority under the current lease."""
    steps = [threading.Event() for _ in range(4)]
    done = threading.Event()

    def handler(ctx: SlotContext, progress: Progress) -> TaskResult:
        progress.phase("reading")
        progress.estimate(START + timedelta(hours=1), 0.6)
        steps[0].wait(10)
        progress.milestone("read", next_checkpoint="summarise")
        steps[1].wait(10)
        progress.blocked("the archive is offline")
        steps[2].wait(10)
        progress.blocked()
        steps[3].wait(10)
        done.wait(10)
        return result_for(ctx.mission_context, 1)

    with world(tmp_path, handlers={"text.summarise": handler}) as w:
        w.authority.story("g-alpha", "wi-1")
        w.authority.offer("g-alpha", "wi-1")
        w.until(lambda: len(w.sent("work.progress")) == 1)
        for index, step in enumerate(steps[:3]):
            w.clock.advance(6)
            step.set()
            w.until(lambda n=index: len(w.sent("work.progress")) == n + 2)
        steps[3].set()
        w.clock.advance(61)
        w.until(lambda: len(w.sent("work.progress")) == 5)
        bodies = [sent.body for sent in w.sent("work.progress")]
        assert bodies[1]["milestones_completed"] == ["read"]
        assert bodies[1]["next_checkpoint"] == "summarise"
        assert bodies[2]["blockers"] == ["the archive is offline"]
        assert bodies[3]["blockers"] == []
        assert bodies[4]["milestones_completed"] == ["read"]  # the heartbeat: nothing new
        assert bodies[4]["estimate"] == bodies[0]["estimate"]
        assert all("percent" not in str(body) for body in bodies)
        history = w.authority.item("g-alpha", "wi-1")
        assert history["state"] == S.ACTIVE
        done.set()
        w.until(lambda: w.state("g-alpha", "wi-1") == S.SUBMITTED)


# --- who yields a slot (pure) --------------------------------------------------------------------


def _queued(group: str, urgency: str = "normal", klass: str = "normal") -> QueuedItem:
    return QueuedItem(group, f"{group}-q", "m", urgency, None, T0, org_priority_class=klass)


def _running(group: str, urgency: str = "normal", klass: str = "normal", age_s: float = 60) -> Any:
    return Occupant(group, f"{group}-r", urgency, klass, T0 - timedelta(seconds=age_s), False)


def test_urgency_displaces_only_within_its_own_group() -> None:
    """R11.1-06, R0-07: a coordinator's urgency orders only its group's work."""
    assert choose_victims([_queued("a", "critical")], [_running("a", "low")], now=T0)
    assert not choose_victims([_queued("b", "critical")], [_running("a", "low")], now=T0)


def test_an_organisation_priority_class_displaces_across_groups() -> None:
    """R11.1-07: the policy's class, not the coordinator, decides across groups."""
    victims = choose_victims([_queued("b", klass="high")], [_running("a", klass="normal")], now=T0)
    assert [v.group for v in victims] == ["a"]


def test_nothing_is_displaced_before_its_minimum_run_nor_twice_for_one_claim() -> None:
    """No thrashing: a young occupant stays; a pending preemption serves one claim."""
    young = _running("a", "low", age_s=1)
    assert not choose_victims([_queued("a", "critical")], [young], now=T0)
    pending = Occupant("a", "a-p", "low", "normal", T0 - timedelta(seconds=60), True)
    assert not choose_victims([_queued("a", "critical")], [pending, _running("a", "low")], now=T0)


# --- disclosure and intake (pure) ----------------------------------------------------------------


def _estimate(latest_s: float, confidence: float = 0.7) -> StartEstimate:
    start = T0 + timedelta(seconds=latest_s)
    return StartEstimate(
        T0, T0, start, start, start + timedelta(seconds=60), 60.0, confidence, "busy", 0, False
    )


def test_a_schedule_is_disclosed_again_only_on_a_material_change() -> None:
    """R11.2-01: first disclosure always; then a shift of a minute (or a quarter of the
    horizon), or of 0.2 in confidence, once the last disclosure is a minute old."""
    last = Disclosed(1, _estimate(3600), {})
    later = T0 + timedelta(seconds=60)
    assert material(None, _estimate(3600), ownership_epoch=1, now=T0)
    assert material(last, _estimate(3600), ownership_epoch=2, now=T0)  # a new ownership
    assert not material(last, _estimate(3620), ownership_epoch=1, now=later)
    assert material(last, _estimate(3700), ownership_epoch=1, now=later)
    assert material(last, _estimate(3600, confidence=0.3), ownership_epoch=1, now=later)


def test_a_change_is_held_for_a_minute_after_the_last_disclosure() -> None:
    """R11.2-01, seen on the demo (minute-long jobs): a queued item's estimate swung by
    minutes as the jobs ahead of it ran, five disclosures in forty-five seconds. A change is
    sent at most once a minute: held within it, sent after it if it still holds."""
    last = Disclosed(1, _estimate(3600), {})
    for held_s in (5, 30, 59):
        now = T0 + timedelta(seconds=held_s)
        assert not material(last, _estimate(3900), ownership_epoch=1, now=now)
        assert not material(last, _estimate(3600, confidence=0.1), ownership_epoch=1, now=now)
    assert material(last, _estimate(3900), ownership_epoch=1, now=T0 + timedelta(seconds=60))


def _computed(at_s: float, wait_s: float, *, gated: bool = True) -> StartEstimate:
    """An estimate made ``at_s`` after T0, starting ``wait_s`` after that."""
    made = T0 + timedelta(seconds=at_s)
    start = made + timedelta(seconds=wait_s)
    return StartEstimate(
        made, made, start, start, start + timedelta(seconds=60), 60.0, 0.3, "busy", 0, gated
    )


def test_an_estimate_that_only_slides_with_the_clock_is_disclosed_every_ten_minutes() -> None:
    """R11.2-01: a start "a minute from now" seen later is the same wait, not a material
    change (it was disclosed again every fifteen seconds), until the last disclosure is ten
    minutes old; the wait itself changing is news."""
    last = Disclosed(1, _computed(0, 60, gated=False), {})
    for later_s in (15, 60, 300, 599):
        now = T0 + timedelta(seconds=later_s)
        assert not material(last, _computed(later_s, 60, gated=False), ownership_epoch=1, now=now)
    at_ten = T0 + timedelta(seconds=600)
    assert material(last, _computed(600, 60, gated=False), ownership_epoch=1, now=at_ten)
    now = T0 + timedelta(seconds=60)
    assert material(last, _computed(60, 600, gated=False), ownership_epoch=1, now=now)


def test_an_item_waiting_for_its_approval_is_disclosed_every_ten_minutes_whatever_its_wait() -> (
    None
):
    """R11.2-01, R10.2-06: an item waiting for a person's approval starts after the approval,
    whatever the worker's slots do; the demo's waiting item was re-disclosed each time the
    slots ahead of it filled or freed. Only the gate opening, a new ownership or ten minutes
    make it news."""
    last = Disclosed(1, _computed(0, 60), {})
    for later_s, wait_s in ((60, 400), (120, 60), (300, 175), (599, 1200)):
        now = T0 + timedelta(seconds=later_s)
        assert not material(last, _computed(later_s, wait_s), ownership_epoch=1, now=now)
    assert material(last, _computed(600, 60), ownership_epoch=1, now=T0 + timedelta(seconds=600))
    assert material(last, _computed(5, 60), ownership_epoch=2, now=T0 + timedelta(seconds=5))


def test_an_approval_that_ends_the_wait_is_disclosed_at_once() -> None:
    """R11.2-01, R10.2-06: the item stopped waiting for its approval: its start now depends
    on capacity alone, a material change even when the times barely moved."""
    last = Disclosed(1, _computed(0, 60, gated=True), {})
    now = T0 + timedelta(seconds=5)
    assert material(last, _computed(5, 60, gated=False), ownership_epoch=1, now=now)


def test_a_work_row_becomes_a_queued_item_with_its_groups_policy() -> None:
    """R11.1-06, R11.1-07, R10.2-06: urgency and deadline from the contract, the class from
    the worker's policy, gated while approvals are missing, a declared estimate only."""
    row: Any = {
        "group": "g-alpha",
        "work_item": "wi-1",
        "mission": "m-1",
        "queued_at": format_timestamp(T0),
        "retry_at": None,
        "terms": {
            "urgency": "high",
            "deadline": "2030-01-01T00:00:00Z",
            "compute_s": 3600,
            "compute_source": "budget",
        },
        "gate": {
            "requires_execution_approval": True,
            "approvals_required": 1,
            "approvals": [],
            "refused_by": None,
        },
    }
    item = queued_item(row, GroupConfig(org_priority_class="high"))
    assert (item.urgency, item.org_priority_class, item.risk_gated) == ("high", "high", True)
    assert item.estimated_seconds is None  # a budget ceiling is not an estimate
    row["terms"]["compute_source"] = "estimate"
    assert queued_item(row, GroupConfig()).estimated_seconds == 3600


def test_a_sequential_offer_is_decided_only_once_those_ahead_have_expired() -> None:
    """R10.3-03: an offer ranked behind others waits for theirs to expire."""
    offer: Any = {
        "expires_at": format_timestamp(T0 + timedelta(hours=1)),
        "ahead": [{"offer": "o-1", "expires_at": format_timestamp(T0 + timedelta(minutes=5))}],
    }
    assert not offer_decidable(offer, T0)
    assert offer_decidable(offer, T0 + timedelta(minutes=5))
    assert not offer_decidable(offer, T0 + timedelta(hours=2))


def test_what_a_handler_charges_is_sent_as_usage_under_its_lease_before_the_submission(
    tmp_path: Path,
) -> None:
    """R10.1-01(g), R11.5-12: ``progress.charge`` becomes ``work.usage`` under the item's
    lease, each amount charged once, the last of it before ``work.submit`` closes the lease;
    the authority records it on the item's budgets. The runtime adds the wall-clock it
    metered."""

    def handler(ctx: SlotContext, progress: Progress) -> TaskResult:
        progress.charge(tokens=1200, money=0.01)
        ctx.checkpoint({"next": 1})
        progress.milestone("half way")
        progress.charge(tokens=800, tool_calls=2)
        return result_for(ctx.mission_context, 1)

    with world(tmp_path, handlers={"text.summarise": handler}) as w:
        w.authority.story(ALPHA, "wi-charged")
        w.authority.offer(ALPHA, "wi-charged")
        w.until(lambda: w.state(ALPHA, "wi-charged") == S.SUBMITTED)

        (started,) = w.sent("work.start")
        usages = w.sent("work.usage")
        assert usages
        lease = w.authority.item(ALPHA, "wi-charged")["lease"]["lease_id"]
        assert {u.body["lease_id"] for u in usages} == {lease}
        total: dict[str, float] = {}
        for usage in usages:
            for dimension, amount in usage.body["usage"].items():
                total[dimension] = total.get(dimension, 0) + amount
        stated = {k: v for k, v in total.items() if k not in ("wall_clock", "compute")}
        assert stated == {"tokens": 2000, "money": 0.01, "tool_calls": 2}
        assert total["wall_clock"] > 0  # metered by the runtime itself (metering.py)
        order = [s.type for s in w.authority.sent]
        assert max(i for i, t in enumerate(order) if t == "work.usage") < order.index("work.submit")
        used = w.authority.item(ALPHA, "wi-charged")["budgets"]["used"]
        assert (used["tokens"], used["tool_calls"]) == (2000, 2)
        assert started.body["work_item"] == "wi-charged"


def test_an_estimate_flapping_between_two_values_is_disclosed_twice_then_every_ten_minutes() -> (
    None
):
    """R11.2-01: a worker whose slots fill and free every few seconds estimates a queued item
    "now" (a slot free) and "when a slot frees" in turn; the demo's waiting item disclosed four
    times in fifteen seconds. Both values are disclosed once; a return to the one disclosed
    before the last is held until ten minutes have passed, and a third value is news."""
    free, busy = 60, 111  # the waits the demo alternated between

    def at(seconds: float) -> datetime:
        return T0 + timedelta(seconds=seconds)

    def estimate(made_s: float, wait_s: float) -> StartEstimate:
        return _computed(made_s, wait_s, gated=False)

    disclosed = Disclosed(1, estimate(0, free), {})
    assert material(disclosed, estimate(60, busy), ownership_epoch=1, now=at(60))
    disclosed = disclosed.after(1, estimate(60, busy), {})
    sent = 0
    for step in range(13, 132):  # every five seconds, to just under ten minutes after
        wait = free if step % 2 == 0 else busy
        sent += material(disclosed, estimate(step * 5, wait), ownership_epoch=1, now=at(step * 5))
    assert sent == 0
    assert material(disclosed, estimate(660, free), ownership_epoch=1, now=at(660))
    assert material(disclosed, estimate(125, 400), ownership_epoch=1, now=at(125))  # new value
    # a new ownership forgets the earlier estimate: its first disclosure is always sent
    assert disclosed.after(2, estimate(130, free), {}).earlier is None


def test_a_wait_that_jitters_by_seconds_close_to_its_start_is_the_same_wait() -> None:
    """R11.2-01, seen on the demo: a busy worker's "when a slot frees" came out 111 s, then
    119 s; close to the disclosed start the moved threshold is a quarter of a few seconds left,
    and the jitter was disclosed. The same wait within a quarter of it is not news."""
    last = Disclosed(1, _computed(0, 111, gated=False), {})
    now = T0 + timedelta(seconds=92)  # 19 s before the disclosed latest start
    assert not material(last, _computed(92, 119, gated=False), ownership_epoch=1, now=now)
    assert material(last, _computed(92, 200, gated=False), ownership_epoch=1, now=now)
