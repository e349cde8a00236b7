"""A deterministic discrete-event simulation of a Worker's slots driven by the scheduler.

Virtual clock, no threads: arrivals and completions are events in time order; at each instant
completions are settled first (``finish``), then arrivals queued, then free slots filled with
``pick``. Each item's actual slot time equals its estimate, so no charge exceeds a
reservation (``E = 0`` in the bound). For every arrival the simulation records the bound
``D_k`` at enqueue, with ``k`` the items of its Group still queued: the within-Group order is
FIFO for the Groups whose bound is checked (one urgency, no deadline, arrivals in order).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from missionweave.worker.scheduler import QueuedItem, Resources, Scheduler

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


@dataclass
class Run:
    """One item's life in the simulation."""

    item: QueuedItem
    duration: float
    position: int = 0
    bound: int = 0
    waited: int | None = None
    started: float | None = None


@dataclass
class Simulation:
    scheduler: Scheduler
    slots: int
    runs: dict[tuple[str, str], Run] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)  # the Group of each decision
    _arrivals: list[tuple[float, int, QueuedItem, float]] = field(default_factory=list)
    _count: int = 0

    def offer(self, item: QueuedItem, duration: float | None = None) -> None:
        """``item`` arrives at its ``queued_at`` and, once picked, runs ``duration`` seconds
        (by default its estimate)."""
        duration = float(item.estimated_seconds or 0) if duration is None else duration
        arrival = (item.queued_at - T0).total_seconds()
        self._arrivals.append((arrival, self._count, item, duration))
        self._count += 1

    def run(self, *, until: float = float("inf")) -> float:
        """Simulate once, up to ``until`` (or until nothing is left); returns the final time."""
        done: list[tuple[float, int, str, str]] = []  # (end, tie, group, work_item)
        arrivals = sorted(self._arrivals, key=lambda row: row[:2])
        self._arrivals = []
        next_ = 0
        now = 0.0
        free = self.slots
        while next_ < len(arrivals) or done:
            now = min(
                arrivals[next_][0] if next_ < len(arrivals) else float("inf"),
                done[0][0] if done else float("inf"),
            )
            if now > until:
                return until
            while done and done[0][0] <= now:
                _, _, group, work_item = heapq.heappop(done)
                run = self.runs[(group, work_item)]
                self.scheduler.finish(group, work_item, used_seconds=run.duration)
                free += 1
            while next_ < len(arrivals) and arrivals[next_][0] <= now:
                _, _, item, duration = arrivals[next_]
                next_ += 1
                position = self.scheduler.queued(item.group)
                self.scheduler.enqueue(item)
                bound = self.scheduler.wait_bound(item.group, position)
                self.runs[(item.group, item.work_item)] = Run(item, duration, position, bound)
            while free:
                pick = self.scheduler.pick(Resources(slots=free), at(now))
                if pick is None:
                    break
                key = (pick.item.group, pick.item.work_item)
                run = self.runs[key]
                run.waited, run.started = pick.waited_decisions, now
                self.order.append(pick.item.group)
                heapq.heappush(done, (now + run.duration, pick.decision, *key))
                free -= 1
        return now

    def slot_time(self, until: float) -> dict[str, float]:
        """Slot-seconds each Group used in ``[0, until]`` (running items clipped)."""
        used: dict[str, float] = {}
        for run in self.runs.values():
            if run.started is not None and run.started < until:
                end = min(run.started + run.duration, until)
                used[run.item.group] = used.get(run.item.group, 0.0) + end - run.started
        return used


def jain(values: list[float]) -> float:
    """Jain's fairness index (Jain, Chiu and Hawe, DEC-TR-301, 1984): 1 is perfectly fair."""
    return sum(values) ** 2 / (len(values) * sum(v * v for v in values))
