"""Cooperative preemption: R0-13, R11.3-12, R11.3-13, R0-12, R10.2-08 (MWP-WRK-015)."""

from __future__ import annotations

import contextlib
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from missionweave.worker.preemption import (
    FIVE_STEPS,
    TRANSITIONS,
    IllegalStep,
    Phase,
    Preempted,
    Preemption,
    Step,
    request_preemption,
)
from missionweave.worker.slots import (
    Assignment,
    Checkpoint,
    ItemRef,
    Outcome,
    Slot,
    SlotClosed,
    SlotContext,
    SlotPool,
)

ITEM = Assignment(
    group="grp-1",
    mission="m-1",
    work_item="wi-1",
    ownership_epoch=1,
    lease_id="lease-1",
    tokens={"tools": "secret"},
    budgets={"search": 100},
)


class Runtime:
    """The callbacks a worker runtime would pass, recording what happened and when."""

    def __init__(self, pool: SlotPool) -> None:
        self.pool = pool
        self.calls: list[tuple[str, str, int]] = []

    def on_checkpoint(self, item: ItemRef, checkpoint: Checkpoint) -> None:
        # step 3: the checkpoint is durable before the authority hears of it
        assert self.pool.checkpoints(item.group, item.work_item).latest() == checkpoint
        self.calls.append(("on_checkpoint", checkpoint.ref, self.pool.free))

    def requeue(self, item: ItemRef, checkpoint_ref: str) -> None:
        self.calls.append(("requeue", checkpoint_ref, self.pool.free))

    def start(self, handler: Any, assignment: Assignment = ITEM) -> Slot:
        return self.pool.start(
            assignment, handler, on_checkpoint=self.on_checkpoint, requeue=self.requeue
        )


def _wait_for(event: threading.Event, slot: Slot) -> bool:
    """Until ``event`` is set (True) or the slot's run has ended first (False)."""
    while not event.is_set():
        if slot.join(timeout=0.001) is not None:
            return event.is_set()
    return True


# --- the must-hold ------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 40),
    k=st.integers(1, 8),
    preempt_at=st.lists(st.integers(0, 39), max_size=4),
    eager=st.booleans(),
)
def test_preemption_happens_only_at_a_checkpoint_and_resumes_from_it(
    n: int, k: int, preempt_at: list[int], eager: bool
) -> None:
    """R0-13, R11.3-12, R11.3-13 (MWP-WRK-015): a handler counts through ``n`` steps with a
    checkpoint every ``k`` (and, when ``eager``, also as soon as it is asked to yield). The
    scheduler requests preemption from another thread while the handler is running. Every
    stop happens right after a checkpoint the handler took, the five steps happen in order,
    the next slot resumes from that checkpoint, and across all runs every step is executed
    exactly once: nothing after a checkpoint is lost, nothing before it repeated."""
    log: list[tuple[str, int]] = []
    with tempfile.TemporaryDirectory() as root, SlotPool(1, Path(root)) as pool:
        runtime = Runtime(pool)
        points = sorted(preempt_at)
        resume_at = 0
        for run in range(len(points) + 1):
            point = points[run] if run < len(points) else None
            reached = threading.Event()

            def handler(ctx: SlotContext, point: int | None = point, reached=reached) -> int:
                start = ctx.resume_from.state["next"] if ctx.resume_from else 0
                log.append(("start", start))
                for i in range(start, n):
                    log.append(("step", i))
                    ctx.spend("search")
                    if point is not None and i >= point:
                        reached.set()
                    time.sleep(0)  # let the scheduler's request land anywhere
                    if (i + 1) % k == 0 or (eager and ctx.should_yield()):
                        log.append(("checkpoint", i + 1))
                        ctx.checkpoint({"next": i + 1})
                log.append(("done", n))
                return n

            first = len(log)
            slot = runtime.start(handler)
            if point is not None and _wait_for(reached, slot):
                request_preemption(slot)
            outcome = slot.join()
            # it resumed from the checkpoint the previous run stopped at (or from scratch)
            assert log[first] == ("start", resume_at)
            assert outcome is not None
            event(f"run ended {outcome.kind}")
            if outcome.kind == "finished":
                assert outcome.result == n
                assert slot.preemption.steps in {(Step.FINISH,), (Step.REQUEST, Step.FINISH)}
                break
            assert outcome.kind == "preempted"
            checkpoint = outcome.checkpoint
            assert checkpoint is not None
            # the stop happened at a checkpoint: the handler's last act was taking it, and it
            # came after the step at which the scheduler decided to ask (the request itself
            # precedes the checkpoint in the machine's steps, checked below)
            assert log[-1] == ("checkpoint", checkpoint.state["next"])
            assert point is not None
            assert checkpoint.state["next"] > point
            resume_at = checkpoint.state["next"]
            # the five steps, in order, and the callbacks in that order around the release
            assert slot.preemption.steps == FIVE_STEPS
            assert slot.preemption.phase is Phase.REQUEUED
            assert runtime.calls[-2:] == [
                ("on_checkpoint", checkpoint.ref, 0),  # recorded while the slot is held
                ("requeue", checkpoint.ref, 1),  # requeued after the slot was released
            ]
        else:
            pytest.fail("the last run has no preemption point and must finish")
    steps = [i for kind, i in log if kind == "step"]
    assert steps == list(range(n))


# --- the rules around it ------------------------------------------------------------------------


def test_a_request_never_interrupts_work_between_checkpoints(tmp_path: Path) -> None:
    """R11.3-12: while the handler is busy in an unsafe stretch it is not stopped, however
    long it takes; it stops at the checkpoint that ends the stretch."""
    with SlotPool(1, tmp_path) as pool:
        runtime = Runtime(pool)
        inside, finish = threading.Event(), threading.Event()
        done_unsafe: list[bool] = []

        def handler(ctx: SlotContext) -> str:
            inside.set()
            finish.wait(5)  # an unsafe stretch: half of a side effect, say
            done_unsafe.append(True)
            ctx.checkpoint({"after": "unsafe"})
            return "not reached"

        slot = runtime.start(handler)
        inside.wait(5)
        assert request_preemption(slot)
        assert slot.context.should_yield()
        assert slot.join(timeout=0.2) is None  # still running: no forced stop
        finish.set()
        outcome = slot.join(5)
        assert outcome is not None
        assert outcome.kind == "preempted"
        assert done_unsafe == [True]
        assert outcome.checkpoint.state == {"after": "unsafe"}


def test_a_checkpoint_without_a_request_does_not_stop_the_handler(tmp_path: Path) -> None:
    """R10.2-08: ordinary checkpoints stay local (``work.checkpoint`` would release the
    lease); only the checkpoint a preemption stops at is handed to the runtime."""
    with SlotPool(1, tmp_path) as pool:
        runtime = Runtime(pool)

        def handler(ctx: SlotContext) -> int:
            for i in range(3):
                ctx.checkpoint({"next": i + 1})
            return 3

        outcome = runtime.start(handler).join(5)
        assert outcome == Outcome("finished", result=3)
        assert runtime.calls == []
        assert pool.checkpoints("grp-1", "wi-1").latest().state == {"next": 3}


def test_a_handler_that_finishes_first_is_not_requeued(tmp_path: Path) -> None:
    """R11.3-13: a request is a wish; work that ends before its next checkpoint finishes."""
    with SlotPool(1, tmp_path) as pool:
        runtime = Runtime(pool)
        asked, go = threading.Event(), threading.Event()

        def handler(ctx: SlotContext) -> str:
            asked.set()
            go.wait(5)
            return "done"

        slot = runtime.start(handler)
        asked.wait(5)
        request_preemption(slot)
        go.set()
        assert slot.join(5) == Outcome("finished", result="done")
        assert slot.preemption.steps == (Step.REQUEST, Step.FINISH)
        assert runtime.calls == []
        assert request_preemption(slot) is False  # nothing left to preempt


def test_a_handler_that_swallows_preempted_stays_paused(tmp_path: Path) -> None:
    """R0-13(3): once the preemption checkpoint is durable the handler is paused: its context
    refuses further work and what it returns is discarded; the item is requeued."""
    with SlotPool(1, tmp_path) as pool:
        runtime = Runtime(pool)
        refused: list[str] = []

        def handler(ctx: SlotContext) -> str:
            while not ctx.should_yield():
                time.sleep(0.001)
            with contextlib.suppress(BaseException):  # a careless handler
                ctx.checkpoint({"next": 1})
            for attempt in (lambda: ctx.spend("search"), ctx.tokens, lambda: ctx.checkpoint({})):
                try:
                    attempt()
                except Preempted:
                    refused.append("refused")
            return "late result"

        slot = runtime.start(handler)
        request_preemption(slot)
        outcome = slot.join(5)
        assert outcome is not None
        assert outcome.kind == "preempted"
        assert outcome.result is None
        assert refused == ["refused"] * 3
        assert slot.preemption.steps == FIVE_STEPS
        assert pool.checkpoints("grp-1", "wi-1").latest().sequence == 1  # no later checkpoint


def test_a_failing_handler_releases_its_slot_and_is_not_requeued(tmp_path: Path) -> None:
    with SlotPool(1, tmp_path) as pool:
        runtime = Runtime(pool)

        def handler(ctx: SlotContext) -> None:
            raise RuntimeError("tool crashed")

        slot = runtime.start(handler)
        outcome = slot.join(5)
        assert outcome is not None
        assert outcome.kind == "failed"
        assert isinstance(outcome.error, RuntimeError)
        assert pool.free == 1
        assert runtime.calls == []
        with pytest.raises(SlotClosed):
            slot.context.tokens()


def test_if_the_checkpoint_cannot_be_recorded_the_item_is_not_requeued(
    tmp_path: Path,
) -> None:
    """R0-13(3) before (4)-(5): an item whose checkpoint the runtime could not hand on is not
    put back in the queue, but its slot is released and the durable checkpoint remains, so a
    later run of the item still resumes from it."""
    with SlotPool(1, tmp_path) as pool:
        requeued: list[str] = []

        def broken_record(item: ItemRef, checkpoint: Checkpoint) -> None:
            raise ConnectionError("signer unavailable")

        def handler(ctx: SlotContext) -> None:
            while not ctx.should_yield():
                time.sleep(0.001)
            ctx.checkpoint({"next": 7})

        slot = pool.start(
            ITEM,
            handler,
            on_checkpoint=broken_record,
            requeue=lambda item, ref: requeued.append(ref),
        )
        request_preemption(slot)
        outcome = slot.join(5)
        assert outcome is not None
        assert outcome.kind == "failed"
        assert isinstance(outcome.error, ConnectionError)
        assert slot.preemption.steps == (Step.REQUEST, Step.REACH_CHECKPOINT, Step.FAIL)
        assert requeued == []
        assert pool.free == 1
        assert pool.acquire(ITEM).context.resume_from.state == {"next": 7}


def test_release_happens_before_requeue_and_wipes_tokens(tmp_path: Path) -> None:
    """R0-13(4) before (5): when the item is back in its queue, its old slot holds nothing."""
    with SlotPool(1, tmp_path) as pool:
        seen: list[object] = []
        slot_box: list[Slot] = []

        def requeue(item: ItemRef, ref: str) -> None:
            slot = slot_box[0]
            seen.append((pool.free, slot.directory.exists(), dict(slot._vault._tokens)))

        def handler(ctx: SlotContext) -> None:
            while not ctx.should_yield():
                time.sleep(0.001)
            ctx.checkpoint(b"state")

        slot = pool.start(ITEM, handler, on_checkpoint=lambda item, cp: None, requeue=requeue)
        slot_box.append(slot)
        request_preemption(slot)
        assert slot.join(5).kind == "preempted"
        assert seen == [(1, False, {})]


# --- the state machine as data ------------------------------------------------------------------


def test_the_five_steps_are_the_only_way_to_requeued() -> None:
    """R0-13: following the table from ``running``, the only path to ``requeued`` is the
    five steps in order."""
    paths: list[tuple[Step, ...]] = []

    def walk(phase: Phase, path: tuple[Step, ...]) -> None:
        if phase is Phase.REQUEUED:
            paths.append(path)
        for (source, step), target in TRANSITIONS.items():
            if source is phase:
                walk(target, (*path, step))

    walk(Phase.RUNNING, ())
    assert paths == [FIVE_STEPS]


def test_steps_out_of_order_are_refused() -> None:
    machine = Preemption()
    with pytest.raises(IllegalStep):
        machine.take(Step.RELEASE_SLOT)
    assert machine.reach_checkpoint("cp") is False  # nothing requested: the handler goes on
    assert machine.request() is True
    assert machine.request() is True  # idempotent
    assert machine.steps == (Step.REQUEST,)
    with pytest.raises(IllegalStep):
        machine.take(Step.REQUEUE)
    assert machine.reach_checkpoint("cp") is True
    assert machine.stopping
    assert machine.checkpoint == "cp"
    with pytest.raises(IllegalStep):
        machine.take(Step.FINISH)  # a paused item does not finish: it is requeued
