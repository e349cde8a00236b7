"""Everything one run measured, kept together so the report and the JSON dump agree."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from .breakdown import Breakdown
from .config import BenchConfig
from .stats import Measurement
from .sweep import SweepResult


@dataclass
class Results:
    command: str
    config: BenchConfig
    started_at: datetime
    facts: dict[str, str] = field(default_factory=dict)
    finished_at: datetime | None = None
    load_before: str = ""
    load_after: str = ""
    event_bytes: float = 0.0  # mean size of a stored mission.created document
    pgbench: list[Measurement] = field(default_factory=list)
    #: pgbench running the write path's own SQL (``floor``), beside each ``pgbench`` cell
    floor: list[Measurement] = field(default_factory=list)
    executemany: list[Measurement] = field(default_factory=list)
    inprocess: list[Measurement] = field(default_factory=list)
    http: list[Measurement] = field(default_factory=list)
    http_no_pool: list[Measurement] = field(default_factory=list)  # servers with MWP_DB_POOL=0
    batch: list[Measurement] = field(default_factory=list)
    breakdown: Breakdown | None = None
    # 1-minute load average after each cell ("groups/clients", "batch/size"): this run's own
    # processes count too (about 2-4 at 16 clients), so a spike well above that is other work.
    loads: dict[str, float] = field(default_factory=dict)
    sweep: SweepResult | None = None  # the lease sweep against one UPDATE (section 6)

    def as_dict(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "started_at": self.started_at.isoformat(),
            "finished_at": self.finished_at.isoformat() if self.finished_at else None,
            "facts": self.facts,
            "config": {k: str(v) for k, v in vars(self.config).items()},
            "load_before": self.load_before,
            "load_after": self.load_after,
            "event_bytes": self.event_bytes,
            "loads": self.loads,
            **{
                name: [m.as_dict() for m in getattr(self, name)]
                for name in (
                    "pgbench",
                    "floor",
                    "executemany",
                    "inprocess",
                    "http",
                    "http_no_pool",
                    "batch",
                )
            },
            "breakdown": self.breakdown.as_dict() if self.breakdown else None,
            "sweep": self.sweep.as_dict() if self.sweep else None,
        }

    @classmethod
    def load_sweep(cls, path: Path, config: BenchConfig) -> Results:
        """The sweep figures a ``--only sweep`` run saved, to render section 6 again."""
        data = json.loads(path.read_text())
        results = cls(
            command=data["command"],
            config=config,
            started_at=datetime.fromisoformat(data["started_at"]),
        )
        results.sweep = SweepResult.from_dict(data["sweep"])
        return results

    def dump(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.as_dict(), indent=2, default=str) + "\n")


def find(measurements: list[Measurement], **params: Any) -> Measurement | None:
    """The measurement whose params include all of ``params`` (None when not measured)."""
    for measurement in measurements:
        if all(measurement.params.get(key) == value for key, value in params.items()):
            return measurement
    return None
