"""What each item uses, charged to its budgets so none of it leaks (R10.1-01(g), R11.5-08,
R11.5-12, R11.5-13).

Six dimensions (wire.md §9 ``work.usage``): ``money``, ``tokens``, ``tool_calls``,
``side_effects`` are the handler's to state (``progress.charge``), since only it knows what it
bought; ``wall_clock`` and ``compute`` the runtime measures itself (``Meter``): the seconds the
handler ran in its slot and the CPU seconds of its slot's thread, so a handler that forgets to
charge still cannot run past its contract's time budgets unseen.

``Charger`` turns them into charges, each amount exactly once:

- online, ``work.usage`` under the item's lease, at each progress report, before a checkpoint
  or block releases the lease, and before the submission closes it;
- offline, ``work.usage`` cannot be buffered (R11.5-04 lists progress and checkpoints), so the
  delta rides in the binding of a buffered ``work.progress`` (R11.5-08), which the authority
  charges with ``resource_usage_recorded`` on reconciliation (R11.5-12);
- refused with ``BUDGET_EXCEEDED`` (R11.5-13), online or on reconciliation, the item must stop:
  ``stop_for_budget`` records why on the run and asks its handler to block at its next
  checkpoint (``blocking.py``); a handler that already returned is blocked instead of
  submitted (``stops.py``). Nothing more is charged for that run: the authority's record
  stays within the limit, and the block's required resolution says which budget is spent.

**Choice: block, not fail.** A refused charge is not a failure of the work but a limit only a
person can move, which is what a block is for (R11.4-04, R11.4-06: the coordinator resolves
the blocker or reassigns the work). A ``work.fail`` would hand the item to the retry policy
(R11.4-08), which would run it again into the same limit, and would discard its checkpoint.
Blocked, the item keeps its owner and checkpoint for the bounded blocked lease (R11.4-05): the
coordinator can re-offer it with a larger budget (unblock to ``open``, a corrected contract),
unblock it as it is, or fail or cancel it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from missionweave.client.errors import ApiError

from .link import Offline
from .progress import estimate_of, progress_body

if TYPE_CHECKING:
    from .execution import Running
    from .outbox import Outbox

log = logging.getLogger("missionweave.worker")

BUDGET_EXCEEDED = "BUDGET_EXCEEDED"
#: the metered dimensions are charged in milliseconds: finer is noise, and rounding the
#: running totals (not each delta) loses nothing over many charges
_DECIMALS = 3
#: plain words for each dimension, for the required resolution a person reads
_WORDS = {
    "money": "money",
    "tokens": "tokens",
    "tool_calls": "tool calls",
    "compute": "compute seconds",
    "wall_clock": "wall-clock seconds",
    "side_effects": "side effects",
}
_HOLDERS = {"work_item": "work item", "mission": "mission"}
# what became of a ``work.usage``
_SENT, _OFFLINE, _REFUSED = "sent", "offline", "refused"


class Meter:
    """The wall-clock and CPU seconds of one handler's run (R10.1-01(g) ``wall_clock``,
    ``compute``), read by the runtime's loop while the handler runs in its slot thread.

    The CPU clock is the slot thread's own (``pthread_getcpuclockid``), read from the loop
    thread only while that thread is known to be alive: the handler's wrapper takes the lock
    to record its end, so it cannot finish mid-read (a dead thread's clock is undefined).
    Where the platform has no per-thread clock, compute is known when the handler ends.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._started: float | None = None
        self._wall = 0.0
        self._cpu0 = 0.0
        self._cpu = 0.0
        self._clock_id: int | None = None
        self._running = False
        self._billed = {"wall_clock": 0.0, "compute": 0.0}

    def wrap(self, handler: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """``handler`` measured: the slot thread runs this instead."""

        def metered(ctx: Any) -> Any:
            self._begin()
            try:
                return handler(ctx)
            finally:
                self._end()

        return metered

    def _begin(self) -> None:
        clock_id: int | None
        try:
            clock_id = time.pthread_getcpuclockid(threading.get_ident())
        except (AttributeError, OSError):
            clock_id = None
        with self._lock:
            self._clock_id = clock_id
            self._started = time.monotonic()
            self._cpu0 = time.thread_time()
            self._running = True

    def _end(self) -> None:
        cpu = time.thread_time()
        with self._lock:
            if self._started is not None:
                self._wall = time.monotonic() - self._started
            self._cpu = cpu - self._cpu0
            self._running = False

    def totals(self) -> tuple[float, float]:
        """(wall-clock, CPU) seconds so far."""
        with self._lock:
            if not self._running or self._started is None:
                return self._wall, self._cpu
            wall = time.monotonic() - self._started
            cpu = self._cpu
            if self._clock_id is not None:
                cpu = time.clock_gettime(self._clock_id) - self._cpu0
            return wall, cpu

    def take(self) -> dict[str, float]:
        """What was not charged yet, in whole milliseconds, handed over once."""
        wall, cpu = self.totals()
        due: dict[str, float] = {}
        with self._lock:
            for dimension, total in (("wall_clock", wall), ("compute", cpu)):
                rounded = round(total, _DECIMALS)
                delta = round(rounded - self._billed[dimension], _DECIMALS)
                if delta > 0:
                    due[dimension] = delta
                    self._billed[dimension] = rounded
        return due


def add(total: Mapping[str, float], more: Mapping[str, float]) -> dict[str, float]:
    summed = dict(total)
    for dimension, amount in more.items():
        summed[dimension] = summed.get(dimension, 0) + amount
    return {dimension: amount for dimension, amount in summed.items() if amount}


def _number(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"{value:,}" if isinstance(value, int) else f"{value:g}"


def budget_resolution(error: ApiError) -> str:
    """The required resolution of a block for a refused charge, in plain words a person acts
    on (no codes: those are in the refusal the log keeps), from ``BUDGET_EXCEEDED``'s
    ``details`` {dimension, budget {kind, id, limit, used}, requested} (wire.md §8)."""
    details = error.details or {}
    budget = details.get("budget") or {}
    dimension = str(details.get("dimension") or "a")
    words = _WORDS.get(dimension, dimension)
    holder = f"{_HOLDERS.get(str(budget.get('kind')), 'budget of')} {budget.get('id', '')}".strip()
    if "limit" not in budget:
        return f"The {words} budget is used up. Raise it, or end this work item."
    used, limit = _number(budget.get("used", 0)), _number(budget["limit"])
    needed = _number(details.get("requested", 0))
    return (
        f"The {words} budget of {holder} is used up: {used} of {limit} used, and the work "
        f"needs {needed} more. Raise the budget, or end this work item."
    )


class Charger:
    """Each running item's usage, charged once (see the module doc)."""

    def __init__(self, outbox: Outbox) -> None:
        self.outbox = outbox

    def due(self, run: Running) -> dict[str, float]:
        """What ``run`` used since its last charge: metered and stated, handed over once."""
        return add(run.meter.take(), run.progress._take_charges())

    def charge(self, run: Running) -> bool:
        """Charge what is due: ``work.usage`` online, a buffered progress report's binding
        offline. False when the budget refused it (now or before): the item must stop."""
        usage = self._take(run)
        if usage and self._send(run, usage) == _OFFLINE:
            self._buffer(run, "work.progress", self._progress(run), usage)
        return run.stop_for is None

    def carry(self, run: Running, type_: str, body: dict[str, Any]) -> bool:
        """``body`` (a progress report, a checkpoint) and the usage due with it: online,
        ``work.usage`` first, under the lease the checkpoint may release; offline, one
        buffered command whose binding carries the delta (R11.5-08). False when ``body`` was
        neither sent nor buffered."""
        usage = self._take(run)
        if self.outbox.online and (not usage or self._send(run, usage) != _OFFLINE):
            return self.outbox.send_or_buffer(run, type_, body)
        return self._buffer(run, type_, body, usage)

    def _take(self, run: Running) -> dict[str, float]:
        usage = self.due(run)
        if run.stop_for is None:
            return usage
        run.refused = add(run.refused, usage)  # nothing is sent past a refused budget
        return {}

    def _send(self, run: Running, usage: dict[str, float]) -> str:
        body = {"work_item": run.work_item, "lease_id": run.lease_id, "usage": usage}
        try:
            self.outbox.send(run, "work.usage", body)
        except Offline:
            return _OFFLINE
        except ApiError as error:
            if error.code == BUDGET_EXCEEDED:
                self.stop_for_budget(run, error, usage)
                return _REFUSED
            # fenced or gone: this run charges the item no more (the fence stops it)
            log.warning("usage of %s refused: %s", run.work_item, error)
            return _REFUSED
        return _SENT

    def _buffer(
        self, run: Running, type_: str, body: dict[str, Any], usage: dict[str, float]
    ) -> bool:
        if self.outbox.buffer(run, type_, body, usage=usage):
            return True
        if usage:  # past the grace period, or online again: charged at the next chance
            run.progress.charge(**usage)
        return False

    def _progress(self, run: Running) -> dict[str, Any]:
        state = run.progress.state
        estimate = estimate_of(
            state, started_at=run.started_at, expected_s=run.expected_s, now=self.outbox.now()
        )
        return progress_body(
            work_item=run.work_item, lease_id=run.lease_id, state=state, estimate=estimate
        )

    def stop_for_budget(
        self, run: Running, error: ApiError, usage: Mapping[str, float] | None = None
    ) -> None:
        """R11.5-13: the authority refused a charge of ``run``; its work stops at the next
        checkpoint, blocked with the budget named (``blocking.py``), never submitted."""
        if usage:
            run.refused = add(run.refused, usage)
        if run.stop_for is not None:
            return
        run.stop_for = budget_resolution(error)
        log.warning("%s/%s stops: %s (%s)", run.group, run.work_item, run.stop_for, error)
        slot = run.slot
        if slot is not None:
            slot.request_block(run.stop_for)
