"""The cross-Group scheduler: eligibility, ordering, accounting and disclosure.

R0-04..07, R11.1-04..10 (MWP-WRK-009, MWP-WRK-010), R11.3-11, R11.2-01..02 (MWP-WRK-012).
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.worker_scheduler import measure
from missionweave.protocol.contracts import URGENCIES
from missionweave.protocol.work.schedule import validate_disclose
from missionweave.worker.scheduler import (
    Needs,
    QueuedItem,
    Resources,
    Scheduler,
    SchedulingPolicy,
    Share,
)

from .scheduler_sim import T0, Simulation, at

ONE = Resources(slots=1)


def _item(group: str, n: int, **fields: object) -> QueuedItem:
    values: dict[str, object] = {
        "group": group,
        "work_item": f"wi-{group}-{n}",
        "mission": f"m-{group}",
        "urgency": "normal",
        "deadline": None,
        "queued_at": T0,
        "estimated_seconds": 10.0,
        **fields,
    }
    return QueuedItem(**values)  # type: ignore[arg-type]


def _drain(scheduler: Scheduler, free: Resources = ONE, limit: int = 10_000) -> list[str]:
    """Pick and finish one item at a time (each uses its reservation): the work items."""
    picked = []
    while len(picked) < limit and (pick := scheduler.pick(free, T0)) is not None:
        scheduler.finish(pick.item.group, pick.item.work_item, used_seconds=pick.reserved_seconds)
        picked.append(pick.item.work_item)
    return picked


# --- eligibility ---------------------------------------------------------------------------


def test_risk_gated_item_is_never_picked_until_approved() -> None:
    """R0-06, R10.2-06: an item awaiting execution approval is not eligible."""
    scheduler = Scheduler()
    scheduler.enqueue(_item("a", 1, risk_gated=True))
    scheduler.enqueue(_item("b", 1))
    assert _drain(scheduler) == ["wi-b-1"]
    assert scheduler.pick(ONE, T0) is None
    assert scheduler.queued() == 1
    scheduler.set_gated("a", "wi-a-1", False)
    assert _drain(scheduler) == ["wi-a-1"]


def test_regating_takes_an_item_back_out_of_the_running() -> None:
    """R10.2-06: a gate set again (a new revision needs approval) makes the item ineligible."""
    scheduler = Scheduler()
    scheduler.enqueue(_item("a", 1))
    scheduler.set_gated("a", "wi-a-1", True)
    assert scheduler.pick(ONE, T0) is None
    assert scheduler.queued("a") == 1


def test_no_free_slot_makes_no_decision() -> None:
    """R11.1-04: the scheduler fills declared slots; with none free it decides nothing."""
    scheduler = Scheduler()
    scheduler.enqueue(_item("a", 1))
    assert scheduler.pick(Resources(slots=0), T0) is None
    assert scheduler.decisions == 0


def test_item_needing_a_busy_resource_waits_without_idling_the_slot() -> None:
    """R0-06: resources count; other work fills the slot (work-conserving)."""
    scheduler = Scheduler()
    scheduler.enqueue(_item("a", 1, needs=Needs.of("gpu", memory_gb=16)))
    scheduler.enqueue(_item("b", 1))
    pick = scheduler.pick(Resources(slots=1, amounts={"memory_gb": 64}), T0)
    assert pick is not None
    assert pick.item.work_item == "wi-b-1"
    assert scheduler.pick(Resources(slots=1, capabilities=frozenset({"gpu"})), T0) is None
    with_gpu = Resources(slots=1, capabilities=frozenset({"gpu"}), amounts={"memory_gb": 16})
    pick = scheduler.pick(with_gpu, T0)
    assert pick is not None
    assert pick.item.work_item == "wi-a-1"


def test_group_at_its_quota_is_not_picked_until_a_slot_is_released() -> None:
    """R0-06: per-Group quota."""
    scheduler = Scheduler(SchedulingPolicy(shares={"a": Share(weight=10, quota=1)}))
    for n in range(3):
        scheduler.enqueue(_item("a", n))
    scheduler.enqueue(_item("b", 1))
    first = scheduler.pick(Resources(slots=4), T0)
    second = scheduler.pick(Resources(slots=3), T0)
    assert first is not None
    assert second is not None
    assert (first.item.group, second.item.group) == ("a", "b")
    assert scheduler.pick(Resources(slots=2), T0) is None
    scheduler.finish("a", first.item.work_item, used_seconds=10)
    third = scheduler.pick(Resources(slots=2), T0)
    assert third is not None
    assert third.item.group == "a"


# --- queue changes -------------------------------------------------------------------------


def test_reprioritize_reorders_queued_work_at_once() -> None:
    """R11.3-11, R0-12: a priority change reorders queued WorkItems immediately."""
    scheduler = Scheduler()
    for n in range(3):
        scheduler.enqueue(_item("a", n, urgency="low", queued_at=at(n)))
    scheduler.reprioritize("a", "wi-a-2", urgency="critical")
    assert _drain(scheduler, limit=1) == ["wi-a-2"]
    scheduler.reprioritize("a", "wi-a-1", deadline=at(20))
    assert _drain(scheduler) == ["wi-a-1", "wi-a-0"]


def test_reprioritize_keeps_the_groups_place_across_groups() -> None:
    """R11.1-05, R11.1-06: a priority change inside one Group does not move it ahead of
    another: the scheduler keeps the cross-Group order."""
    scheduler = Scheduler()
    scheduler.enqueue(_item("a", 1))
    scheduler.enqueue(_item("b", 1))
    scheduler.enqueue(_item("b", 2))
    assert _drain(scheduler, limit=1) == ["wi-a-1"]
    scheduler.enqueue(_item("a", 2))
    scheduler.reprioritize("a", "wi-a-2", urgency="critical")
    assert _drain(scheduler, limit=1) == ["wi-b-1"]


def test_removed_item_is_never_picked() -> None:
    """R11.1-02: the queue follows the Group log; a withdrawn item leaves it."""
    scheduler = Scheduler()
    scheduler.enqueue(_item("a", 1))
    scheduler.enqueue(_item("a", 2, risk_gated=True))
    scheduler.enqueue(_item("a", 3))
    assert scheduler.remove("a", "wi-a-1").work_item == "wi-a-1"
    assert scheduler.remove("a", "wi-a-2").work_item == "wi-a-2"
    with pytest.raises(KeyError):
        scheduler.remove("a", "wi-a-1")
    assert _drain(scheduler) == ["wi-a-3"]
    assert scheduler.queued() == 0


def test_an_item_cannot_be_queued_twice_or_while_it_runs() -> None:
    scheduler = Scheduler()
    scheduler.enqueue(_item("a", 1))
    with pytest.raises(ValueError, match="already"):
        scheduler.enqueue(_item("a", 1))
    assert scheduler.pick(ONE, T0) is not None
    with pytest.raises(ValueError, match="already"):
        scheduler.enqueue(_item("a", 1))


def test_heaps_stay_bounded_under_churn() -> None:
    """Lazy deletion compacts: reprioritising and removing do not grow memory without end."""
    scheduler = Scheduler()
    for n in range(50):
        scheduler.enqueue(_item(f"g{n % 5}", n))
    for round_ in range(200):
        for n in range(0, 50, 7):
            urgency = URGENCIES[(n + round_) % len(URGENCIES)]
            scheduler.reprioritize(f"g{n % 5}", f"wi-g{n % 5}-{n}", urgency=urgency)
    for n in range(5):
        scheduler.charge(f"g{n}", 1.0)
    lanes = [lane for group in scheduler._groups.values() for lane in group.lanes.values()]
    assert all(len(lane.heap) <= 2 * lane.live + 32 for lane in lanes)
    assert all(len(pool) <= 2 * 5 + 64 for pool in scheduler._pools.values())
    assert len(_drain(scheduler)) == 50


# --- ordering ------------------------------------------------------------------------------


def test_weights_divide_slot_time() -> None:
    """R0-05, R11.1-08: with both backlogged, a weight-3 Group gets three times the time."""
    scheduler = Scheduler(SchedulingPolicy(shares={"a": Share(weight=3), "b": Share()}))
    for n in range(40):
        scheduler.enqueue(_item("a", n))
        scheduler.enqueue(_item("b", n))
    first = _drain(scheduler, limit=40)
    assert sum(1 for w in first if w.startswith("wi-a")) == 30


def test_group_returning_from_idle_banks_no_credit() -> None:
    """R0-05: virtual time — a Group idle while another worked joins at the current pass
    rather than its old one, so it alternates instead of taking every slot."""
    scheduler = Scheduler()
    scheduler.enqueue(_item("b", 0))
    assert _drain(scheduler) == ["wi-b-0"]
    for n in range(1, 60):
        scheduler.enqueue(_item("a", n))
    assert len(_drain(scheduler, limit=50)) == 50
    for n in range(1, 10):
        scheduler.enqueue(_item("b", n))
    groups = [w.split("-")[1] for w in _drain(scheduler, limit=10)]
    assert groups.count("a") >= 4, groups


def test_backlogged_group_banks_at_most_the_credit_cap() -> None:
    """R0-05: a Group kept out by a busy resource is served as if at ``V - B`` at worst."""
    policy = SchedulingPolicy(min_charge_s=10, max_charge_s=10, max_credit_s=20)
    scheduler = Scheduler(policy)
    scheduler.enqueue(_item("gpu", 0, needs=Needs.of("gpu")))
    for n in range(100):
        scheduler.enqueue(_item("cpu", n))
    assert len(_drain(scheduler, limit=50)) == 50
    for n in range(1, 10):
        scheduler.enqueue(_item("gpu", n, needs=Needs.of("gpu")))
    both = Resources(slots=1, capabilities=frozenset({"gpu"}))
    groups = [w.split("-")[1] for w in _drain(scheduler, both, limit=8)]
    # served from V - B = 470 while cpu sits at 500: (B + 10) / 10 + 1 picks, then turns
    assert groups == ["gpu"] * 4 + ["cpu", "gpu", "cpu", "gpu"], groups


def test_old_low_urgency_item_is_not_overtaken_by_later_urgent_ones() -> None:
    """R0-05 ageing: urgency buys ``slack[u]`` of queue age, no more."""
    scheduler = Scheduler()
    slack = scheduler.policy.urgency_slack_s["low"]
    scheduler.enqueue(_item("a", 0, urgency="low", queued_at=T0))
    scheduler.enqueue(_item("a", 1, urgency="critical", queued_at=at(slack - 1)))
    scheduler.enqueue(_item("a", 2, urgency="critical", queued_at=at(slack + 1)))
    assert _drain(scheduler) == ["wi-a-1", "wi-a-0", "wi-a-2"]


def test_deadline_pulls_an_item_forward_within_its_group() -> None:
    """R0-06: deadline-aware order: the latest useful start, never before arrival."""
    scheduler = Scheduler()
    scheduler.enqueue(_item("a", 0, queued_at=T0))
    scheduler.enqueue(_item("a", 1, queued_at=at(5), deadline=at(600)))
    scheduler.enqueue(_item("a", 2, queued_at=at(6), deadline=at(-100)))
    assert _drain(scheduler) == ["wi-a-2", "wi-a-1", "wi-a-0"]


def test_organisation_priority_class_is_a_bounded_boost() -> None:
    """R0-06, R11.1-07, R0-07: a critical class quadruples its Group's share, no more."""
    scheduler = Scheduler()
    for n in range(100):
        scheduler.enqueue(_item("a", n, org_priority_class="critical"))
        scheduler.enqueue(_item("b", n))
    first = _drain(scheduler, limit=50)
    assert sum(1 for w in first if w.startswith("wi-a")) == 40


def test_slot_time_beyond_the_reservation_is_charged_once() -> None:
    """R0-05: fairness is on slot time used; ``charge`` during a run and ``finish`` at its
    end add up to the time used, not more."""
    scheduler = Scheduler()
    scheduler.enqueue(_item("a", 1, estimated_seconds=10))
    pick = scheduler.pick(ONE, T0)
    assert pick is not None
    start = scheduler.pass_of("a") - 10
    scheduler.charge("a", 6, work_item="wi-a-1")
    assert scheduler.pass_of("a") == start + 10
    scheduler.charge("a", 6, work_item="wi-a-1")
    assert scheduler.pass_of("a") == start + 12
    scheduler.finish("a", "wi-a-1", used_seconds=15)
    assert scheduler.pass_of("a") == start + 15
    scheduler.charge("a", 5)
    assert scheduler.pass_of("a") == start + 20


def test_decisions_are_deterministic() -> None:
    """Pure and deterministic: the same inputs give the same picks."""

    def run() -> list[str]:
        scheduler = Scheduler(SchedulingPolicy(shares={"a": Share(weight=2)}))
        for n in range(30):
            urgency = URGENCIES[n % 4]
            group = "abc"[n % 3]
            scheduler.enqueue(_item(group, n, urgency=urgency, estimated_seconds=5 + n % 7))
        return _drain(scheduler)

    assert run() == run()


# --- urgency never overrides across Groups (R0-07, R11.1-10; MWP-WRK-010) -----------------

_claims = st.lists(
    st.tuples(
        st.sampled_from(URGENCIES),
        st.one_of(st.none(), st.integers(-10_000, 10_000)),
        st.integers(0, 400),
    ),
    min_size=1,
    max_size=40,
)
_others = st.lists(
    st.lists(st.tuples(st.integers(0, 400), st.integers(1, 60)), min_size=1, max_size=15),
    min_size=1,
    max_size=4,
)


@settings(max_examples=60, deadline=None)
@given(
    claims=_claims,
    others=_others,
    weights=st.lists(st.integers(1, 3), min_size=5, max_size=5),
    duration=st.integers(1, 60),
    slots=st.integers(1, 4),
)
def test_urgency_cannot_starve_another_group(
    claims: list[tuple[str, int | None, int]],
    others: list[list[tuple[int, int]]],
    weights: list[int],
    duration: int,
    slots: int,
) -> None:
    """R0-04, R11.1-05, R0-07, R11.1-06, R11.1-10 (MWP-WRK-009, MWP-WRK-010): whatever
    urgencies and deadlines one Group claims, every other Group's items are picked within the
    stated bound, and the sequence of Groups served is exactly what it would be had it claimed
    nothing: the scheduler alone orders across Groups."""
    policy = SchedulingPolicy(
        shares={"loud": Share(weight=weights[0])}
        | {f"quiet{n}": Share(weight=weights[n + 1]) for n in range(len(others))},
        min_charge_s=1,
        max_charge_s=60,
        max_credit_s=30,
    )

    def simulate(claimed: bool) -> Simulation:
        sim = Simulation(Scheduler(policy), slots)
        for n, (urgency, deadline, arrival) in enumerate(claims):
            sim.offer(
                _item(
                    "loud",
                    n,
                    urgency=urgency if claimed else "low",
                    deadline=at(deadline) if claimed and deadline is not None else None,
                    queued_at=at(arrival),
                    estimated_seconds=duration,
                )
            )
        for g, items in enumerate(others):
            for n, (arrival, seconds) in enumerate(sorted(items)):
                sim.offer(_item(f"quiet{g}", n, queued_at=at(arrival), estimated_seconds=seconds))
        sim.run()
        return sim

    loud, meek = simulate(True), simulate(False)
    assert loud.order == meek.order
    quiet = [run for run in loud.runs.values() if run.item.group != "loud"]
    assert all(run.waited is not None and run.waited <= run.bound for run in quiet)


# --- schedule disclosure (R11.2-01, R11.2-02; MWP-WRK-012) ---------------------------------


def test_position_estimate_is_a_valid_disclosure_in_window_order() -> None:
    """R11.2-01: earliest <= expected <= latest start, completion after the latest start;
    the body passes the protocol's own validator."""
    scheduler = Scheduler()
    for n in range(5):
        scheduler.enqueue(_item("a", n, queued_at=at(n)))
        scheduler.enqueue(_item("b", n, queued_at=at(n)))
    now = at(10)
    estimate = scheduler.position_estimate(_item("a", 3, queued_at=at(3)), now=now, slots=2)
    assert estimate.ahead_in_group == 3
    assert now <= estimate.start_earliest <= estimate.start_expected <= estimate.start_latest
    assert estimate.finish_expected == estimate.start_expected + timedelta(seconds=10)
    assert estimate.capacity_state == "available"
    body = estimate.disclosure(work_item="wi-a-3", ownership_epoch=1)
    validate_disclose(body)


def test_capacity_state_reports_the_worker_as_a_whole() -> None:
    """R11.2-01: capacity state of the Worker, never split by Group (R11.2-02)."""
    scheduler = Scheduler()
    for n in range(4):
        scheduler.enqueue(_item("a", n))
    assert scheduler.pick(ONE, T0) is not None
    item = _item("a", 1)
    assert scheduler.position_estimate(item, now=T0, slots=2).capacity_state == "available"
    assert scheduler.position_estimate(item, now=T0, slots=1).capacity_state == "saturated"
    scheduler.remove("a", "wi-a-2")
    scheduler.remove("a", "wi-a-3")
    assert scheduler.position_estimate(item, now=T0, slots=1).capacity_state == "busy"


_ids = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=6, max_size=12)


@settings(max_examples=100, deadline=None)
@given(
    mine=_ids,
    theirs=st.lists(_ids, min_size=1, max_size=4, unique=True),
    counts=st.lists(st.integers(0, 6), min_size=4, max_size=4),
    position=st.integers(0, 6),
    slots=st.integers(1, 8),
)
def test_position_estimate_never_discloses_another_group(
    mine: str, theirs: list[str], counts: list[int], position: int, slots: int
) -> None:
    """R11.2-02 (MWP-WRK-012): the published schedule holds none of another Group's ids,
    WorkItems or missions, whatever they queue."""
    theirs = [f"other-{name}" for name in theirs if name != mine]
    scheduler = Scheduler()
    for g, name in enumerate(theirs):
        for n in range(counts[g]):
            scheduler.enqueue(_item(name, n, mission=f"secret-{name}", queued_at=at(n)))
    for n in range(position + 1):
        scheduler.enqueue(_item(f"mine-{mine}", n, queued_at=at(n)))
    estimate = scheduler.position_estimate(
        _item(f"mine-{mine}", position, queued_at=at(position)), now=at(100), slots=slots
    )
    text = json.dumps(estimate.disclosure(work_item=f"wi-{mine}", ownership_epoch=2))
    assert not any(name in text for name in theirs)
    assert "secret" not in text
    assert estimate.ahead_in_group == position


# --- inputs and layering -------------------------------------------------------------------


def test_naive_times_and_unknown_urgencies_are_refused() -> None:
    with pytest.raises(ValueError, match="aware"):
        _item("a", 1, queued_at=T0.replace(tzinfo=None))
    with pytest.raises(ValueError, match="urgency"):
        _item("a", 1, urgency="asap")
    with pytest.raises(ValueError, match="aware"):
        Scheduler().pick(ONE, T0.replace(tzinfo=None))


def test_scheduler_imports_no_django() -> None:
    """Issue 14: ``missionweave.worker`` imports only the protocol and the client."""
    code = (
        "import sys, missionweave.worker.scheduler, missionweave.worker.admission; "
        "print(any(m == 'django' or m.startswith(('django.', 'apps')) for m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


def test_benchmark_times_a_steady_state_decision() -> None:
    """The decision benchmark (``python -m benchmarks.worker_scheduler``) keeps working."""
    cell = measure(groups=5, items=200, decisions=100)
    assert 0 < cell.p50_us <= cell.p99_us <= cell.max_us
    assert cell.cpu_p50_us > 0
