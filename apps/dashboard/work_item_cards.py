"""The WorkItem page's lease, budget and late-result cards: what the page shows about
execution over time — the current lease with its expiry, the closed leases and how each
ended, the budgets of the item and of every mission a charge reaches, late results kept for
audit, reassignments, a retry waiting for its backoff and the last checkpoint.

All of it comes from the projections the write path keeps in the same transaction as the
events: the WorkItem row (``lease``, ``lease_history``, ``late_result_log``, ``retry_at``,
``last_checkpoint``) and the Mission rows of the item's ancestry. Nothing here decides
anything: a countdown that reaches zero says "expired", but only the authority's sweep
(``work.reassign``, R11.5-01) ends the lease.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils import timezone

from apps.work.models import Mission
from missionweave.protocol import budgets as budget_rules
from missionweave.protocol import states as S
from missionweave.protocol.facts import StateKey
from missionweave.protocol.missions.model import Mission as MissionState
from missionweave.protocol.timefmt import format_timestamp, parse_timestamp
from missionweave.protocol.validation import BUDGET_DIMENSIONS
from missionweave.protocol.work.items import Lease
from missionweave.protocol.work.items import WorkItem as WorkItemState


def _now() -> datetime:
    """The clock a countdown starts from (a seam for tests)."""
    return timezone.now()


# --- countdowns ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Countdown:
    """A time the browser counts down to.

    ``static/dashboard/countdown.js`` alone writes the words ("4 min 59 s left") and ticks
    them; the page carries the target and the server's clock at rendering, so the script
    can correct for a browser clock that is off. Read without scripts, the page shows the
    absolute time beside it, and ``passed_text`` once the target was behind at rendering —
    both stay true, where remaining time written by the server would go stale.
    """

    target: str  # a wire.md timestamp
    now: datetime
    passed_text: str = "expired"

    @property
    def server_now(self) -> str:
        return format_timestamp(self.now)

    @property
    def passed(self) -> bool:
        return parse_timestamp(self.target) <= self.now


# --- budgets -------------------------------------------------------------------------------


def _percent_label(percent: float) -> str:
    shown = f"{percent:.1f}" if percent < 10 else f"{percent:.0f}"
    return shown.removesuffix(".0") + "%"


def number(value: float | int) -> str:
    """A quantity as people read it: ``12,000``, ``0.35`` (no float noise, no exponent)."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.6f}".rstrip("0").rstrip(".")
    return f"{int(value):,}"


#: the budget dimensions counted in seconds (wire.md §10), whose amounts read "3,600 s":
#: a bare "3,600" beside "tokens" left a person guessing the unit
SECONDS_SUFFIX = {"compute": " s", "wall_clock": " s"}


@dataclass(frozen=True)
class BudgetLine:
    """One dimension of one budget: used against its limit (absent: unlimited, wire.md §10)."""

    dimension: str
    used: float | int
    limit: float | int | None

    @property
    def unlimited(self) -> bool:
        return self.limit is None

    @property
    def dimension_words(self) -> str:
        """The dimension as people read it: ``wall clock``, not ``wall_clock``."""
        return self.dimension.replace("_", " ")

    @property
    def used_text(self) -> str:
        """``0.11``, not the ``0.10999999999999999`` that adding charges leaves; time in
        seconds says so (``7.5 s``)."""
        return number(self.used) + SECONDS_SUFFIX.get(self.dimension, "")

    @property
    def limit_text(self) -> str:
        if self.limit is None:
            return "unlimited"
        return number(self.limit) + SECONDS_SUFFIX.get(self.dimension, "")

    @property
    def exceeded(self) -> bool:
        return self.limit is not None and self.used > self.limit

    @property
    def percent(self) -> float | None:
        """Share of the limit used; a limit of 0 is all used by any use at all."""
        if self.limit is None:
            return None
        if self.limit == 0:
            return 100.0 if self.used else 0.0
        return 100 * self.used / self.limit

    @property
    def bar_value(self) -> float:
        """What the ``<progress max=100>`` shows (a bar cannot go past full)."""
        return round(min(self.percent or 0.0, 100.0), 2)

    @property
    def percent_label(self) -> str:
        return "" if self.percent is None else _percent_label(self.percent)


@dataclass(frozen=True)
class BudgetHolder:
    """A budget a charge to this item counts against: the item, its mission, an ancestor."""

    kind: str  # "work_item" or "mission"
    id: str
    role: str  # "this WorkItem", "its mission", "ancestor mission"
    state: str
    lines: tuple[BudgetLine, ...]

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.id}"

    @property
    def exceeded(self) -> bool:
        return any(line.exceeded for line in self.lines)


def budget_lines(limits: Mapping[str, Any], used: Mapping[str, Any]) -> tuple[BudgetLine, ...]:
    """The six dimensions of R10.1-01(g) in their wire order, then anything else recorded."""
    names = [*BUDGET_DIMENSIONS]
    names += [name for name in (*limits, *used) if name not in names]
    return tuple(BudgetLine(name, used.get(name, 0), limits.get(name)) for name in names)


class _MissionRows(Mapping[StateKey, MissionState]):
    """The group's Mission rows as the pure core's ``View``, loaded one key at a time, so
    the page walks the ancestry with the very rule a charge follows (``budgets.ancestry``)."""

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.loaded: dict[StateKey, MissionState] = {}

    def __getitem__(self, key: StateKey) -> MissionState:
        if key not in self.loaded:
            kind, mission_id = key
            row = (
                Mission.objects.filter(group_id=self.group_id, mission_id=mission_id).first()
                if kind == "mission"
                else None
            )
            if row is None:
                raise KeyError(key)
            self.loaded[key] = row.to_state()
        return self.loaded[key]

    def __iter__(self) -> Iterator[StateKey]:
        return iter(self.loaded)

    def __len__(self) -> int:
        return len(self.loaded)


def budget_holders(group_id: str, item: WorkItemState) -> tuple[tuple[BudgetHolder, ...], str]:
    """The item's budget, then its mission's and each same-group ancestor's (R11.5-12), and
    the parent in another group where the chain stops ("" if none): that one keeps its own
    budget."""
    chain = budget_rules.ancestry(_MissionRows(group_id), item.mission)
    holders = [
        BudgetHolder(
            "work_item", item.id, "this WorkItem", item.state, budget_lines(item.limits, item.used)
        ),
        *(
            BudgetHolder(
                "mission",
                mission.id,
                "its mission" if depth == 0 else "ancestor mission",
                mission.state,
                budget_lines(mission.limits, mission.used),
            )
            for depth, mission in enumerate(chain)
        ),
    ]
    top = chain[-1] if chain else None
    elsewhere = top.parent if top is not None and top.parent and "/" in top.parent else ""
    return tuple(holders), elsewhere


# --- leases, late results, retries ---------------------------------------------------------


@dataclass(frozen=True)
class LateResult:
    """A former owner's ``work.submit`` after it lost the item: recorded, never a completion
    (R11.5-02, R11.5-03)."""

    sequence: int
    former_owner: str
    lease_id: str | None
    artifacts: tuple[str, ...]
    recorded_at: str | None

    @property
    def technical(self) -> list[tuple[str, str]]:
        """Its raw terms, for the collapsed technical details (a person reads the name)."""
        return [
            ("former owner", self.former_owner),
            ("lease", self.lease_id or "none"),
            *(("artifact", digest) for digest in self.artifacts),
        ]


@dataclass(frozen=True)
class Execution:
    current: Lease | None  # the active lease, if any
    expiry: Countdown | None  # the active lease's expiry
    closed: tuple[Lease, ...]  # newest first
    retry: Countdown | None  # a retry waiting for its backoff (R11.4-08)
    start_by: Countdown | None  # a queued owner's start deadline (R11.3-02)
    attempts: int
    max_attempts: int
    reassignments: int
    last_checkpoint: dict[str, Any] | None
    late_results: tuple[LateResult, ...]  # newest first
    late_results_total: int
    budgets: tuple[BudgetHolder, ...]
    budget_elsewhere: str  # a parent mission in another group ("" if none)

    @property
    def missions(self) -> tuple[str, ...]:
        """Missions whose budgets the page shows: a charge naming one refreshes it live."""
        return tuple(holder.id for holder in self.budgets if holder.kind == "mission")


def execution_of(group_id: str, item: WorkItemState, *, now: datetime | None = None) -> Execution:
    now = now or _now()
    lease = item.lease
    active = lease is not None and lease.status == "active"
    closed = list(item.lease_history)
    if lease is not None and not active:
        closed.append(lease)  # the latest lease stays on the item until the next start
    retry = item.contract.get("retry") or {}
    holders, elsewhere = budget_holders(group_id, item)
    return Execution(
        current=lease if active else None,
        expiry=Countdown(lease.expires_at, now) if active and lease is not None else None,
        closed=tuple(reversed(closed)),
        retry=Countdown(item.retry_at, now, "due now") if item.retry_at else None,
        start_by=(
            Countdown(item.start_deadline, now, "missed")
            # a refused revision waits for a corrected contract: its start-by clock stops
            if item.start_deadline and item.state == S.QUEUED and item.refusal is None
            else None
        ),
        attempts=item.attempts,
        max_attempts=int(retry.get("max_attempts", 1)),
        reassignments=item.reassignments,
        last_checkpoint=item.last_checkpoint,
        late_results=tuple(
            LateResult(
                sequence=entry["sequence"],
                former_owner=entry["former_owner"],
                lease_id=entry.get("lease_id"),
                artifacts=tuple(entry.get("artifacts", ())),
                recorded_at=entry.get("recorded_at"),
            )
            for entry in reversed(item.late_result_log)
        ),
        late_results_total=item.late_results,
        budgets=holders,
        budget_elsewhere=elsewhere,
    )
