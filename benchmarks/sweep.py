"""The lease sweep at scale: one sweep over 100,000 leases of which 10 % are due, against one
SQL ``UPDATE`` of the same rows on the same database.

**Seed.** Each group gets a mission and one *template* WorkItem through the real write path
(``work.authorize``, an urgent ``work.offer`` to two workers, ``work.accept_offer`` and
``work.start`` by the first): its log, head and projection row are what the product writes.
The other leases are projection rows *cloned* from each group's template — the pure aggregate
with a new id, lease id and expiry, stored with the projection's own ``to_fields`` — and
bulk-inserted with ``COPY``. Their history is not in the log (a rebuild would drop them); the
sweep reads nothing but these rows and the group heads, so it meets exactly what 100,000 real
leases would present. The report says so.

**Sweep.** ``sweep_due(limit=…)`` is called until a call applies nothing, as beat would call
it; every SQL statement is counted (and its wall time summed) by a
``connection.execute_wrapper``, and the events appended are counted from the log.

**Ceiling.** Before the sweep, the seeded table is copied twice (``CREATE TABLE … (LIKE
work_workitem INCLUDING ALL)``: same rows, same indexes); on the first copy one ``UPDATE``
sets the due rows' columns as the sweep leaves them, on the second the same ``UPDATE`` also
rewrites each row's JSON document (as the sweep's projection update does). Each is one
statement in one committed transaction.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import connection, transaction
from django.db.models.functions import Now

from apps.artifacts.services import artifact_store
from apps.ledger.models import Event
from apps.ledger.statements import statements_of
from apps.ledger.write_path import submit_command
from apps.registry import services
from apps.work.models import WorkItem
from apps.work.sweeps import SweepReport, sweep_due
from missionweave.protocol.envelope import signed_envelope
from missionweave.protocol.examples import (
    INCIDENT_REPORTS,
    INCIDENT_REPORTS_DIGEST,
    example_contract,
)
from missionweave.protocol.timefmt import format_timestamp
from missionweave.protocol.work.checks import SELECTION_BASIS_FIELDS
from missionweave.protocol.work.items import WorkItem as WorkItemState

from .facts import _git_revision
from .world import BenchAgent, register_agent

ORGANIZATION = "org-sweep"
ADMIN = "sweep-admin"
MISSION = "m-sweep"
TEMPLATE = "wi-template"
#: every column the projection writes (``WorkItem.projection.to_fields``), after the keys
FIELD_COLUMNS = (
    "mission",
    "state",
    "owner",
    "ownership_epoch",
    "lease_holder",
    "due_at",
    "due_reason",
    "urgency",
    "title",
    "data",
)
COPY_COLUMNS = ("group_id", "work_item_id", *FIELD_COLUMNS)
TWINS = ("bench_sweep_twin_columns", "bench_sweep_twin_document", "bench_sweep_twin_script")
#: the script ceiling's copies of the log tables (empty events and records, the real heads)
SCRIPT_TABLES = {
    "ledger_event": "bench_sweep_script_event",
    "ledger_commandrecord": "bench_sweep_script_record",
    "ledger_grouplog": "bench_sweep_script_head",
}
#: the stored size of each event a reassignment appends, as the sweep writes them (bytes,
#: measured on this benchmark's events): the script's documents are padded to these
EVENT_SIZES = (("lease.expired", 560), ("work.reassigned", 600), ("work.offered", 960))
SEED_NOTE = (
    "one template WorkItem per group through the write path; the other leases are "
    "projection rows cloned from it (new id, lease id, expiry) and inserted with COPY — "
    "not in the log, which the sweep does not read"
)


@dataclass
class SweepResult:
    """One sweep benchmark: the seed, the sweep's time and statements, the ceilings."""

    leases: int  # WorkItems holding an active lease when the sweep started
    due: int  # of which due (lease expired by the database clock)
    groups: int
    limit: int  # sweep_due(limit=...)
    seed_s: float
    calls: int  # sweep_due calls, the last one finding nothing left to apply
    applied: int
    replayed: int
    refused: int
    events: int  # events appended by the sweep
    sweep_s: float
    sweep_cpu_s: float  # this process's CPU during the sweep
    queries: int  # SQL statements executed (BEGIN/COMMIT are not statements here)
    sql_s: float  # wall time inside those statements (driver + round trip + server)
    commits: int  # transactions the sweep committed (one per group per call)
    statements: dict[str, int] = field(default_factory=dict)  # by kind
    statement_s: dict[str, float] = field(default_factory=dict)
    ceiling_rows: int = 0
    ceiling_s: float = 0.0  # UPDATE of the columns
    ceiling_document_s: float = 0.0  # the same UPDATE also rewriting the JSON document
    #: the set-based script doing the sweep's writes: the projection update with the
    #: document, three events per item, a command record per item, the group heads
    ceiling_script_s: float = 0.0
    seed_note: str = SEED_NOTE
    started_at: str = ""
    load_before: str = ""
    load_after: str = ""
    git_revision: str = ""

    @property
    def ratio(self) -> float:
        """How many times longer the sweep takes than the set-based script doing its writes
        (issue 15's must-hold: at most 5)."""
        return self.sweep_s / self.ceiling_script_s if self.ceiling_script_s > 0 else float("nan")

    def as_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "ratio": self.ratio}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SweepResult:
        """Back from :meth:`as_dict` (the raw figures a run saved)."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in names})


# --- seed --------------------------------------------------------------------------------------


def _basis() -> dict[str, Any]:
    return {name: f"{name} checked" for name in SELECTION_BASIS_FIELDS}


def _command(agent: BenchAgent, group: str, type_: str, body: dict[str, Any]) -> dict[str, Any]:
    now = datetime.now(UTC)
    return signed_envelope(
        agent.key,
        {
            "id": f"seed-{type_}-{group}-{time.perf_counter_ns()}",
            "type": type_,
            "group": group,
            "actor": agent.principal,
            "session_epoch": agent.session_epoch,
            "membership_epoch": agent.membership_epochs[group],
            "issued_at": format_timestamp(now),
            "body": body,
        },
    )


def _submit(agent: BenchAgent, group: str, type_: str, body: dict[str, Any]) -> dict[str, Any]:
    outcome = submit_command(
        group_id=group, document=_command(agent, group, type_, body), caller=agent.caller
    )
    return outcome.body["result"]


def _register(agent_id: str, organization: str) -> BenchAgent:
    return register_agent(
        agent_id, organization=organization, capability="bench.sweep", max_concurrency=1000
    )


def _world(groups: int, prefix: str) -> tuple[list[str], BenchAgent, list[BenchAgent]]:
    """Groups with a coordinator and two workers, through the services."""
    organization = f"{ORGANIZATION}-{prefix}"
    services.organization_create(body={"id": organization, "name": "Sweep benchmark"})
    token = services.api_token_create(username=ADMIN, staff=True, label="sweep benchmark")
    admin = services.authenticate_bearer(token).caller
    group_ids = [f"{prefix}-g{index:02d}" for index in range(groups)]
    for gid in group_ids:
        services.group_create(body={"id": gid, "organization": organization, "name": gid})
    coordinator = _register(f"{prefix}-coord", organization)
    # A contract names only stored inputs its sender may name (wire.md §9): the coordinator
    # uploads the template contract's input first, as a real one would.
    artifact_store(
        principal=coordinator.principal, digest=INCIDENT_REPORTS_DIGEST, chunks=[INCIDENT_REPORTS]
    )
    workers = [_register(f"{prefix}-w{n}", organization) for n in range(2)]
    for agent, role in ((coordinator, "coordinator"), *((w, "worker") for w in workers)):
        for gid in group_ids:
            outcome = services.membership_grant(
                group_id=gid, admin=admin, body={"principal": agent.principal, "roles": [role]}
            )
            agent.membership_epochs[gid] = outcome.body["result"]["epoch"]
        agent.open_session()
    return group_ids, coordinator, workers


def _template(group: str, coordinator: BenchAgent, workers: list[BenchAgent]) -> WorkItemState:
    """One WorkItem started under a lease, through the write path; its aggregate."""
    first, second = workers
    expires = format_timestamp(datetime.now(UTC) + timedelta(hours=2))
    _submit(
        coordinator,
        group,
        "mission.create",
        {"mission": MISSION, "goal": "Sweep benchmark", "budgets": {"money": 5.0}},
    )
    contract = example_contract(deadline="2099-01-01T00:00:00Z")
    contract["acceptance_criteria"] = contract["acceptance_criteria"][:1]
    _submit(
        coordinator,
        group,
        "work.authorize",
        {"work_item": TEMPLATE, "mission": MISSION, "contract": contract, "depends_on": []},
    )
    offers = [
        {"offer": "o-first", "worker": first.principal, "expires_at": expires},
        {"offer": "o-second", "worker": second.principal, "expires_at": expires},
    ]
    _submit(
        coordinator,
        group,
        "work.offer",
        {"work_item": TEMPLATE, "offers": offers, "mode": "urgent", "selection_basis": _basis()},
    )
    accept = {"work_item": TEMPLATE, "offer": "o-first", "contract_revision": 1}
    _submit(first, group, "work.accept_offer", accept)
    start = {"work_item": TEMPLATE, "ownership_epoch": 1, "lease_ttl_s": 3600}
    _submit(first, group, "work.start", start)
    return WorkItem.objects.get(group_id=group, work_item_id=TEMPLATE).to_state()


def _clone(template: WorkItemState, n: int, expires_at: datetime) -> WorkItemState:
    assert template.lease is not None
    item_id = f"wi-{n:06d}"
    lease = replace(
        template.lease, lease_id=f"lease_seed{n:06d}", expires_at=format_timestamp(expires_at)
    )
    return replace(template, id=item_id, lease=lease)


def _copy_rows(rows: list[tuple[Any, ...]]) -> None:
    columns = ", ".join(COPY_COLUMNS)
    with connection.cursor() as cursor:
        raw = cursor.cursor  # psycopg's own cursor: COPY is not in Django's cursor API
        with raw.copy(f"COPY work_workitem ({columns}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)


def seed(
    *, leases: int, due_fraction: float, groups: int, prefix: str = "sweep"
) -> tuple[list[str], int]:
    """``leases`` active leases (a multiple of ``groups``) spread evenly over the groups, in
    each group ``due_fraction`` of them expired by the database clock (up to ten minutes ago,
    so the sweep's oldest-first order interleaves the groups); returns the groups and how
    many are due."""
    group_ids, coordinator, workers = _world(groups, prefix)
    templates = {group: _template(group, coordinator, workers) for group in group_ids}
    with connection.cursor() as cursor:
        cursor.execute("SELECT clock_timestamp()")
        now: datetime = cursor.fetchone()[0]
    every = round(1 / due_fraction) if due_fraction > 0 else 0
    to_fields = WorkItem.projection.to_fields
    due = 0
    batch: list[tuple[Any, ...]] = []
    per_group = leases // groups  # each group's template is one of its leases (not due)
    with transaction.atomic():
        for k in range(per_group - 1):
            for index, group in enumerate(group_ids):
                n = k * groups + index
                if every and k % every == 0:
                    expires = now - timedelta(seconds=1 + n % 600)  # expired up to 10 min ago
                    due += 1
                else:
                    expires = now + timedelta(hours=1, seconds=n % 3600)
                state = _clone(templates[group], n, expires)
                fields = {**to_fields(state)}
                fields["data"] = json.dumps(fields["data"])
                assert set(fields) == set(FIELD_COLUMNS), "a projection column is not copied"
                batch.append((group, state.id, *(fields[name] for name in FIELD_COLUMNS)))
                if len(batch) >= 5000:
                    _copy_rows(batch)
                    batch = []
        _copy_rows(batch)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE work_workitem")
    return group_ids, due


# --- measuring ---------------------------------------------------------------------------------


def statement_kind(sql: str) -> str:
    """A statement's verb and table, e.g. ``SELECT ledger_commandrecord``; for a query of
    several statements (``statements.sent_as_one``, ``reads.run_together``), each distinct
    kind in order, joined by `` + ``."""
    parts = [sub for part in statements_of(sql) for sub in _sub_statements(part)]
    if len(parts) > 1:
        return " + ".join(dict.fromkeys(_one_kind(part) for part in parts))
    return _one_kind(sql)


#: ``apps.ledger.folded``'s form: ``WITH w0 AS (s0), w1 AS (s1), … main``
_FOLDED_HEAD = "WITH w0 AS ("
_BETWEEN_SUBS = re.compile(r"\), w\d+ AS \(")
_BEFORE_MAIN = re.compile(r"\) (?=(?:INSERT|UPDATE|DELETE) )")


def _sub_statements(sql: str) -> list[str]:
    """The statements a folded ``WITH`` holds, in order (any other statement: itself)."""
    if not sql.startswith(_FOLDED_HEAD):
        return [sql]
    *subs, last = _BETWEEN_SUBS.split(sql.removeprefix(_FOLDED_HEAD))
    *_, main = _BEFORE_MAIN.finditer(last)
    return [*subs, last[: main.start()], last[main.end() :]]


def _one_kind(sql: str) -> str:
    words = sql.replace('"', "").split()
    if not words:
        return "?"
    verb = words[0].upper()
    if verb in ("SAVEPOINT", "RELEASE", "ROLLBACK"):
        return f"{verb} (savepoint)" if verb != "RELEASE" else "RELEASE SAVEPOINT"
    if verb == "COPY" and len(words) > 1:  # COPY table (columns) FROM STDIN
        return f"COPY {words[1].split('(')[0]}"
    if verb == "UPDATE" and len(words) > 1:  # UPDATE table [AS t] SET … [FROM (VALUES …)]
        return f"UPDATE {words[1]}"
    upper = [word.upper() for word in words]
    for keyword in ("FROM", "INTO", "UPDATE"):
        if keyword in upper:
            index = upper.index(keyword)
            if index + 1 < len(words):
                table = words[index + 1].split(".")[0].strip("(")
                suffix = " FOR UPDATE" if "FOR" in upper[-3:] else ""
                return f"{verb} {table}{suffix}"
    return verb


@dataclass
class StatementCounter:
    """A ``connection.execute_wrapper``: times each statement, and counts and times them
    by kind once the run is over — classifying a query of a thousand statements as it ran
    took ~4 % of the sweep's measured time."""

    timed: list[tuple[str, float]] = field(default_factory=list)

    def __call__(
        self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any
    ) -> Any:
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.timed.append((sql, time.perf_counter() - started))

    def by_kind(self) -> tuple[Counter[str], Counter[str]]:
        """The queries counted and their seconds summed by kind, each classified once."""
        count: Counter[str] = Counter()
        seconds: Counter[str] = Counter()
        for sql, elapsed in self.timed:
            kind = statement_kind(sql)
            count[kind] += 1
            seconds[kind] += elapsed
        return count, seconds


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} / {five:.2f} / {fifteen:.2f}"


def _copy_twins() -> None:
    with connection.cursor() as cursor:
        for twin in TWINS:
            cursor.execute(f"DROP TABLE IF EXISTS {twin}")
            cursor.execute(f"CREATE TABLE {twin} (LIKE work_workitem INCLUDING ALL)")
            cursor.execute(f"INSERT INTO {twin} SELECT * FROM work_workitem")
            cursor.execute(f"ANALYZE {twin}")
        for table, twin in SCRIPT_TABLES.items():
            cursor.execute(f"DROP TABLE IF EXISTS {twin}")
            cursor.execute(f"CREATE TABLE {twin} (LIKE {table} INCLUDING ALL)")
        cursor.execute(
            f"INSERT INTO {SCRIPT_TABLES['ledger_grouplog']} SELECT * FROM ledger_grouplog"
        )


def _timed_update(sql: str) -> tuple[int, float]:
    """Run one statement in its own committed transaction; (rows, seconds)."""
    started = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql)
        rows = cursor.rowcount
    return rows, time.perf_counter() - started


_SET_COLUMNS = "state = 'offered', owner = '', lease_holder = '', due_at = NULL, due_reason = ''"
_SET_DOCUMENT = "data = jsonb_set(jsonb_set(data, '{state}', '\"offered\"'), '{owner}', 'null')"


def measure_ceilings() -> tuple[int, float, float, float]:
    """One UPDATE of the due rows on each twin (the columns only, then with the document),
    and the set-based script doing all the sweep's writes (``script_sql``)."""
    rows, columns_s = _timed_update(f"UPDATE {TWINS[0]} SET {_SET_COLUMNS} WHERE due_at <= now()")
    rows_doc, document_s = _timed_update(
        f"UPDATE {TWINS[1]} SET {_SET_COLUMNS}, {_SET_DOCUMENT} WHERE due_at <= now()"
    )
    assert rows == rows_doc, (rows, rows_doc)
    _rows, script_s = _timed_update(script_sql())
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {SCRIPT_TABLES['ledger_event']}")
        events = cursor.fetchone()[0]
        assert events == 3 * rows, (events, rows)
        for twin in (*TWINS, *SCRIPT_TABLES.values()):
            cursor.execute(f"DROP TABLE {twin}")
    return rows, columns_s, document_s, script_s


def script_sql() -> str:
    """The sweep's writes as one set-based statement on copies of the tables: each due row's
    columns and document as the sweep leaves them; its three events (``EVENT_SIZES``) with
    gapless sequences after each group's head, a SHA-256 of each document, and the event
    columns the log stores; a command record per item; each group's head advanced. What it
    leaves out, the sweep must do and a script need not: deciding each item, chaining each
    hash to the one before, signing nothing (a reassignment signs nothing either)."""
    event, record, head = (SCRIPT_TABLES[t] for t in SCRIPT_TABLES)
    kinds = ", ".join(f"({n}, '{kind}', {size})" for n, (kind, size) in enumerate(EVENT_SIZES))
    return f"""
WITH due AS (
    UPDATE {TWINS[2]} SET {_SET_COLUMNS}, {_SET_DOCUMENT} WHERE due_at <= now()
    RETURNING group_id, work_item_id
), numbered AS (
    SELECT d.group_id, d.work_item_id, e.kind, e.size,
           row_number() OVER (PARTITION BY d.group_id ORDER BY d.work_item_id, e.n) AS n
    FROM due d CROSS JOIN (VALUES {kinds}) AS e(n, kind, size)
), documents AS (
    SELECT n.group_id, h.head_sequence + n.n AS sequence, n.kind, n.work_item_id,
           json_build_object(
               'group', n.group_id, 'sequence', h.head_sequence + n.n, 'type', n.kind,
               'actor', 'authority', 'recorded_at', now(),
               'payload', json_build_object(
                   'work_item', n.work_item_id, 'pad', repeat('x', greatest(n.size - 180, 0))
               )
           )::text AS document
    FROM numbered n JOIN {head} h ON h.group_id = n.group_id
), events AS (
    INSERT INTO {event} (group_id, sequence, event_id, type, command_id, actor,
                         recorded_at, hash, document)
    SELECT group_id, sequence, 'evt_' || md5(group_id || sequence), kind,
           'reassign-' || work_item_id, 'authority', now(),
           'sha256:' || encode(sha256(convert_to(document, 'UTF8')), 'hex'), document
    FROM documents
    RETURNING group_id, sequence
), records AS (
    INSERT INTO {record} (group_id, actor, command_id, content_digest, status, response,
                          accepted_at)
    SELECT group_id, 'authority', 'reassign-' || work_item_id, 'sha256:' || md5(work_item_id),
           200, jsonb_build_object('command_id', 'reassign-' || work_item_id), now()
    FROM due
)
UPDATE {head} h SET head_sequence = m.last, head_hash = 'sha256:' || md5(m.last::text)
FROM (SELECT group_id, max(sequence) AS last FROM events GROUP BY group_id) m
WHERE h.group_id = m.group_id
"""


def run_sweep(limit: int) -> tuple[list[SweepReport], StatementCounter, float, float]:
    """``sweep_due`` until a call applies nothing; the reports, statements, wall and CPU s."""
    counter = StatementCounter()
    reports: list[SweepReport] = []
    with connection.execute_wrapper(counter):
        wall, cpu = time.perf_counter(), time.process_time()
        while True:
            report = sweep_due(limit=limit)
            reports.append(report)
            if report.applied == 0:
                break
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return reports, counter, wall, cpu


def measure_sweep(
    *,
    leases: int,
    due_fraction: float,
    groups: int,
    limit: int,
    prefix: str = "sweep",
    log: Callable[[str], None] = lambda message: None,
) -> SweepResult:
    """Seed, copy the twins, run the ceilings, then the sweep: one :class:`SweepResult`."""
    started_at = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    load_before = _load()
    mark = time.perf_counter()
    group_ids, due = seed(leases=leases, due_fraction=due_fraction, groups=groups, prefix=prefix)
    seed_s = time.perf_counter() - mark
    active = WorkItem.objects.filter(group_id__in=group_ids, state="active").count()
    due_now = WorkItem.objects.filter(group_id__in=group_ids, due_at__lte=Now())
    assert due_now.count() == due, (due_now.count(), due)
    log(f"sweep seed: {active} leases ({due} due) in {groups} groups, {seed_s:.1f} s")

    _copy_twins()
    ceiling_rows, ceiling_s, ceiling_document_s, ceiling_script_s = measure_ceilings()
    log(
        f"sweep ceiling: UPDATE of {ceiling_rows} rows {ceiling_s * 1000:.0f} ms "
        f"({ceiling_document_s * 1000:.0f} ms rewriting the document, "
        f"{ceiling_script_s * 1000:.0f} ms the script with events, records and heads)"
    )

    with connection.cursor() as cursor:
        cursor.execute("CHECKPOINT")  # the copies' dirty pages are not the sweep's to write
    events_before = Event.objects.filter(group_id__in=group_ids).count()
    reports, counter, sweep_s, cpu_s = run_sweep(limit)
    events = Event.objects.filter(group_id__in=group_ids).count() - events_before
    applied = sum(r.applied for r in reports)
    log(f"sweep: {applied} reassigned in {sweep_s:.1f} s, {len(counter.timed)} queries")
    count, seconds = counter.by_kind()
    return SweepResult(
        leases=active,
        due=due,
        groups=groups,
        limit=limit,
        seed_s=seed_s,
        calls=len(reports),
        applied=applied,
        replayed=sum(r.replayed for r in reports),
        refused=sum(r.refused for r in reports),
        events=events,
        sweep_s=sweep_s,
        sweep_cpu_s=cpu_s,
        queries=len(counter.timed),
        sql_s=sum(seconds.values()),
        commits=sum(r.groups for r in reports),
        statements=dict(count.most_common()),
        statement_s={kind: seconds[kind] for kind, _ in count.most_common()},
        ceiling_rows=ceiling_rows,
        ceiling_s=ceiling_s,
        ceiling_document_s=ceiling_document_s,
        ceiling_script_s=ceiling_script_s,
        started_at=started_at,
        load_before=load_before,
        load_after=_load(),
        git_revision=_git_revision(),
    )
