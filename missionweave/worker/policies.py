"""The contract's timeout, honoured by the Worker (R10.1-01(h); wire.md §10, issue 35 §8).

``timeout.attempt_s`` is the most wall-clock seconds one run of the item may take, counted
from its ``work.start`` (a resume after a preemption or a block is a new run, so its clock
starts again; the ``wall_clock`` budget bounds the total, R10.1-01(g)).

**Choice: block, not fail.** Past the limit the runtime asks the handler to stop at its next
checkpoint, blocked (``Slot.request_block``, the same path as a refused budget, ``metering``):
nothing is interrupted (R11.3-12), the checkpoint is kept, and the block's resolution tells a
person in plain words what ran out (R11.4-04). A ``work.fail`` would hand the item to the
retry policy, which would start it again from scratch into the same limit. A handler that
returns before it reaches a checkpoint has finished: its result is submitted.

``cost_policy`` needs nothing here: the authority honours it when it plans a retry
(``protocol.work.leases.retry_plan``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .execution import Running


def attempt_limit_s(contract: Mapping[str, Any]) -> float | None:
    """The contract's ``timeout.attempt_s``, or None (no limit)."""
    limit = (contract.get("timeout") or {}).get("attempt_s")
    return float(limit) if limit is not None else None


def timed_out(contract: Mapping[str, Any], *, started_at: datetime, now: datetime) -> bool:
    limit = attempt_limit_s(contract)
    return limit is not None and (now - started_at).total_seconds() > limit


def _duration(seconds: float) -> str:
    """``90`` → ``1 min 30 s``: whole units, largest first."""
    left, parts = round(seconds), []
    for size, unit in ((3600, "h"), (60, "min"), (1, "s")):
        if left >= size:
            parts.append(f"{left // size} {unit}")
            left %= size
    return " ".join(parts) or "0 s"


def timeout_resolution(limit_s: float) -> str:
    """The block's required resolution, in words a person acts on (no codes)."""
    return (
        f"This attempt ran past its time limit of {_duration(limit_s)}. Allow it more time, "
        "or end this work item."
    )


def stop_timed_out(runs: Iterable[Running], now: datetime) -> None:
    """Ask each running handler past its contract's time limit to block at its next
    checkpoint (asking twice is asking once: the first request stands)."""
    for run in runs:
        slot, limit = run.slot, attempt_limit_s(run.contract)
        if slot is None or run.lost or limit is None:
            continue
        if timed_out(run.contract, started_at=run.started_at, now=now):
            slot.request_block(timeout_resolution(limit))
