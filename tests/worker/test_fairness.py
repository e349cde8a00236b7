"""Fairness under skewed load and the anti-starvation bound (R0-05, R11.1-08; MWP-WRK-010).

The must-hold of issue 14: one Group offers 100 times more work than the nine others
together; each Group's share of slot time stays within 10% of its weight (Jain's index
reported), and no eligible item waits longer than the bound the scheduler states.
"""

from __future__ import annotations

import random

from missionweave.worker.scheduler import QueuedItem, Scheduler, SchedulingPolicy, Share

from .scheduler_sim import Run, Simulation, at, jain

HEAVY = "group-heavy"
#: nine light Groups with unequal weights, and the heavy one at weight 1 (W = 20)
LIGHT_WEIGHTS = {f"group-{n}": w for n, w in enumerate((1, 1, 1, 2, 2, 2, 3, 3, 4))}
WEIGHTS: dict[str, float] = {HEAVY: 1, **LIGHT_WEIGHTS}
SLOTS = 8
POLICY = SchedulingPolicy(
    shares={name: Share(weight=w) for name, w in WEIGHTS.items()},
    min_charge_s=5.0,
    max_charge_s=60.0,
    default_charge_s=30.0,
    max_credit_s=60.0,
)


def _item(group: str, n: int, queued_at: float, seconds: float) -> QueuedItem:
    return QueuedItem(
        group=group,
        work_item=f"wi-{group}-{n}",
        mission=f"m-{group}",
        urgency="normal",
        deadline=None,
        queued_at=at(queued_at),
        estimated_seconds=seconds,
    )


def _head_bound(group: str) -> float:
    """``(G - 1) + (B + c_max / w_g) (W - w_g) / c_min``: an item that finds its Group's
    queue empty is picked within this many decisions (module doc of the scheduler)."""
    c_min, c_max = POLICY.step_bounds
    weight, total = WEIGHTS[group], sum(WEIGHTS.values())
    return (len(WEIGHTS) - 1) + (POLICY.max_credit_s + c_max / weight) * (total - weight) / c_min


def _assert_within_bounds(runs: list[Run]) -> None:
    picked = [run for run in runs if run.waited is not None]
    assert picked
    late = [run for run in picked if run.waited > run.bound]  # type: ignore[operator]
    assert not late, late[:3]
    heads = [run for run in picked if run.position == 0]
    late_heads = [run for run in heads if run.waited > _head_bound(run.item.group)]  # type: ignore[operator]
    assert not late_heads, late_heads[:3]


def test_skewed_load_gives_each_group_its_weighted_share_within_ten_percent() -> None:
    """R0-05, R11.1-08 (MWP-WRK-010): the heavy Group queues 100x the work of the nine others
    together, all at once. While every Group is backlogged, each one's slot time is within 10%
    of ``w_g / W`` (Jain's index over share/weight printed), and every item is picked within
    the bound ``D_k`` stated when it was queued."""
    rng = random.Random(14)
    sim = Simulation(Scheduler(POLICY), SLOTS)
    light = 0
    for group, weight in LIGHT_WEIGHTS.items():
        for n in range(120 * weight):
            sim.offer(_item(group, n, 0.0, rng.randint(5, 60)))
            light += 1
    for n in range(100 * light):
        sim.offer(_item(HEAVY, n, 0.0, rng.randint(5, 60)))
    sim.run(until=30_000)

    light_runs = [run for run in sim.runs.values() if run.item.group != HEAVY]
    assert all(run.started is not None for run in light_runs), "the light Groups drained"
    # every Group is backlogged until the first light Group starts its last item
    window = min(
        max(run.started or 0.0 for run in light_runs if run.item.group == group)
        for group in LIGHT_WEIGHTS
    )
    used = sim.slot_time(window)
    total = sum(used.values())
    ratios = {g: (used[g] / total) / (w / sum(WEIGHTS.values())) for g, w in WEIGHTS.items()}
    index = jain(list(ratios.values()))
    print(
        f"\nskewed load ({100 * light} heavy items vs {light} light): window {window:.0f} s, "
        f"{len(sim.order)} decisions, Jain's index {index:.5f}; share/weight "
        + ", ".join(f"{g}={r:.3f}" for g, r in ratios.items())
    )
    assert all(abs(ratio - 1) <= 0.10 for ratio in ratios.values()), ratios
    _assert_within_bounds(list(sim.runs.values()))


def test_light_groups_arriving_into_a_flood_wait_no_longer_than_the_stated_bound() -> None:
    """R0-05, R11.1-08 (MWP-WRK-010): while the heavy Group keeps a deep backlog, the light
    Groups' items arrive now and then (about half their fair share): each is picked within
    its ``D_k``, and one that finds its Group's queue empty within the head-item bound."""
    rng = random.Random(1401)
    sim = Simulation(Scheduler(POLICY), SLOTS)
    for n in range(20_000):
        sim.offer(_item(HEAVY, n, n * 0.01, rng.randint(5, 60)))
    last = 0.0
    for group, weight in LIGHT_WEIGHTS.items():
        clock = 0.0
        for n in range(40):
            clock += rng.expovariate(weight * SLOTS / sum(WEIGHTS.values()) / 2 / 32.5)
            sim.offer(_item(group, n, clock, rng.randint(5, 60)))
        last = max(last, clock)
    sim.run(until=last + 2_000)

    light = [run for run in sim.runs.values() if run.item.group != HEAVY]
    assert all(run.waited is not None for run in light)
    _assert_within_bounds(list(sim.runs.values()))
    worst = max(light, key=lambda run: run.waited or 0)
    print(
        f"\nflood: longest wait of a light item {worst.waited} decisions "
        f"(its bound {worst.bound}; head-item bound {_head_bound(worst.item.group):.0f})"
    )
