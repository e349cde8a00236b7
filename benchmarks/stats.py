"""Turning raw latency samples into the figures the report prints.

Percentiles use the nearest-rank method: p99 of 100 samples is the 99th smallest, a value
that was actually observed (no interpolation between two requests that never happened).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any


def percentile(sorted_samples: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile of already sorted samples (``fraction`` in 0..1)."""
    if not sorted_samples:
        return math.nan
    if not 0 <= fraction <= 1:
        raise ValueError("fraction is between 0 and 1")
    rank = max(1, math.ceil(fraction * len(sorted_samples)))
    return sorted_samples[rank - 1]


@dataclass(frozen=True)
class Measurement:
    """One scenario's result: how much work in how long, and the latency of each unit.

    ``operations`` are what the rate counts (commands, events, transactions, rows);
    ``latencies_s`` are per request (a command, a batch, a transaction).
    """

    name: str
    operations: int
    elapsed_s: float
    latency_p50_ms: float
    latency_p99_ms: float
    latency_mean_ms: float
    requests: int
    errors: int = 0
    params: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    @property
    def rate(self) -> float:
        """Operations per second (0 when nothing was timed)."""
        return self.operations / self.elapsed_s if self.elapsed_s > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "notes": list(self.notes), "rate": self.rate}


def summarize(
    name: str,
    *,
    operations: int,
    elapsed_s: float,
    latencies_s: Iterable[float],
    errors: int = 0,
    params: dict[str, Any] | None = None,
    notes: Iterable[str] = (),
) -> Measurement:
    """Build a :class:`Measurement` from raw per-request latencies in seconds."""
    ordered = sorted(latencies_s)
    mean = sum(ordered) / len(ordered) if ordered else math.nan
    return Measurement(
        name=name,
        operations=operations,
        elapsed_s=elapsed_s,
        latency_p50_ms=percentile(ordered, 0.50) * 1000,
        latency_p99_ms=percentile(ordered, 0.99) * 1000,
        latency_mean_ms=mean * 1000,
        requests=len(ordered),
        errors=errors,
        params=dict(params or {}),
        notes=tuple(notes),
    )


def ratio(value: float, ceiling: float) -> float:
    """``value / ceiling``, NaN when there is no ceiling to compare with."""
    return value / ceiling if ceiling > 0 else math.nan
