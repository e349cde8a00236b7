"""``docs/benchmarks.md``: the run's facts, a table per section, ratios to the ceilings.

Only numbers are generated; the interpretation is prose kept in ``interpretation.md`` next
to this module and copied in, so rerunning ``make bench`` refreshes the figures without
losing the explanation (which says which run it was written against).
"""

from __future__ import annotations

import math
from pathlib import Path

from .results import Results, find
from .stats import Measurement, ratio

INTERPRETATION = Path(__file__).resolve().parent / "interpretation.md"
HOW_TO = [
    "## Running it",
    "",
    "`make bench` drops and recreates the database of `BENCH_DATABASE_URL` (default "
    "`postgres://postgres@127.0.0.1:5432/mw_bench`; its name must contain `bench`), migrates "
    "it, creates 16 groups and 16 coordinator agents through the services, starts the daphne "
    "processes and runs every section (about three minutes). Knobs, all environment "
    "variables: `BENCH_SECONDS` (per scenario, default 5), `BENCH_WARMUP_SECONDS` (1), "
    "`BENCH_SERVERS` (2), `BENCH_DB_CONN_MAX_AGE` (0; only the servers of table 1b use it), "
    "`BENCH_POOL_VARIANT=0` (skip table 1b), `BENCH_REDIS_URL` (default Redis db 5; empty: "
    "in-memory channel layer), `BENCH_PORT`, `BENCH_OUTPUT`; the servers and the harness "
    "also read the product's `MWP_DB_POOL_MAX` (the pool's max_size per process). "
    "`python -m benchmarks.run --quick` runs every section at toy sizes and writes "
    "`var/benchmarks-quick.md`; raw figures of each run go to `var/benchmarks/*.json`, server "
    "logs to `var/benchmarks/daphne-*.log`.",
    "",
]


def _rate(value: float) -> str:
    if math.isnan(value):
        return "—"
    return f"{value:,.0f}" if value >= 100 else f"{value:,.1f}"


def _ms(value: float) -> str:
    if math.isnan(value):
        return "—"
    return f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def _ratio(value: float, ceiling: Measurement | None) -> str:
    if ceiling is None:
        return "—"
    share = ratio(value, ceiling.rate)
    return "—" if math.isnan(share) else f"{share:.2f}"


def _table(header: list[str], rows: list[list[str]], *, text_columns: int = 0) -> list[str]:
    """A Markdown table; the first ``text_columns`` columns are left-aligned, numbers right."""
    align = ["---" if index < text_columns else "---:" for index in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return [*lines, ""]


def _notes(measurements: list[Measurement]) -> list[str]:
    lines = []
    for m in measurements:
        for note in m.notes:
            lines.append(f"- {m.name} {m.params}: {note}")
    return [*lines, ""] if lines else []


def _command_section(results: Results, measurements: list[Measurement]) -> list[str]:
    rows = []
    for m in measurements:
        ceiling = find(results.pgbench, groups=m.params["groups"], clients=m.params["clients"])
        rows.append(
            [
                str(m.params["groups"]),
                str(m.params["clients"]),
                _rate(m.rate),
                _ms(m.latency_p50_ms),
                _ms(m.latency_p99_ms),
                str(m.errors),
                _rate(ceiling.rate) if ceiling else "—",
                _ratio(m.rate, ceiling),
            ]
        )
    header = [
        "groups",
        "clients",
        "commands/s",
        "p50 ms",
        "p99 ms",
        "refused",
        "pgbench TPS",
        "ratio",
    ]
    return _table(header, rows) + _notes(measurements)


def _facts(results: Results) -> list[str]:
    f, c = results.facts, results.config
    finished = results.finished_at.strftime("%Y-%m-%d %H:%M UTC") if results.finished_at else "?"
    return [
        f"- **Command:** `{results.command}`",
        f"- **Date:** {results.started_at:%Y-%m-%d %H:%M} – {finished}, "
        f"revision `{f.get('git_revision', '?')}` (plus uncommitted changes, if any)",
        f"- **Machine:** {f.get('nproc')} CPUs (nproc), {f.get('cpu')}, {f.get('memory')} RAM, "
        f"Linux {f.get('kernel')}",
        f"- **Software:** PostgreSQL {f.get('postgresql_server_version')} "
        f"(synchronous_commit={f.get('postgresql_synchronous_commit')}, "
        f"fsync={f.get('postgresql_fsync')}, "
        f"shared_buffers={f.get('postgresql_shared_buffers')}), Python {f.get('python')}, "
        f"Django {f.get('django')}",
        f"- **Load average (1/5/15 min):** {results.load_before} before, "
        f"{results.load_after} after — other work on the machine shares the two cores",
        f"- **Settings:** {c.seconds:g} s per scenario after a {c.warmup_seconds:g} s warm-up; "
        f"HTTP through {c.servers} daphne process(es) running `missionweave.settings` with "
        f"the product's default connection handling (`MWP_DB_POOL=1`: "
        f"{f.get('server_db_pool', '?')} per process)"
        + (
            f", table 1b through {c.servers} more with `MWP_DB_POOL=0` and "
            f"DB_CONN_MAX_AGE={c.conn_max_age}"
            if c.pool_variant
            else ""
        )
        + f"; in process: {f.get('harness_db_pool', '?')}; "
        f"stored `mission.created` event ≈ {results.event_bytes:.0f} bytes",
        "",
    ]


def _batch_section(results: Results) -> list[str]:
    rows = []
    for m in results.batch:
        size = m.params["batch_size"]
        ceiling = find(results.executemany, batch_size=size)
        rows.append(
            [
                str(size),
                _rate(m.rate),
                _ms(m.latency_p50_ms),
                _ms(m.latency_p99_ms),
                str(m.errors),
                _rate(ceiling.rate) if ceiling else "—",
                _ratio(m.rate, ceiling),
            ]
        )
    header = [
        "commands per batch",
        "events/s",
        "batch p50 ms",
        "batch p99 ms",
        "refused",
        "executemany rows/s",
        "ratio",
    ]
    return _table(header, rows) + _notes(results.batch)


def _load(results: Results, key: str) -> str:
    value = results.loads.get(key)
    return "—" if value is None else f"{value:.1f}"


def _ceiling_section(results: Results) -> list[str]:
    pgbench_rows = [
        [
            str(m.params["groups"]),
            str(m.params["clients"]),
            _rate(m.rate),
            _ms(m.latency_p50_ms),
            _ms(m.latency_p99_ms),
            _ms(m.latency_mean_ms),
            _load(results, f"{m.params['groups']}/{m.params['clients']}"),
        ]
        for m in results.pgbench
    ]
    many_rows = [
        [
            str(m.params["batch_size"]),
            _rate(m.rate),
            _ms(m.latency_p50_ms),
            _ms(m.latency_p99_ms),
            _load(results, f"batch/{m.params['batch_size']}"),
        ]
        for m in results.executemany
    ]
    return [
        "pgbench, `-M prepared`, `benchmarks/pgbench/gapless_append.sql` (lock the head row, "
        "advance it, insert a ~600-byte event; groups drawn at random); latency percentiles "
        "from the per-transaction `--log` files:",
        "",
        *_table(
            ["groups", "clients", "TPS", "p50 ms", "p99 ms", "mean ms", "load after cell"],
            pgbench_rows,
        ),
        "psycopg `executemany` of ~600-byte JSON event rows, one transaction per batch under "
        "the head-row lock, one client:",
        "",
        *_table(
            ["rows per transaction", "rows/s", "p50 ms", "p99 ms", "load after cell"], many_rows
        ),
        "*load after cell*: the 1-minute load average when the cell (ceiling, in-process, HTTP "
        "with and without the pool) ended. The run itself accounts for about 2–4 of it at 16 "
        "clients; well above that, other work shared the cores and that cell's figures are low.",
        "",
    ]


def _ratio_section(results: Results) -> list[str]:
    clients = list(results.config.clients)
    rows = []
    for label, measurements in (
        ("HTTP (pool)", results.http),
        ("HTTP without pool", results.http_no_pool),
        ("in-process", results.inprocess),
    ):
        if not measurements:
            continue
        for groups in results.config.groups:
            cells = []
            for count in clients:
                m = find(measurements, groups=groups, clients=count)
                ceiling = find(results.pgbench, groups=groups, clients=count)
                cells.append(_ratio(m.rate, ceiling) if m else "—")
            rows.append([f"{label}, {groups} group(s)", *cells])
    for m in results.batch:
        size = m.params["batch_size"]
        ceiling = find(results.executemany, batch_size=size)
        rows.append(
            [f"batch of {size} vs executemany", _ratio(m.rate, ceiling), *["" for _ in clients[1:]]]
        )
    return _table(["figure / ceiling", *(f"{c} client(s)" for c in clients)], rows, text_columns=1)


def _breakdown_section(results: Results) -> list[str]:
    b = results.breakdown
    if b is None:
        return []
    whole = next((s for s in b.steps if s.name.startswith("submit_command")), None)
    rows = [
        [
            s.where,
            s.name,
            f"{s.mean_us:,.0f}",
            f"{s.cpu_us:,.0f}",
            f"{s.mean_us / whole.mean_us:.0%}" if whole else "—",
        ]
        for s in b.steps
    ]
    return [
        f"Each step alone, {b.repeat} times back to back on one thread (mean per call; CPU is "
        "this process's, other threads included; the last column compares each step's wall "
        "time with one whole `submit_command`, which contains the *write path* steps):",
        "",
        *_table(["where", "step", "wall µs", "CPU µs", "vs submit_command"], rows, text_columns=2),
        f"One `submit_command` (`mission.create`) issues {len(b.queries)} SQL statements:",
        "",
        "```",
        *b.queries,
        "```",
        "",
    ]


def _no_pool_section(results: Results) -> list[str]:
    if not results.http_no_pool:
        return []
    return [
        "### 1b. The same servers without a connection pool (`MWP_DB_POOL=0`)",
        "",
        "Under ASGI each request runs in a thread of its own, so without a pool it opens a new "
        "PostgreSQL connection (`DB_CONN_MAX_AGE` cannot help: the thread never serves another "
        "request). What the pool buys is table 1 against this one; both were measured back to "
        "back in each cell, with the same settings module and only `MWP_DB_POOL` changed.",
        "",
        *_command_section(results, results.http_no_pool),
    ]


def render(results: Results) -> str:
    lines = [
        "# Benchmarks",
        "",
        "Generated by `make bench` (`python -m benchmarks.run`); the figures below are from "
        "one run. Ratios matter more than absolutes: each figure is divided by a ceiling "
        "measured in the same run on the same machine (PostgreSQL alone, doing the same "
        "gapless append).",
        "",
        *_facts(results),
        "## 1. Signed commands over HTTP",
        "",
        "`POST /api/v1/groups/{g}/commands` with a fresh signed `mission.create` per request "
        "(pre-signed before the clock starts), each client a thread with its own keep-alive "
        "`httpx.Client`, agent and session token, clients spread round-robin over the daphne "
        "processes; latency is per request as the client sees it. The servers run the product "
        "default: `missionweave.settings`, which on PostgreSQL borrows each request's "
        "connection from Django's psycopg pool. Ratio: to pgbench at the same groups and "
        "clients.",
        "",
        *_command_section(results, results.http),
        *_no_pool_section(results),
        "## 2. The write path in process",
        "",
        "`submit_command` called from N threads of one process: no HTTP, DRF, token lookup or "
        "JSON parsing. Each thread takes its connection the way the settings say (on "
        "PostgreSQL: borrowed from the pool, see *Settings* above) and keeps it for the whole "
        "scenario, so the pool makes little difference here.",
        "",
        *_command_section(results, results.inprocess),
        "## 3. `commands:batch` into one group",
        "",
        "One client posting batches of pre-signed `mission.create` commands; each accepted "
        "command appends one event. Ratio: to `executemany` of the same number of rows.",
        "",
        *_batch_section(results),
        "## 4. Ceilings (PostgreSQL alone)",
        "",
        *_ceiling_section(results),
        "## 5. Ratios to the ceilings",
        "",
        *_ratio_section(results),
        "## Where the time goes",
        "",
        *_breakdown_section(results),
    ]
    if INTERPRETATION.exists():
        lines += [INTERPRETATION.read_text().rstrip(), ""]
    lines += HOW_TO
    return "\n".join(lines)
