"""The dashboard benchmark's group: built once into its own database, checked, reused.

**Building** (:func:`populate`): the cast (:mod:`.dashboard_cast`) and the template mission
(:mod:`.dashboard_history`) through the write path; then, in turn, generated history and
the three phases of the big mission (:mod:`.dashboard_mission`) through the write path —
authorise, history, verified, history, the rest (``HISTORY_SHARES``) — and a last stretch of history
that brings the log to at least the events asked for. The build runs Celery eagerly, so the
authority's checks of each submission run right after it commits, as a worker would.

**Checking.** After a build, ``manage.py rebuild_projections --verify`` replays the whole
log: every event's hash and link (the hash chain) and every projection row against the
replay. The database (``BENCH_DASHBOARD_DATABASE_URL``, default ``mw_bench_dashboard``) and
what the build learnt (:class:`BuiltDashboard`, in ``var/benchmarks/``) are kept. A later
run reuses them only if no migration of the log's or the projections' apps is pending (a
schema change there means a rebuild; the others, such as the dashboard's snoozes, are applied), the
cheap chain checks of :func:`benchmarks.replay.check_cached` pass (row count, sequence
range, head hash, random windows re-hashed), the big mission's events folded again give
exactly its live projection rows (so a change to the protocol's evolvers is caught), a few
random history clones do too, and the artifacts the measured pages show are in the store.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.core.management import call_command
from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.migrations.executor import MigrationExecutor

from apps.artifacts.storage import configured_storage
from apps.ledger.models import Event, GroupLog
from apps.ledger.projections import load_view
from apps.work.models import WorkItem
from missionweave.protocol import decider
from missionweave.protocol.facts import Fact, StateKey

from .config import ROOT
from .dashboard_cast import GROUP, build_cast
from .dashboard_history import Template, append_history, play_template
from .dashboard_mission import MISSION, PHASES, Plan, plan_mission
from .dashboard_work import EagerCelery
from .database import database_name, reset_database
from .replay import BuiltGroup, check_cached, database_exists

#: where the history goes around the big mission's phases (shares of the generated events):
#: none before its authorisation, because the group's dependency graph is one JSON row that
#: every ``work.authorize`` reads and rewrites — authorising 1,000 items after 60,000 others
#: took 20 minutes of the build (a write-path cost, issue 15), not a dashboard figure
HISTORY_SHARES = (0.0, 0.45, 0.55)
#: history clones re-folded and compared when a saved group is reused
SAMPLE_CLONES = 3
#: history missions left waiting for the owner's final approval (the inbox at scale, issue 37)
READY = int(os.environ.get("BENCH_DASHBOARD_READY", "1000"))


def dashboard_size(*, quick: bool) -> tuple[int, int]:
    """(events in the group's log, WorkItems in the big mission)."""
    events = int(os.environ.get("BENCH_DASHBOARD_EVENTS", "2000" if quick else "1000000"))
    items = int(os.environ.get("BENCH_DASHBOARD_ITEMS", "50" if quick else "1000"))
    return events, items


@dataclass
class BuiltDashboard:
    """The group and what the pages are measured on (saved next to the database)."""

    database: str
    group: str
    mission: str
    events: int  # asked for
    items: int
    head: int = 0
    head_hash: str = ""
    generated: int = 0  # events generated (the history clones); the rest came through the door
    template: list[int] = field(default_factory=list)  # [first, last] sequence
    history: list[list[int]] = field(default_factory=list)  # [[first, last, first clone]]
    ready: list[int] = field(default_factory=list)  # unapproved clones: [first, last, first clone]
    phases: list[list[int]] = field(default_factory=list)  # big mission: [[first, last]]
    states: dict[str, int] = field(default_factory=dict)  # big mission, by state
    targets: dict[str, str] = field(default_factory=dict)  # page role -> WorkItem id
    artifacts: list[str] = field(default_factory=list)  # digests the measured pages show
    built_at: str = ""
    build_s: float = 0.0
    verify_s: float = 0.0
    table_bytes: dict[str, int] = field(default_factory=dict)
    reused: bool = False
    check: str = ""
    check_s: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @property
    def ready_count(self) -> int:
        """Missions left waiting for the owner's final approval."""
        return (
            (self.ready[1] - self.ready[0] + 1) // (self.template[1] - self.template[0])
            if self.ready
            else 0
        )


# --- building ----------------------------------------------------------------------------------


def _head(group: str) -> GroupLog:
    return GroupLog.objects.get(group_id=group)


def populate(events: int, items: int, log: Callable[[str], None]) -> BuiltDashboard:
    """Build the group in the current database (already migrated); returns what to save."""
    started = time.perf_counter()
    built = BuiltDashboard(
        database=connection.settings_dict["NAME"],
        group=GROUP,
        mission=MISSION,
        events=events,
        items=items,
    )
    with EagerCelery():
        cast = build_cast(GROUP)
        template = play_template(cast)
        built.template = [template.first, template.last]
        plan = plan_mission(cast, items)
        expected = _head(GROUP).head_sequence + plan.events
        clones = max(0, math.ceil((events - expected) / template.size))
        log(
            f"dashboard build: template of {template.size} events; {clones:,} history "
            f"clones around a {items:,}-item mission"
        )
        first_clone = 1
        for share, phase in zip(HISTORY_SHARES, PHASES, strict=True):
            count = round(clones * share)
            first_clone = _history(built, template, first_clone, count, log)
            first = _head(GROUP).head_sequence + 1
            mark = time.perf_counter()
            phase(cast, plan)
            built.phases.append([first, _head(GROUP).head_sequence])
            log(
                f"dashboard build: {phase.__name__}: {_head(GROUP).head_sequence - first + 1:,} "
                f"events through the write path in {time.perf_counter() - mark:.0f} s"
            )
        missing = events - _head(GROUP).head_sequence
        if missing > 0:
            first_clone = _history(
                built, template, first_clone, math.ceil(missing / template.size), log
            )
        # the owner's inbox at scale: missions whose WorkItems all ended, waiting for her
        first = _head(GROUP).head_sequence + 1
        appended = append_history(
            GROUP, template, first_clone=first_clone, clones=READY, log=log, unapproved=True
        )
        built.ready = [first, first + appended - 1, first_clone]
        built.generated += appended
    head = _head(GROUP)
    built.head, built.head_hash = head.head_sequence, head.head_hash
    built.states = {
        state: len(plan.of(state)) for state in dict.fromkeys(p.state for p in plan.items)
    }
    built.targets = _targets(plan)
    built.artifacts = _shown_artifacts(built.targets)
    built.build_s = time.perf_counter() - started
    built.built_at = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return built


def _history(
    built: BuiltDashboard,
    template: Template,
    first_clone: int,
    count: int,
    log: Callable[[str], None],
) -> int:
    """Append ``count`` history clones; returns the next clone number."""
    if count <= 0:
        return first_clone
    first = _head(GROUP).head_sequence + 1
    mark = time.perf_counter()
    appended = append_history(GROUP, template, first_clone=first_clone, clones=count, log=log)
    built.history.append([first, first + appended - 1, first_clone])
    built.generated += appended
    log(
        f"dashboard build: {appended:,} history events ({count:,} missions) in "
        f"{time.perf_counter() - mark:.0f} s"
    )
    return first_clone + count


def _targets(plan: Plan) -> dict[str, str]:
    """The WorkItems the item pages are measured on: a submitted one still waiting for the
    reviewer, one waiting for the owner's execution approval (the co-owner's given), an
    active one (the WorkItem page's baseline)."""
    waiting_review = [p for p in plan.of("submitted") if not p.reviewed]
    half_approved = [p for p in plan.of("approval") if p.approvals]
    targets = {
        "review": waiting_review[len(waiting_review) // 2],
        "approval": (half_approved or plan.of("approval"))[0],
        "active": plan.of("active")[len(plan.of("active")) // 2],
    }
    return {role: planned.item.id for role, planned in targets.items()}


def _shown_artifacts(targets: dict[str, str]) -> list[str]:
    row = WorkItem.objects.get(group_id=GROUP, work_item_id=targets["review"])
    return list((row.data.get("submission") or {}).get("artifacts", []))


def _state_path(url: str) -> Path:
    return ROOT / "var" / "benchmarks" / f"dashboard-{database_name(url)}.json"


def _table_bytes() -> dict[str, int]:
    tables = ("ledger_event", "work_workitem", "work_mission", "work_dependencyedges")
    with connection.cursor() as cursor:
        return {
            table: int(cursor.execute("SELECT pg_total_relation_size(%s)", [table]).fetchone()[0])
            for table in tables
        }


def build(url: str, events: int, items: int, log: Callable[[str], None]) -> BuiltDashboard:
    """A fresh database holding the group, fully verified; saved for reuse."""
    connection.close()
    reset_database(url)
    call_command("migrate", verbosity=0)
    log(f"dashboard build: {events:,} events, a {items:,}-item mission in {database_name(url)}")
    built = populate(events, items, log)
    built.database = database_name(url)
    log(f"dashboard build: done in {built.build_s:.0f} s; vacuum, then replay the whole log")
    with connection.cursor() as cursor:
        cursor.execute("VACUUM (ANALYZE)")  # hint bits and statistics now, not mid-measurement
    mark = time.perf_counter()
    call_command("rebuild_projections", group=[built.group], verify=True, verbosity=0)
    built.verify_s = time.perf_counter() - mark
    built.check = (
        f"built by this run; `rebuild_projections --verify` replayed all {built.head:,} "
        f"events: the hash chain and every projection row match ({built.verify_s:.0f} s)"
    )
    built.check_s = built.verify_s
    built.table_bytes = _table_bytes()
    path = _state_path(url)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(built.as_dict(), indent=2) + "\n")
    return built


# --- reusing -----------------------------------------------------------------------------------


#: apps whose migrations may change the log or its projections: pending ones mean a rebuild
LOG_AND_PROJECTION_APPS = frozenset({"ledger", "work", "registry", "artifacts"})


def _pending_migrations() -> list[str]:
    executor = MigrationExecutor(connections[DEFAULT_DB_ALIAS])
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    return [f"{migration.app_label}.{migration.name}" for migration, _backwards in plan]


def _fold(group: str, first: int, last: int, state: dict[StateKey, Any]) -> None:
    documents = (
        Event.objects.filter(group_id=group, sequence__gte=first, sequence__lte=last)
        .order_by("sequence")
        .values_list("document", flat=True)
        .iterator(chunk_size=2000)
    )
    for text in documents:
        decider.apply(state, Fact.of_event(json.loads(text)))


def _differs(group: str, state: dict[StateKey, Any], keys: list[StateKey]) -> str | None:
    live = load_view(group, keys)
    for key in keys:
        if live[key] != state.get(key):
            return f"{key[0]} {key[1]} differs from its events folded again"
    return None


def check_projections(built: BuiltDashboard) -> str | None:
    """Why the big mission's (or a sampled clone's) rows are not what their events give."""
    state: dict[StateKey, Any] = {}
    for first, last in built.phases:
        _fold(built.group, first, last, state)
    mine = [key for key in state if key[0] in ("mission", "work_item") and "-big" in key[1]]
    if len(mine) != built.items + 1:
        return f"the big mission's events fold into {len(mine)} aggregates, not {built.items + 1}"
    why = _differs(built.group, state, mine)
    if why is not None:
        return why
    size = built.template[1] - built.template[0] + 1
    rng = random.Random()
    samples = [
        (stretch, size)
        for stretch in rng.sample(built.history, min(SAMPLE_CLONES, len(built.history)))
    ]
    if built.ready:  # one unapproved clone too: it stops before the template's last event
        samples.append((built.ready, size - 1))
    for (first, last, _first_clone), each in samples:
        start = first + each * rng.randrange((last - first + 1) // each)
        state = {}
        _fold(built.group, start, start + each - 1, state)
        own = [key for key in state if key[0] in ("mission", "work_item")]
        why = _differs(built.group, state, own)
        if why is not None:
            return why
    return None


def check_cached_dashboard(built: BuiltDashboard) -> str | None:
    """Why the saved group cannot be reused (``None``: it can)."""
    pending = _pending_migrations()
    touching = [name for name in pending if name.split(".")[0] in LOG_AND_PROJECTION_APPS]
    if touching:
        return f"migrations not applied to it: {', '.join(touching)}"
    if pending:  # the person's own view state (snoozes, notifications): neither log nor rows
        call_command("migrate", verbosity=0)
    as_replay = BuiltGroup(
        database=built.database,
        group=built.group,
        head=built.head,
        head_hash=built.head_hash,
        generated=built.generated,
        reader_id="",
        reader_seed="",
        built_at=built.built_at,
        build_s=built.build_s,
        verify_s=built.verify_s,
    )
    why = check_cached(as_replay)
    if why is not None:
        return why
    why = check_projections(built)
    if why is not None:
        return why
    storage = configured_storage()
    missing = [digest for digest in built.artifacts if not storage.exists(digest)]
    if missing:
        return f"artifacts not in the store: {', '.join(missing)}"
    return None


def _load_state(url: str, events: int, items: int) -> BuiltDashboard | None:
    path = _state_path(url)
    if not path.exists():
        return None
    try:
        built = BuiltDashboard(**json.loads(path.read_text()))
    except TypeError:  # saved by another version of this module
        return None
    asked = (events, items, READY)
    return built if (built.events, built.items, built.ready_count) == asked else None


def prepare(url: str, events: int, items: int, log: Callable[[str], None]) -> BuiltDashboard:
    """The saved group if it still checks out, else a new one."""
    saved = _load_state(url, events, items) if database_exists(url) else None
    if saved is not None:
        mark = time.perf_counter()
        why = check_cached_dashboard(saved)
        if why is None:
            saved.reused = True
            saved.check_s = time.perf_counter() - mark
            saved.check = (
                f"reused from {saved.built_at} (then fully replayed: chain and projections, "
                f"{saved.verify_s:.0f} s); this run: no pending migration of the log or its "
                f"projections, the cheap chain "
                f"checks of section 8, the big mission's {saved.items:,} WorkItems and "
                f"{SAMPLE_CLONES} history missions folded again from their events and equal "
                f"to their rows, the shown artifacts in the store ({saved.check_s:.1f} s)"
            )
            log(f"dashboard: reusing {saved.head:,} events of {saved.database}")
            return saved
        log(f"dashboard: cannot reuse {saved.database}: {why}; building again")
    return build(url, events, items, log)
