"""Blocking releases the slot (issue 35 §3, R11.4-04 MUST, R11.4-05, R11.4-07, R10.2-09/10):
``ctx.block(required_resolution)`` checkpoints, the runtime sends ``work.block`` with the
resolution and the checkpoint, and the slot is free for other work at once; the blocked item's
lease is not renewed. The coordinator's ``work.unblock`` (``work.unblocked`` to ``queued``)
puts it back in the worker's queue, and it resumes from its checkpoint when started again."""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path

import pytest

from missionweave.protocol import states as S
from missionweave.worker.blocking import Blocked
from missionweave.worker.handlers import Progress, TaskResult
from missionweave.worker.slots import Assignment, Checkpoint, ItemRef, SlotContext, SlotPool
from tests.worker.fake_work import result_for
from tests.worker.runtime_world import world

ALPHA = "g-alpha"
NEED = "the archive's read credentials, from the records office"
ITEM = Assignment(
    group="grp-1", mission="m-1", work_item="wi-1", ownership_epoch=1, lease_id="lease-1"
)


class BlocksOnce:
    """Checkpoints its first step, then blocks for ``NEED`` on its first run; on a later run
    resumes from the checkpoint and finishes. Records where each run started."""

    def __init__(self) -> None:
        self.resumed_from: list[object] = []

    def __call__(self, ctx: SlotContext, progress: Progress) -> TaskResult:
        resume = ctx.resume_from.state if ctx.resume_from is not None else None
        self.resumed_from.append(resume)
        if resume is None:
            ctx.block(NEED, {"next": 1})
        return result_for(ctx.mission_context, 2)


# --- the slot: block, then record, then release ---------------------------------------------


def _pool(tmp_path: Path) -> SlotPool:
    return SlotPool(1, tmp_path / "slots")


def test_block_records_the_checkpoint_and_resolution_before_the_slot_is_released(
    tmp_path: Path,
) -> None:
    """R11.4-04: checkpoint (durable first), emit, release — in that order."""
    pool = _pool(tmp_path)
    seen: list[tuple[str, int, str]] = []

    def on_block(item: ItemRef, checkpoint: Checkpoint | None, resolution: str) -> None:
        assert checkpoint is not None
        assert pool.checkpoints(item.group, item.work_item).latest() == checkpoint
        seen.append((checkpoint.ref, pool.free, resolution))

    def handler(ctx: SlotContext) -> None:
        ctx.checkpoint({"next": 1})
        ctx.block(NEED, {"next": 2})

    slot = pool.start(
        ITEM, handler, on_checkpoint=_never, requeue=_never_requeue, on_block=on_block
    )
    outcome = slot.join(10)
    assert outcome is not None
    assert outcome.kind == "blocked"
    assert outcome.resolution == NEED
    assert outcome.checkpoint is not None
    assert outcome.checkpoint.state == {"next": 2}
    assert seen == [("wi-1/e1/c2", 0, NEED)]  # recorded while the slot was still held
    assert pool.free == 1


def test_block_without_state_cites_the_last_checkpoint(tmp_path: Path) -> None:
    """A handler that blocks right after a checkpoint needs no second one."""
    pool = _pool(tmp_path)

    def handler(ctx: SlotContext) -> None:
        ctx.checkpoint({"next": 3})
        ctx.block(NEED)

    slot = pool.start(ITEM, handler, on_checkpoint=_never, requeue=_never_requeue)
    outcome = slot.join(10)
    assert outcome is not None
    assert outcome.kind == "blocked"
    assert outcome.checkpoint is not None
    assert outcome.checkpoint.state == {"next": 3}


def test_a_handler_that_swallows_blocked_is_still_blocked(tmp_path: Path) -> None:
    """Like ``Preempted``, ``Blocked`` is a ``BaseException``; caught anyway, every further
    call on the context raises it again and what the handler returns is discarded."""
    pool = _pool(tmp_path)
    again: list[BaseException] = []

    def handler(ctx: SlotContext) -> str:
        with contextlib.suppress(Blocked):
            ctx.block(NEED, {"next": 1})
        try:
            ctx.checkpoint({"next": 2})
        except Blocked as error:
            again.append(error)
        return "a result that must not be submitted"

    slot = pool.start(ITEM, handler, on_checkpoint=_never, requeue=_never_requeue)
    outcome = slot.join(10)
    assert outcome is not None
    assert outcome.kind == "blocked"
    assert outcome.result is None
    assert len(again) == 1
    latest = pool.checkpoints("grp-1", "wi-1").latest()
    assert latest is not None
    assert latest.state == {"next": 1}


def test_a_requested_block_stops_the_handler_at_its_next_checkpoint(tmp_path: Path) -> None:
    """The runtime's own block (a refused budget, R11.5-13): ``should_yield`` turns true and
    the next checkpoint is where the handler stops, blocked with the runtime's resolution."""
    pool = _pool(tmp_path)
    waiting = threading.Event()

    def handler(ctx: SlotContext) -> None:
        step = 0
        while True:
            step += 1
            waiting.set()
            if ctx.should_yield():
                ctx.checkpoint({"next": step})
            threading.Event().wait(0.002)

    slot = pool.start(ITEM, handler, on_checkpoint=_never, requeue=_never_requeue)
    assert waiting.wait(10)
    slot.request_block("the tokens budget is spent")
    outcome = slot.join(10)
    assert outcome is not None
    assert outcome.kind == "blocked"
    assert outcome.resolution == "the tokens budget is spent"


def _never(item: ItemRef, checkpoint: Checkpoint) -> None:
    raise AssertionError("no preemption checkpoint is recorded for a block")


def _never_requeue(item: ItemRef, ref: str) -> None:
    raise AssertionError("a blocked item is not requeued by its slot")


# --- the runtime: work.block, the slot for other work, work.unblocked requeues -----------------


def test_a_blocked_item_sends_work_block_frees_its_slot_and_is_not_renewed(
    tmp_path: Path,
) -> None:
    """R11.4-04: ``work.block`` carries the required resolution and the checkpoint; the one
    slot is free at once; the blocked item's lease is never renewed (R11.4-05: ownership
    stays, under the authority's bounded blocked lease, not an execution lease)."""
    handler = BlocksOnce()
    with world(tmp_path, handlers={"text.summarise": handler}, slots=1) as w:
        w.authority.story(ALPHA, "wi-a")
        w.authority.offer(ALPHA, "wi-a")
        w.until(lambda: w.state(ALPHA, "wi-a") == S.BLOCKED)
        w.until(lambda: w.worker.pool.free == 1 and not w.worker._snapshot())
        (block,) = w.sent("work.block")
        assert block.body["required_resolution"] == NEED
        local = w.worker.pool.checkpoints(ALPHA, "wi-a").latest()
        assert local is not None
        sent = dict(block.body["checkpoint"])
        # its state is stored first, so any later owner can resume from it (R11.5-01)
        assert sent.pop("state_artifact") in w.authority.uploads
        assert sent == local.wire()
        item = w.authority.item(ALPHA, "wi-a")
        assert item["owner"] == w.authority.principal
        assert item["last_checkpoint"]["ref"] == local.ref
        renewals = len(w.sent("lease.renew"))
        w.clock.advance(600)  # well past when the lease would have been renewed
        for _ in range(20):
            w.tick()
        assert len(w.sent("lease.renew")) == renewals
        after = w.authority.sent[w.authority.sent.index(block) + 1 :]
        assert [s.type for s in after if s.body.get("lease_id") == block.body["lease_id"]] == []


def test_one_slot_runs_other_work_while_an_item_is_blocked_and_the_unblocked_item_resumes(
    tmp_path: Path,
) -> None:
    """R11.4-04, R11.4-07, R10.2-10: with one slot, A blocks and B runs in the freed slot
    and is submitted while A waits; the coordinator unblocks A to ``queued``, and A starts
    again from its checkpoint and is submitted."""
    a = BlocksOnce()
    b_ran = threading.Event()

    def b(ctx: SlotContext, progress: Progress) -> TaskResult:
        b_ran.set()
        return result_for(ctx.mission_context, 1)

    def handler(ctx: SlotContext, progress: Progress) -> TaskResult:
        return (a if ctx.work_item == "wi-a" else b)(ctx, progress)

    with world(tmp_path, handlers={"text.summarise": handler}, slots=1) as w:
        w.authority.story(ALPHA, "wi-a")
        w.authority.offer(ALPHA, "wi-a")
        w.until(lambda: w.state(ALPHA, "wi-a") == S.BLOCKED)
        w.authority.story(ALPHA, "wi-b")
        w.authority.offer(ALPHA, "wi-b")
        w.until(lambda: w.state(ALPHA, "wi-b") == S.SUBMITTED)
        assert w.state(ALPHA, "wi-a") == S.BLOCKED
        assert a.resumed_from == [None]

        w.authority.do(ALPHA, "wi-a", "work.unblock", to=S.QUEUED)
        w.until(lambda: w.state(ALPHA, "wi-a") == S.SUBMITTED)
        assert a.resumed_from == [None, {"next": 1}]
        starts = [s.body["work_item"] for s in w.sent("work.start")]
        assert starts == ["wi-a", "wi-b", "wi-a"]


def test_a_block_while_offline_is_buffered_as_its_checkpoint_and_met_again_online(
    tmp_path: Path,
) -> None:
    """R11.5-04: ``work.block`` cannot be buffered (only progress, checkpoints and messages
    can). Offline, the block's checkpoint is buffered instead; on reconciliation it releases
    the lease and requeues the item (R10.2-08), whose handler meets its blocker again, now
    online, and the block is sent."""
    offline = threading.Event()
    runs: list[object] = []

    def handler(ctx: SlotContext, progress: Progress) -> TaskResult:
        resume = ctx.resume_from.state if ctx.resume_from is not None else None
        runs.append(resume)
        offline.wait(10)
        ctx.block(NEED, {"next": len(runs)})
        raise AssertionError("unreachable")

    with world(tmp_path, handlers={"text.summarise": handler}) as w:
        w.authority.story(ALPHA, "wi-1")
        w.authority.offer(ALPHA, "wi-1")
        w.until(lambda: len(w.sent("work.progress")) == 1)
        w.authority.unreachable = True
        w.clock.advance(10)
        w.until(lambda: not w.worker.link.online)
        offline.set()
        w.until(lambda: any(b.type == "work.checkpoint" for b in w.worker.buffer.pending()))
        assert w.worker.pool.free == 1
        w.authority.unreachable = False
        w.until(lambda: w.state(ALPHA, "wi-1") == S.BLOCKED)
        assert runs == [None, {"next": 1}]
        (block,) = w.sent("work.block")
        assert block.body["required_resolution"] == NEED


@pytest.mark.parametrize("resolution", ["", "   "])
def test_a_block_needs_a_required_resolution(tmp_path: Path, resolution: str) -> None:
    """R11.4-04 "with the required resolution": an empty one is the handler's bug, refused
    before the checkpoint is written, so nothing half-done is left behind."""
    pool = _pool(tmp_path)

    def handler(ctx: SlotContext) -> None:
        ctx.block(resolution, {"next": 1})

    outcome = pool.start(ITEM, handler, on_checkpoint=_never, requeue=_never_requeue).join(10)
    assert outcome is not None
    assert outcome.kind == "failed"
    assert isinstance(outcome.error, ValueError)
    assert pool.checkpoints("grp-1", "wi-1").latest() is None
