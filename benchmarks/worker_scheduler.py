"""``python -m benchmarks.worker_scheduler [--quick] [--write]``: one scheduling decision.

Times ``Scheduler.pick`` (issue 14: p99 <= 1 ms at 1,000 Groups x 100,000 queued items,
growing as O(log n)) over a grid of Groups x queued items. Standalone: the scheduler is pure
Python with no Django, so this neither sets up Django nor touches a database, unlike
``benchmarks.run`` (which sets Django up before any ``--only`` choice).

Each cell builds a steady state: items spread over the Groups at random (weights 1-4, the
four urgencies, one in ten needing a GPU, a few gated awaiting approval), then repeats
*pick → finish → enqueue a fresh item* so the queue keeps its size, timing only ``pick``
with ``perf_counter_ns``. Half the decisions offer a GPU, so both need classes are searched.
After building, ``gc.freeze()`` moves the long-lived queue out of the collector's
generations, as a long-running Worker's would be after its first full collections.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import random
import statistics
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from missionweave.protocol.contracts import URGENCIES
from missionweave.worker.scheduler import (
    Needs,
    QueuedItem,
    Resources,
    Scheduler,
    SchedulingPolicy,
    Share,
)

from .stats import percentile

RESULTS = Path(__file__).with_name("worker_scheduler_results.md")
T0 = datetime(2026, 1, 1, tzinfo=UTC)
GPU = Needs.of("gpu")
WITH_GPU = Resources(slots=1, capabilities=frozenset({"gpu"}))
WITHOUT_GPU = Resources(slots=1)


@dataclass(frozen=True)
class Cell:
    groups: int
    items: int
    decisions: int
    build_s: float
    p50_us: float
    p99_us: float
    mean_us: float
    max_us: float
    cpu_p50_us: float
    cpu_p99_us: float


def _item(rng: random.Random, n: int, groups: int, clock: float) -> QueuedItem:
    return QueuedItem(
        group=f"g{rng.randrange(groups)}",
        work_item=f"wi-{n}",
        mission="m",
        urgency=rng.choice(URGENCIES),
        deadline=T0 + timedelta(seconds=clock + rng.randint(600, 7200))
        if rng.random() < 0.3
        else None,
        queued_at=T0 + timedelta(seconds=clock),
        risk_gated=rng.random() < 0.01,
        needs=GPU if rng.random() < 0.1 else Needs(),
        estimated_seconds=float(rng.randint(5, 600)),
    )


def measure(groups: int, items: int, decisions: int, *, seed: int = 14) -> Cell:
    rng = random.Random(seed)
    policy = SchedulingPolicy(
        shares={f"g{n}": Share(weight=rng.randint(1, 4)) for n in range(groups)}
    )
    scheduler = Scheduler(policy)
    started = time.perf_counter()
    for n in range(items):
        scheduler.enqueue(_item(rng, n, groups, n * 0.01))
    build_s = time.perf_counter() - started
    gc.collect()
    gc.freeze()
    samples: list[float] = []
    cpu: list[float] = []
    warmup = min(1_000, decisions // 10)
    now = T0
    for n in range(warmup + decisions):
        free = WITH_GPU if n % 2 else WITHOUT_GPU
        before, cpu_before = time.perf_counter_ns(), time.thread_time_ns()
        pick = scheduler.pick(free, now)
        cpu_after, after = time.thread_time_ns(), time.perf_counter_ns()
        assert pick is not None
        if n >= warmup:
            samples.append((after - before) / 1_000)
            cpu.append((cpu_after - cpu_before) / 1_000)
        item = pick.item
        scheduler.finish(item.group, item.work_item, used_seconds=pick.reserved_seconds)
        scheduler.enqueue(_item(rng, items + n, groups, items * 0.01 + n))
    gc.unfreeze()
    samples.sort()
    cpu.sort()
    return Cell(
        groups,
        items,
        decisions,
        build_s,
        percentile(samples, 0.50),
        percentile(samples, 0.99),
        statistics.fmean(samples),
        samples[-1],
        percentile(cpu, 0.50),
        percentile(cpu, 0.99),
    )


def _facts() -> list[str]:
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    return [
        f"- machine: {platform.machine()}, {os.cpu_count()} CPUs (nproc), "
        f"load average {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} when the run started",
        f"- Python {platform.python_version()} ({platform.python_implementation()}), "
        f"{platform.system()} {platform.release()}",
        f"- run at {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}",
    ]


def _table(cells: list[Cell]) -> list[str]:
    rows = [
        "| groups | queued items | decisions timed | build (s) | p50 (µs) | p99 (µs) "
        "| mean (µs) | max (µs) | CPU p50 (µs) | CPU p99 (µs) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    rows += [
        f"| {c.groups:,} | {c.items:,} | {c.decisions:,} | {c.build_s:.2f} | {c.p50_us:.1f} "
        f"| {c.p99_us:.1f} | {c.mean_us:.1f} | {c.max_us:.0f} | {c.cpu_p50_us:.1f} "
        f"| {c.cpu_p99_us:.1f} |"
        for c in cells
    ]
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.worker_scheduler", description=__doc__
    )
    parser.add_argument("--quick", action="store_true", help="small sizes: checks the wiring")
    parser.add_argument("--write", action="store_true", help=f"write the table to {RESULTS.name}")
    parser.add_argument("--decisions", type=int, default=20_000)
    args = parser.parse_args(argv)
    sizes = (10, 100) if args.quick else (10, 100, 1_000)
    counts = (1_000, 2_000) if args.quick else (1_000, 10_000, 100_000)
    decisions = 500 if args.quick else args.decisions
    facts = _facts()
    cells = []
    for groups in sizes:
        for items in counts:
            cell = measure(groups, items, decisions)
            print(
                f"{groups:>5} groups {items:>7} items: p50 {cell.p50_us:6.1f} µs, "
                f"p99 {cell.p99_us:6.1f} µs, max {cell.max_us:7.0f} µs; "
                f"CPU p50 {cell.cpu_p50_us:6.1f} µs, p99 {cell.cpu_p99_us:6.1f} µs",
                flush=True,
            )
            cells.append(cell)
    table = _table(cells)
    print("\n".join(table))
    if args.write:
        command = "python -m benchmarks.worker_scheduler --write" + (
            " --quick" if args.quick else ""
        )
        RESULTS.write_text(_report(command, facts, table, cells), encoding="utf-8")
        print(f"wrote {RESULTS}")
    return 0


def _growth(cells: list[Cell]) -> list[str]:
    """How the CPU p50 grows along each axis, largest against smallest."""
    by = {(c.groups, c.items): c for c in cells}
    groups, items = sorted({c.groups for c in cells}), sorted({c.items for c in cells})
    lines = []
    for g in groups:
        low, high = by[(g, items[0])], by[(g, items[-1])]
        lines.append(
            f"- {g:,} Groups, {items[0]:,} → {items[-1]:,} items "
            f"(x{items[-1] // items[0]}): CPU p50 x{high.cpu_p50_us / low.cpu_p50_us:.2f}"
        )
    for n in items:
        low, high = by[(groups[0], n)], by[(groups[-1], n)]
        lines.append(
            f"- {n:,} items, {groups[0]:,} → {groups[-1]:,} Groups "
            f"(x{groups[-1] // groups[0]}): CPU p50 x{high.cpu_p50_us / low.cpu_p50_us:.2f}"
        )
    return lines


def _report(command: str, facts: list[str], table: list[str], cells: list[Cell]) -> str:
    head = max(cells, key=lambda c: (c.groups, c.items))
    verdict = "meets" if head.p99_us <= 1_000 else "misses"
    return "\n".join(
        [
            "# Worker scheduler: one scheduling decision",
            "",
            "Issue 14 target: p99 <= 1 ms per decision at 1,000 Groups x 100,000 queued items,",
            "growing as O(log n). Written by the benchmark itself; numbers are from one run.",
            "",
            f"Command: `{command}` (from the repository root, in the project's venv). No Django",
            "and no database: the scheduler is pure Python, so this is not wired into",
            "`benchmarks.run`, which sets Django up for every `--only` choice.",
            "",
            *facts,
            "",
            *table,
            "",
            f"At {head.groups:,} Groups x {head.items:,} items the p99 is {head.p99_us:.1f} µs "
            f"wall clock ({head.cpu_p99_us:.1f} µs CPU): it {verdict} the 1 ms target.",
            "",
            "Growth of the median CPU time, each axis x100: O(log n) predicts a small factor",
            "(heap depth x1.5-2, plus cache misses as the working set outgrows the caches),",
            "O(n) would be x100:",
            "",
            *_growth(cells),
            "",
            "What is timed: `Scheduler.pick` alone, in a steady state (each decision's item is",
            "finished and a fresh one queued, untimed, so the queue keeps its size). Items: random",
            "Group (weights 1-4), the four urgencies, 30% with a deadline, 10% needing a GPU, 1%",
            "gated; half the decisions offer a GPU. A decision pops the chosen Group's item heap",
            "and pushes that Group's pool entries (one per need class it has): log of one Group's",
            "items and log of the Groups, never a scan of either.",
            "",
            "Wall-clock columns (`perf_counter_ns`) include any time the thread was not running;",
            "the CPU columns (`thread_time_ns`) do not. When the load average exceeds the CPUs",
            "(other builds sharing the machine), the wall-clock p99 and max are mostly waits for",
            "a CPU, and the CPU columns are the scheduler's own cost. `max` also catches the",
            "cyclic garbage collector's rare full collections.",
            "",
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
