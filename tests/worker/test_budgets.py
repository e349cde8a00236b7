"""Budgets never leak (issue 35 §1): what a handler charges reaches the authority, online as
``work.usage`` and offline in the binding's six-dimension usage delta (R11.5-08, R11.5-12);
a charge the authority refuses (``BUDGET_EXCEEDED``, R11.5-13) stops the item's work — it is
blocked for its budget, never submitted. The runtime meters the handler's wall-clock and
compute seconds itself (R10.1-01(g))."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from missionweave.client.errors import ApiError
from missionweave.protocol import states as S
from missionweave.protocol.budgets import USAGE_RECORDED
from missionweave.protocol.offline import parse_binding
from missionweave.worker.config import ProgressCadence
from missionweave.worker.handlers import Progress, TaskResult
from missionweave.worker.metering import Meter, budget_resolution
from missionweave.worker.slots import SlotContext
from tests.worker.fake_work import result_for
from tests.worker.runtime_world import World, world

ALPHA = "g-alpha"
#: every report due at once: what a handler charges goes out at the next tick
EAGER = ProgressCadence(min_interval_s=0.0, max_interval_s=60.0)


def _events(w: World, type_: str) -> list[dict[str, Any]]:
    return [e for e in w.authority.groups[ALPHA].events() if e["type"] == type_]


def _spin(seconds: float) -> None:
    """Busy CPU in the calling thread for about ``seconds`` of its own CPU time."""
    until = time.thread_time() + seconds
    while time.thread_time() < until:
        pass


def test_usage_charged_offline_rides_in_the_binding_and_is_reconciled(tmp_path: Path) -> None:
    """R11.5-08, R11.5-12 (the issue's reproduction): a charge made while the authority is
    unreachable used to raise ``ValueError: work.usage cannot be buffered`` in the tick and
    was lost. It is buffered in the usage delta of a buffered progress report's binding, and on
    reconnection the authority appends ``resource_usage_recorded`` and charges the item."""
    offline, finish = threading.Event(), threading.Event()

    def handler(ctx: SlotContext, progress: Progress) -> TaskResult:
        offline.wait(10)
        progress.charge(tokens=250, money=0.02)
        progress.milestone("read offline")
        finish.wait(10)
        return result_for(ctx.mission_context, 1)

    with world(tmp_path, handlers={"text.summarise": handler}) as w:
        w.authority.story(ALPHA, "wi-1")
        w.authority.offer(ALPHA, "wi-1")
        w.until(lambda: len(w.sent("work.progress")) == 1)
        w.authority.unreachable = True
        w.clock.advance(10)
        offline.set()
        w.until(lambda: len(w.worker.buffer) >= 1)
        for _ in range(5):
            w.tick()
        assert w.worker.errors == []
        delta: dict[str, float] = {}
        for entry in w.worker.buffer.pending():
            for dimension, amount in parse_binding(entry.binding).usage.items():
                delta[dimension] = delta.get(dimension, 0) + amount
        assert (delta.get("tokens"), delta.get("money")) == (250, 0.02)

        w.authority.unreachable = False
        finish.set()
        w.until(lambda: w.state(ALPHA, "wi-1") == S.SUBMITTED)
        recorded = _events(w, USAGE_RECORDED)
        assert sum(e["payload"]["usage"].get("tokens", 0) for e in recorded) == 250
        used = w.authority.item(ALPHA, "wi-1")["budgets"]["used"]
        assert (used["tokens"], used["money"]) == (250, 0.02)


def test_the_runtime_meters_wall_clock_and_compute_into_the_offline_binding(
    tmp_path: Path,
) -> None:
    """R11.5-08 (the issue's reproduction: the binding's usage was always ``{}``), R10.1-01(g):
    the handler's own CPU seconds and the wall-clock of its run are metered by the runtime and,
    offline, carried in the binding of what is buffered."""
    offline, finish = threading.Event(), threading.Event()

    def handler(ctx: SlotContext, progress: Progress) -> TaskResult:
        offline.wait(10)
        _spin(0.05)
        progress.milestone("computed offline")
        finish.wait(10)
        return result_for(ctx.mission_context, 1)

    with world(tmp_path, handlers={"text.summarise": handler}) as w:
        w.authority.story(ALPHA, "wi-1")
        w.authority.offer(ALPHA, "wi-1")
        w.until(lambda: len(w.sent("work.progress")) == 1)
        w.authority.unreachable = True
        w.clock.advance(10)
        offline.set()
        w.until(lambda: len(w.worker.buffer) >= 1)
        usage = [parse_binding(entry.binding).usage for entry in w.worker.buffer.pending()]
        assert sum(u.get("compute", 0) for u in usage) >= 0.04
        assert sum(u.get("wall_clock", 0) for u in usage) >= 0.04
        w.authority.unreachable = False
        finish.set()
        w.until(lambda: w.state(ALPHA, "wi-1") == S.SUBMITTED)


def test_what_the_runtime_meters_is_charged_online_before_the_submission(tmp_path: Path) -> None:
    """R10.1-01(g): online, the metered compute and wall-clock are sent as ``work.usage`` under
    the item's lease like the handler's own charges, all of it before ``work.submit``."""

    def handler(ctx: SlotContext, progress: Progress) -> TaskResult:
        _spin(0.03)
        return result_for(ctx.mission_context, 1)

    with world(tmp_path, handlers={"text.summarise": handler}) as w:
        w.authority.story(ALPHA, "wi-1")
        w.authority.offer(ALPHA, "wi-1")
        w.until(lambda: w.state(ALPHA, "wi-1") == S.SUBMITTED)
        used = w.authority.item(ALPHA, "wi-1")["budgets"]["used"]
        assert used["compute"] >= 0.025
        assert used["wall_clock"] >= used["compute"] - 0.01
        order = [s.type for s in w.authority.sent]
        assert order.index("work.usage") < order.index("work.submit")


def test_a_refused_charge_blocks_the_item_for_its_budget_instead_of_submitting(
    tmp_path: Path,
) -> None:
    """R11.5-13 (the issue's reproduction: the refusal was logged and the item submitted
    anyway): once the authority refuses a charge with ``BUDGET_EXCEEDED``, the handler is asked
    to stop; at its next checkpoint the item is blocked (``work.block``) with a required
    resolution naming the budget, the slot is released, nothing is submitted, and the item's
    recorded usage never passes its limit."""
    steps: list[int] = []

    def handler(ctx: SlotContext, progress: Progress) -> TaskResult:
        resume = ctx.resume_from.state if ctx.resume_from is not None else None
        step = int(resume["next"]) if isinstance(resume, dict) else 0
        while step < 50:
            progress.charge(tokens=400)
            step += 1
            steps.append(step)
            ctx.checkpoint({"next": step})
            progress.milestone(f"step {step}")
            while not ctx.should_yield() and len(w.sent("work.usage")) < step:
                time.sleep(0.002)
        return result_for(ctx.mission_context, step)

    with world(tmp_path, handlers={"text.summarise": handler}, progress=EAGER) as w:
        w.authority.story(ALPHA, "wi-1", budgets={"tokens": 1000, "money": 5.0})
        w.authority.offer(ALPHA, "wi-1")
        w.until(lambda: w.state(ALPHA, "wi-1") == S.BLOCKED)
        w.until(lambda: w.worker.pool.free == 1 and not w.worker._snapshot())
        assert w.sent("work.submit") == []
        (block,) = w.sent("work.block")
        resolution = block.body["required_resolution"]
        assert "tokens" in resolution
        assert "1,000" in resolution
        item = w.authority.item(ALPHA, "wi-1")
        assert item["budgets"]["used"]["tokens"] <= 1000
        assert block.body["checkpoint"]["ref"] == item["last_checkpoint"]["ref"]
        assert steps[-1] < 50  # stopped, not run to the end


def test_a_charge_refused_after_the_handler_returned_blocks_instead_of_submitting(
    tmp_path: Path,
) -> None:
    """R11.5-13: the last charge goes before ``work.submit``; refused, the finished result is
    not submitted (its cost is not on record): the item is blocked for its budget, citing its
    last checkpoint."""

    def handler(ctx: SlotContext, progress: Progress) -> TaskResult:
        ctx.checkpoint({"next": 1})
        progress.charge(tokens=5000)
        return result_for(ctx.mission_context, 1)

    with world(tmp_path, handlers={"text.summarise": handler}) as w:
        w.authority.story(ALPHA, "wi-1", budgets={"tokens": 1000})
        w.authority.offer(ALPHA, "wi-1")
        w.until(lambda: w.state(ALPHA, "wi-1") == S.BLOCKED)
        w.until(lambda: not w.worker._snapshot())
        assert w.sent("work.submit") == []
        (block,) = w.sent("work.block")
        assert "tokens" in block.body["required_resolution"]
        assert block.body["checkpoint"]["ref"].endswith("/c1")
        assert w.authority.item(ALPHA, "wi-1")["budgets"]["used"].get("tokens", 0) == 0


def test_a_charge_refused_on_reconciliation_stops_the_running_item(tmp_path: Path) -> None:
    """R11.5-13 offline: the authority refuses the buffered report whose binding's delta
    overflows the budget, and charges nothing; the item, still running here after the blip,
    stops at its next checkpoint and is blocked for its budget."""
    offline = threading.Event()

    def handler(ctx: SlotContext, progress: Progress) -> TaskResult:
        offline.wait(10)
        progress.charge(tokens=5000)
        progress.milestone("read everything offline")
        step = 0
        while True:
            step += 1
            ctx.checkpoint({"next": step})
            time.sleep(0.005)

    with world(tmp_path, handlers={"text.summarise": handler}) as w:
        w.authority.story(ALPHA, "wi-1", budgets={"tokens": 1000, "side_effects": 0})
        w.authority.offer(ALPHA, "wi-1")
        w.until(lambda: len(w.sent("work.progress")) == 1)
        w.authority.unreachable = True
        w.clock.advance(10)
        offline.set()
        w.until(lambda: len(w.worker.buffer) >= 1)
        w.authority.unreachable = False
        w.until(lambda: w.state(ALPHA, "wi-1") == S.BLOCKED)
        (block,) = w.sent("work.block")
        assert "tokens" in block.body["required_resolution"]
        assert _events(w, USAGE_RECORDED) == []
        assert w.authority.item(ALPHA, "wi-1")["budgets"]["used"].get("tokens", 0) == 0
        w.until(lambda: not w.worker._snapshot())


# --- the pieces ------------------------------------------------------------------------------


def test_the_meter_counts_the_handlers_own_cpu_and_wall_clock_while_it_runs() -> None:
    """R10.1-01(g): compute is the slot thread's CPU time, read from another thread while the
    handler runs; each millisecond is handed over once, and nothing after the handler ended."""
    meter = Meter()
    spun, finish = threading.Event(), threading.Event()

    def handler(ctx: object) -> str:
        _spin(0.05)
        spun.set()
        finish.wait(10)
        return "done"

    thread = threading.Thread(target=meter.wrap(handler), args=(None,))
    thread.start()
    assert spun.wait(10)
    during = meter.take()
    assert during["compute"] >= 0.045
    assert during["wall_clock"] >= during["compute"] - 0.005
    finish.set()
    thread.join(10)
    rest = meter.take()
    assert rest.get("compute", 0) < 0.02  # waiting costs no CPU
    assert meter.take() == {}  # handed over once
    wall, cpu = meter.totals()
    assert round(wall, 3) == round(during["wall_clock"] + rest.get("wall_clock", 0), 3)
    assert round(cpu, 3) == round(during["compute"] + rest.get("compute", 0), 3)


def test_a_handler_charges_only_the_six_dimensions_in_non_negative_numbers() -> None:
    """wire.md §9: a misspelt dimension or a non-number would be refused as MALFORMED and
    the charge lost; the handler hears of it at once instead."""
    progress = Progress()
    for bad in ({"token": 1}, {"tokens": -1}, {"tokens": float("nan")}, {"money": True}):
        with pytest.raises(ValueError, match=r"usage|dimension"):
            progress.charge(**bad)
    progress.charge(tokens=3, side_effects=1)
    assert progress._take_charges() == {"tokens": 3, "side_effects": 1}


def test_the_budget_resolution_says_which_budget_in_plain_words() -> None:
    """The required resolution is read by a person on the WorkItem page: the budget, its
    holder, the numbers, and what to do — no error code."""
    refusal = ApiError(
        409,
        "BUDGET_EXCEEDED",
        "tokens: 900 used + 400 would exceed the mission m-1's limit of 1000",
        "R11.5-13",
        {
            "dimension": "tool_calls",
            "budget": {"kind": "mission", "id": "m-1", "limit": 1000, "used": 900.0},
            "requested": 400,
        },
    )
    text = budget_resolution(refusal)
    assert text == (
        "The tool calls budget of mission m-1 is used up: 900 of 1,000 used, and the work "
        "needs 400 more. Raise the budget, or end this work item."
    )
    assert "BUDGET_EXCEEDED" not in text
    assert "R11" not in text
