"""A slot's block: how a handler stops for something only a person or the coordinator can
resolve (R11.4-04 MUST, R11.4-05..07; R10.2-09).

R11.4-04: when blocked, a Worker MUST checkpoint, emit ``work.blocked`` with the required
resolution, and release its execution slot. In a slot that is three steps in that order:

1. the handler calls ``ctx.block(required_resolution, state)``: the checkpoint is written
   durably (or, without ``state``, the item's last one is cited) and ``Blocked`` unwinds the
   handler from there — a safe point by definition, as for a preemption (R11.3-12);
2. the runtime's ``on_block`` sends ``work.block`` with the resolution and the checkpoint
   while the slot is still held, so nothing can take the item before the authority knows where
   it stopped;
3. the slot is released (tokens wiped, scratch removed) and takes other work at once.

The item stays this worker's under the authority's bounded blocked lease (R11.4-05), not an
execution lease: the runtime renews nothing for it. The coordinator's ``work.unblock`` to
``queued`` (event ``work.unblocked``) puts it back in this worker's queue (R11.4-07, R10.2-10),
and it resumes from the checkpoint in whichever slot starts it next.

The runtime may ask for a block too: when the authority refuses a charge with
``BUDGET_EXCEEDED`` (R11.5-13), ``request`` makes ``ctx.should_yield()`` true and the
handler's next ``ctx.checkpoint`` is where it stops, blocked with the resolution the runtime
wrote (``stops.budget_resolution``). Like a preemption request it never interrupts a handler
between two of its own statements.

This module holds no runtime reference, so a slot context that owns a ``Block`` still refers to
nothing outside its slot (R11.1-12).
"""

from __future__ import annotations

import threading


class Blocked(BaseException):
    """Raised out of ``ctx.block`` (or out of the ``ctx.checkpoint`` a requested block stops
    at). A ``BaseException`` for the reason ``Preempted`` is one: ``except Exception`` around a
    handler's work must not swallow it; a handler that catches it anyway is still blocked —
    every further call on its context raises it again, and what it returns is discarded."""

    def __init__(self, checkpoint: object | None, required_resolution: str) -> None:
        super().__init__(f"blocked: {required_resolution}")
        self.checkpoint = checkpoint
        self.required_resolution = required_resolution


def check_resolution(required_resolution: object) -> str:
    """The required resolution, or ``ValueError``: it is what a person reads to unblock the
    item, so it is a non-empty string (wire.md §9 ``work.block``)."""
    if not isinstance(required_resolution, str) or not required_resolution.strip():
        raise ValueError("a block names its required resolution (R11.4-04)")
    return required_resolution.strip()


class Block:
    """One slot's block state. Thread-safe: the runtime requests from its loop while the
    handler checkpoints from the slot's thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requested: str | None = None
        self._stopped = False
        self._checkpoint: object | None = None
        self._resolution: str | None = None

    @property
    def requested(self) -> bool:
        """The runtime asked the handler to stop at its next checkpoint (``should_yield``)."""
        return self._requested is not None and not self._stopped

    @property
    def stopped(self) -> bool:
        """The handler is blocked: nothing more may happen under this slot."""
        return self._stopped

    @property
    def checkpoint(self) -> object | None:
        return self._checkpoint

    @property
    def resolution(self) -> str | None:
        return self._resolution

    def request(self, required_resolution: str) -> None:
        """The runtime's block, taken at the handler's next checkpoint; the first one wins."""
        resolution = check_resolution(required_resolution)
        with self._lock:
            if self._requested is None:
                self._requested = resolution

    def reach_checkpoint(self, checkpoint: object) -> bool:
        """At a durable checkpoint: True (and blocked there) when a block was requested."""
        with self._lock:
            if self._requested is None or self._stopped:
                return False
            self._stop(checkpoint, self._requested)
            return True

    def stop(self, checkpoint: object | None, required_resolution: str) -> None:
        """The handler's own block (``ctx.block``), at ``checkpoint`` (None: from the start)."""
        with self._lock:
            if self._stopped:
                return
            self._stop(checkpoint, required_resolution)

    def _stop(self, checkpoint: object | None, required_resolution: str) -> None:
        self._stopped = True
        self._checkpoint = checkpoint
        self._resolution = required_resolution

    def blocked(self) -> Blocked:
        """The exception to raise (again) once stopped."""
        assert self._resolution is not None
        return Blocked(self._checkpoint, self._resolution)
