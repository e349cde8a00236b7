"""Cooperative preemption: the five steps of R0-13 / R11.3-13 (MWP-WRK-015) as a state machine.

The seed gives the sequence, and this module keeps it readable in one place:

1. the scheduler requests preemption (``request_preemption``);
2. the worker reaches a safe checkpoint (the handler calls ``ctx.checkpoint`` while a request
   is pending, and the checkpoint is durable on disk before the step is taken);
3. the worker records the checkpoint and pauses (the handler has unwound, and the runtime's
   ``on_checkpoint`` has turned the checkpoint into a signed ``work.checkpoint``, which on the
   authority releases execution: R10.2-08);
4. the execution slot is released (tokens wiped, scratch directory removed);
5. the WorkItem returns to its Group queue (the runtime's ``requeue``).

Why a state machine rather than a flag: each step may be taken only after the one before it,
and a test (or an operator reading a slot's ``steps``) can check the order that actually
happened instead of trusting it. ``TRANSITIONS`` is the whole rule set, as data.

Why cooperative only (R11.3-12: active work MUST NOT be forcibly interrupted at an unsafe
point): the request is a flag the handler reads through ``ctx.should_yield()``; nothing here
can stop a handler between two of its own statements. The single place where control leaves
a handler because of preemption is ``ctx.checkpoint``, by raising ``Preempted`` right after
the checkpoint is durable: by definition a safe point. Python cannot kill a thread anyway,
and this design does not want it to.

A request is a wish, not a guarantee: a handler that returns before its next checkpoint
finishes normally (``Step.FINISH`` from ``REQUESTED``), and its item is not requeued.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from enum import StrEnum
from typing import Protocol


class Phase(StrEnum):
    RUNNING = "running"
    #: step 1 taken: the handler sees ``should_yield()`` until its next checkpoint
    REQUESTED = "requested"
    #: step 2 taken: a durable checkpoint exists and the handler is unwinding from it
    CHECKPOINTED = "checkpointed"
    #: step 3 taken: the checkpoint is handed to the authority and the handler has stopped
    PAUSED = "paused"
    #: step 4 taken
    RELEASED = "released"
    #: step 5 taken: the item is back in its Group queue
    REQUEUED = "requeued"
    FINISHED = "finished"
    FAILED = "failed"


class Step(StrEnum):
    REQUEST = "1-preemption-requested"
    REACH_CHECKPOINT = "2-safe-checkpoint-reached"
    RECORD_AND_PAUSE = "3-checkpoint-recorded-and-paused"
    RELEASE_SLOT = "4-slot-released"
    REQUEUE = "5-returned-to-group-queue"
    FINISH = "finish"
    FAIL = "fail"


#: R0-13 (MWP-WRK-015): the normative order of a preemption
FIVE_STEPS = (
    Step.REQUEST,
    Step.REACH_CHECKPOINT,
    Step.RECORD_AND_PAUSE,
    Step.RELEASE_SLOT,
    Step.REQUEUE,
)

#: (phase, step) -> next phase. Anything not listed is refused with ``IllegalStep``.
TRANSITIONS: dict[tuple[Phase, Step], Phase] = {
    (Phase.RUNNING, Step.REQUEST): Phase.REQUESTED,
    (Phase.REQUESTED, Step.REACH_CHECKPOINT): Phase.CHECKPOINTED,
    (Phase.CHECKPOINTED, Step.RECORD_AND_PAUSE): Phase.PAUSED,
    (Phase.PAUSED, Step.RELEASE_SLOT): Phase.RELEASED,
    (Phase.RELEASED, Step.REQUEUE): Phase.REQUEUED,
    # the handler returned (or raised) before reaching a checkpoint under the request
    (Phase.RUNNING, Step.FINISH): Phase.FINISHED,
    (Phase.REQUESTED, Step.FINISH): Phase.FINISHED,
    (Phase.RUNNING, Step.FAIL): Phase.FAILED,
    (Phase.REQUESTED, Step.FAIL): Phase.FAILED,
    # the runtime could not hand the checkpoint on (step 3) or requeue the item (step 5): the
    # slot is still released, and the durable local checkpoint is what a later run resumes from
    (Phase.CHECKPOINTED, Step.FAIL): Phase.FAILED,
    (Phase.RELEASED, Step.FAIL): Phase.FAILED,
}


class IllegalStep(RuntimeError):
    """A step taken out of order: a bug in the runtime, never a handler's doing."""


class Preempted(BaseException):
    """Raised out of ``ctx.checkpoint`` when that checkpoint is the preemption point.

    A ``BaseException`` for the reason ``GeneratorExit`` is one: handler code written as
    ``except Exception:`` around its work must not swallow the pause. A handler that catches
    it anyway is still paused: every further call on its context raises it again, and what
    the handler returns afterwards is discarded, because the item was already checkpointed.
    """

    def __init__(self, checkpoint: object) -> None:
        super().__init__("preempted at a checkpoint")
        self.checkpoint = checkpoint


class Preemption:
    """One slot's preemption state: its phase, the steps taken in order, and the checkpoint
    it stopped at. Thread-safe: the scheduler requests from its thread while the handler
    checkpoints from the slot's thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._phase = Phase.RUNNING
        self._steps: list[Step] = []
        self._checkpoint: object | None = None

    @property
    def phase(self) -> Phase:
        return self._phase

    @property
    def steps(self) -> tuple[Step, ...]:
        """Every step taken, in the order taken (the five of R0-13 when preempted)."""
        return tuple(self._steps)

    @property
    def checkpoint(self) -> object | None:
        """The checkpoint of step 2, once taken."""
        return self._checkpoint

    @property
    def requested(self) -> bool:
        """Step 1 is pending: the handler should reach a checkpoint soon (``should_yield``)."""
        return self._phase is Phase.REQUESTED

    @property
    def stopping(self) -> bool:
        """Step 2 is taken: the handler must not do anything more under this slot."""
        return self._phase in {Phase.CHECKPOINTED, Phase.PAUSED, Phase.RELEASED, Phase.REQUEUED}

    def take(self, step: Step) -> Phase:
        with self._lock:
            return self._take(step)

    def request(self) -> bool:
        """Step 1, idempotent: ``True`` when a preemption is now pending or under way,
        ``False`` when the work already finished or failed (nothing left to preempt)."""
        with self._lock:
            if self._phase is Phase.RUNNING:
                self._take(Step.REQUEST)
            return self._phase not in {Phase.FINISHED, Phase.FAILED}

    def reach_checkpoint(self, checkpoint: object) -> bool:
        """Step 2 if a request is pending: ``checkpoint`` is already durable. ``False`` (and
        nothing changes) when no preemption was requested: the handler simply goes on."""
        with self._lock:
            if self._phase is not Phase.REQUESTED:
                return False
            self._checkpoint = checkpoint
            self._take(Step.REACH_CHECKPOINT)
            return True

    def _take(self, step: Step) -> Phase:
        following = TRANSITIONS.get((self._phase, step))
        if following is None:
            raise IllegalStep(f"{step} is not allowed while {self._phase}")
        self._phase = following
        self._steps.append(step)
        return following


class _Preemptible(Protocol):
    @property
    def preemption(self) -> Preemption: ...


def request_preemption(slot: _Preemptible) -> bool:
    """Step 1 (R0-13(1)): the scheduler asks ``slot`` to yield at its next checkpoint.

    Never interrupts it (R11.3-12). ``False`` when the slot's work has already ended.
    """
    return slot.preemption.request()


def complete_preemption(
    preemption: Preemption,
    *,
    record: Callable[[], None],
    release: Callable[[], None],
    requeue: Callable[[], None],
) -> None:
    """Steps 3 to 5, each marked only once it has happened, after the handler has unwound
    from the checkpoint of step 2.

    ``record`` hands the checkpoint to the authority (a signed ``work.checkpoint``), before
    the slot is released: the authority must know where to resume from before anything else
    can take the item. ``requeue`` comes last, so the scheduler never sees the item queued
    while a slot still holds its tokens.
    """
    record()
    preemption.take(Step.RECORD_AND_PAUSE)
    release()
    preemption.take(Step.RELEASE_SLOT)
    requeue()
    preemption.take(Step.REQUEUE)
