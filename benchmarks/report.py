"""``docs/benchmarks.md``: the run's facts, a table per section, ratios to the ceilings.

Only numbers are generated; the interpretation is prose kept in ``interpretation.md`` next
to this module and copied in, so rerunning ``make bench`` refreshes the figures without
losing the explanation (which says which run it was written against).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from .cpu_share import PARTIES
from .results import Results, find
from .rounds import CEILING_OF, OVER_FLOOR
from .splice import SWEEP_BEGIN, SWEEP_END, splice_block
from .stats import Measurement, ratio

INTERPRETATION = Path(__file__).resolve().parent / "interpretation.md"
SWEEP_INTERPRETATION = Path(__file__).resolve().parent / "sweep_interpretation.md"
HOW_TO = [
    "## Running it",
    "",
    "`make bench` drops and recreates the database of `BENCH_DATABASE_URL` (default "
    "`postgres://postgres@127.0.0.1:5432/mw_bench`; its name must contain `bench`), migrates "
    "it, creates 16 groups and 16 coordinator agents through the services, starts the server "
    "processes and runs every section (about ten minutes). Knobs, all environment "
    "variables: `BENCH_ROUNDS` (3: sections 1–5 report the median of the rounds), "
    "`BENCH_SECONDS` (per scenario, default 5), `BENCH_WARMUP_SECONDS` (1), "
    "`BENCH_SERVER` (`uvicorn`, the production server of `docs/deploy.md`; also `daphne` or "
    "`granian`), `BENCH_SERVERS` (one per core), `BENCH_DB_CONN_MAX_AGE` (0; only the "
    "servers of table 1b use it), "
    "`BENCH_POOL_VARIANT=0` (skip table 1b), `BENCH_REDIS_URL` (default Redis db 5, also the "
    "broker of the write path's hints; empty: in-memory channel layer and broker, never the "
    "demo's `var/celery`), `BENCH_PORT`, `BENCH_OUTPUT`; the servers and the harness "
    "also read the product's `MWP_DB_POOL_MAX` (the pool's max_size per process). "
    "`python -m benchmarks.run --only floor` (which `make bench` runs after the full run) "
    "measures issue 38's must-holds side by side in each round: pgbench with the frozen "
    "floor `benchmarks/pgbench/write_path_statements.sql`, the in-process write path and "
    "HTTP at 1 group × 1 client, and `commands:batch` of 500 next to `executemany`. "
    "`python -m benchmarks.run --quick` runs every section at toy sizes and writes "
    "`var/benchmarks-quick.md`; raw figures of each run go to `var/benchmarks/*.json`, server "
    "logs to `var/benchmarks/<server>-*.log`. `python -m benchmarks.run --only sweep` resets "
    "the database and runs section 6 alone (about two minutes), replacing only that section "
    "of the report; its knobs are `BENCH_SWEEP_LEASES` (100,000; 10 % due), "
    "`BENCH_SWEEP_GROUPS` (10) and `BENCH_SWEEP_LIMIT` (1,000, `sweep_due`'s default). "
    "`python -m benchmarks.run --only stream` resets the database and runs section 7 alone "
    "(1,001 agents with sessions, then 1, 100 and 1,000 websocket subscribers; about five to seven "
    "minutes; needs Redis: `BENCH_REDIS_URL`; `BENCH_STREAM_EVENTS_SCALE` scales the 200, 60 "
    "and 20 timed events). `python -m benchmarks.run --only replay` runs section 8 in its "
    "own database, `BENCH_REPLAY_DATABASE_URL` (default `mw_bench_replay`), which it builds "
    "once (about two minutes for `BENCH_REPLAY_EVENTS`, default 1,000,000) and reuses while "
    "it checks out (then about a minute). Each replaces only its own section; `make bench` "
    "measures neither and keeps both from the existing report; `--render-only` re-renders a "
    "section from its saved figures. `python -m benchmarks.run --only profile` resets the "
    "database, times one client's `submit_command` loop on one group "
    "(`BENCH_PROFILE_COMMANDS`, 2,000) and prints its cProfile; it writes no report. The "
    "floor's scripts (table 4b) stay in `var/benchmarks/floor/` after a run, against the "
    "database it leaves: `pgbench -n -T 8 -c 1 -f var/benchmarks/floor/floor-00.sql mw_bench` "
    "runs one again.",
    "",
    "`make bench` ends by printing the must-holds table (`python -m benchmarks.must_holds`, "
    "which reads it from this report). Where the runner, the scenarios and the report's "
    "modules are: `benchmarks/README.md`.",
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


def _ratio_value(
    measured: Measurement, ceiling: Measurement | None, *, key: str = "ratio"
) -> float:
    """The ratio to the ceiling (or, with ``key="floor_ratio"``, to the floor); over rounds,
    the median of the paired ratios (``benchmarks/rounds.py``). NaN without a ceiling."""
    if ceiling is None:
        return math.nan
    if key in measured.params:
        return float(measured.params[key])
    return ratio(measured.rate, ceiling.rate)


def _ratio(measured: Measurement, ceiling: Measurement | None, *, key: str = "ratio") -> str:
    """``_ratio_value`` as the tables print it: over rounds with each round's in brackets."""
    share = _ratio_value(measured, ceiling, key=key)
    if ceiling is not None and key in measured.params:
        rounds = ", ".join(f"{each:.2f}" for each in measured.params[f"{key}s"])
        return f"{share:.2f} ({rounds})"
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


def _cell_row(results: Results, m: Measurement, *extra: str) -> list[str]:
    """A (groups, clients) cell's row: rate and latencies, ``extra`` columns, then the
    ceiling of the same cell and the ratio to it."""
    ceiling = find(results.pgbench, groups=m.params["groups"], clients=m.params["clients"])
    return [
        str(m.params["groups"]),
        str(m.params["clients"]),
        _rate(m.rate),
        _ms(m.latency_p50_ms),
        _ms(m.latency_p99_ms),
        *extra,
        _rate(ceiling.rate) if ceiling else "—",
        _ratio(m, ceiling),
    ]


def _command_section(results: Results, measurements: list[Measurement]) -> list[str]:
    rows = [_cell_row(results, m, str(m.errors)) for m in measurements]
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
        f"HTTP through {f.get('server', c.server)} running `missionweave.settings` with "
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
                _ratio(m, ceiling),
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


def _floor_section(results: Results) -> list[str]:
    if not results.floor:
        return []
    rows = [_cell_row(results, m) for m in results.floor]
    return [
        "### 4b. The floor: PostgreSQL running the write path's own SQL",
        "",
        "pgbench sending what one `submit_command` (`mission.create`) sends — `BEGIN`, the "
        "lock with its four reads as one query, the event, the mission row, the idempotency "
        "record, the head and the `COMMIT` as another — captured from this run's world and made "
        "repeatable (`benchmarks/floor.py`; the scripts stay in `var/benchmarks/floor/`), with "
        "no Python at all: what a command costs PostgreSQL alone, measured beside the ceiling "
        "in every cell and round. *× ceiling*: the floor over the ceiling.",
        "",
        *_table(["groups", "clients", "TPS", "p50 ms", "p99 ms", "pgbench TPS", "× ceiling"], rows),
    ]


def _ratio_rows(
    results: Results, divisors: list[Measurement], *, key: str, suffix: str
) -> list[list[str]]:
    """A row per figure and group count: its ratio to ``divisors`` in each client count."""
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
            for count in results.config.clients:
                m = find(measurements, groups=groups, clients=count)
                divisor = find(divisors, groups=groups, clients=count)
                cells.append(_ratio(m, divisor, key=key) if m else "—")
            rows.append([f"{label}{suffix}, {groups} group(s)", *cells])
    return rows


def _ratio_section(results: Results) -> list[str]:
    clients = list(results.config.clients)
    rows = _ratio_rows(results, results.pgbench, key="ratio", suffix="")
    if results.floor:
        rows += _ratio_rows(results, results.floor, key="floor_ratio", suffix=" / floor (4b)")
    for m in results.batch:
        size = m.params["batch_size"]
        ceiling = find(results.executemany, batch_size=size)
        rows.append(
            [f"batch of {size} vs executemany", _ratio(m, ceiling), *["" for _ in clients[1:]]]
        )
    return _table(["figure / ceiling", *(f"{c} client(s)" for c in clients)], rows, text_columns=1)


#: the columns of section 5b, one per ``cpu_share`` party
_PARTY_HEADERS = {
    "client": "load client",
    "servers": "servers",
    "postgresql": "PostgreSQL",
    "redis": "Redis",
    "other": "other",
    "idle": "idle",
}


def _cpu_rows(label: str, measurements: list[Measurement], *, servers: bool) -> list[list[str]]:
    """Per cell: ms of each party's CPU per accepted command, and for figures ``servers``
    answered, the rate the machine would allow were their CPU free (``_free_server_bound``)."""
    rows = []
    for m in measurements:
        used = m.params.get("cpu_s") or {}
        if not used or not m.operations:
            continue
        per_command = {party: used.get(party, 0.0) * 1000 / m.operations for party in PARTIES}
        bound = _free_server_bound(used, m) if servers else math.nan
        size = m.params.get("batch_size")
        rows.append(
            [
                label if size is None else f"{label} of {size}",
                str(m.params.get("groups", 1)),
                str(m.params.get("clients", 1)),
                _rate(m.rate),
                *(_ms(per_command[party]) for party in PARTIES),
                _rate(bound),
            ]
        )
    return rows


def _free_server_bound(used: dict[str, float], m: Measurement) -> float:
    """Commands/s the machine's cores allow at this cell's measured CPU per command of the
    load client, PostgreSQL, Redis and the rest, were the servers' CPU zero: an upper bound,
    which no server code can pass on this machine with this client."""
    window_s = m.elapsed_s
    cores = sum(used.get(party, 0.0) for party in PARTIES) / window_s if window_s else math.nan
    others = sum(used.get(party, 0.0) for party in PARTIES if party not in ("servers", "idle"))
    return cores * m.operations / others if others else math.nan


def _cpu_section(results: Results) -> list[str]:
    rows = [
        *_cpu_rows("HTTP (pool)", results.http, servers=True),
        *_cpu_rows("in-process", results.inprocess, servers=False),
        *_cpu_rows("HTTP batch", results.batch, servers=True),
    ]
    if not rows:
        return []
    header = [
        "figure",
        "groups",
        "clients",
        "commands/s",
        *(f"{_PARTY_HEADERS[party]} ms" for party in PARTIES),
        "free-server bound/s",
    ]
    return [
        "### 5b. Where the machine's CPU went",
        "",
        "Every process's CPU time, read from `/proc` around each timed window "
        "(`benchmarks/cpu_share.py`), in ms per accepted command; the row is the cell's median "
        "round. *load client*: the benchmark's own process (its client threads; in process, "
        "also the write path). *servers*: the server processes it started. *PostgreSQL*: "
        "every `postgres` process. *other*: the machine's busy time none of those used "
        "(kernel work for all of them included). *idle*: core time nobody used. The parties "
        "share the machine's cores, so their sum is the cores times the window. "
        "*free-server bound*: the rate the cores allow at the cell's measured CPU per command "
        "of everything but the servers, were the servers' CPU zero. It is an upper bound on "
        "what any server code could reach here with this client; pgbench's client is C and "
        "costs little, this one is Python (`http.client`).",
        "",
        *_table(header, rows, text_columns=1),
    ]


@dataclass(frozen=True)
class _MustHold:
    """One of issue 15's must-holds on sections 1–5: a figure's ratio to its ceiling at
    least ``least``, or a p99 at most ``most`` times its p50."""

    text: str
    figure: str  # the ``Results`` list it reads
    cell: dict[str, int]
    least: float | None = None
    most: float | None = None


_MUST_HOLDS = (
    _MustHold("HTTP, 16 groups × 16 clients", "http", {"groups": 16, "clients": 16}, least=0.20),
    _MustHold("HTTP, 1 group × 1 client", "http", {"groups": 1, "clients": 1}, least=0.25),
    _MustHold(
        "in process, 1 group × 1 client", "inprocess", {"groups": 1, "clients": 1}, least=0.40
    ),
    _MustHold(
        "HTTP p99 / p50, 16 clients on one group", "http", {"groups": 1, "clients": 16}, most=10.0
    ),
    _MustHold(
        "in process p99 / p50, 16 clients on one group",
        "inprocess",
        {"groups": 1, "clients": 16},
        most=10.0,
    ),
    _MustHold("`commands:batch` of 500 / `executemany`", "batch", {"batch_size": 500}, least=0.15),
)


def _must_hold_row(results: Results, hold: _MustHold) -> list[str]:
    m = find(getattr(results, hold.figure), **hold.cell)
    if hold.most is not None:
        asked = f"≤ {hold.most:g}×"
        value = m.latency_p99_ms / m.latency_p50_ms if m and m.latency_p50_ms else math.nan
        holds = value <= hold.most
    else:
        asked = f"≥ {hold.least:.2f}×"
        ceilings = getattr(results, CEILING_OF[hold.figure])
        value = _ratio_value(m, find(ceilings, **hold.cell)) if m else math.nan
        holds = value >= (hold.least or 0.0)
    floor = find(results.floor, **hold.cell) if hold.least and hold.figure in OVER_FLOOR else None
    floor_text = f"{_ratio_value(floor, find(results.pgbench, **hold.cell)):.2f}×" if floor else "—"
    if math.isnan(value):
        missing = "not measured" if m is None else "no ceiling measured"
        return [hold.text, asked, missing, floor_text, "—"]
    shown = f"{value:.1f}×" if hold.most is not None else f"{value:.2f}×"
    return [hold.text, asked, shown, floor_text, "holds" if holds else "**does not hold**"]


def _must_holds_section(results: Results) -> list[str]:
    if not (results.http or results.inprocess or results.batch):
        return []
    rows = [_must_hold_row(results, hold) for hold in _MUST_HOLDS]
    return [
        "### 5c. Issue 15's must-holds on these sections",
        "",
        "Each ratio as section 5 gives it (over rounds, the median of the paired ratios). "
        "*floor × ceiling*: PostgreSQL alone running the write path's own SQL in the same "
        "cell (4b), over the ceiling: no figure with Python in it can reach more than that "
        "on this machine. The sweep's must-hold is in section 6, the replays' in section 8.",
        "",
        *_table(
            ["must hold", "asked", "measured", "floor × ceiling", "verdict"], rows, text_columns=1
        ),
    ]


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
        f"One `submit_command` (`mission.create`) as Django's query log shows it: "
        f"{_query_count(b.queries)} entries, a query of several statements under one heading "
        "(Django's own `BEGIN` and `COMMIT` entries cost no round trip: the reads' query "
        "begins the transaction and the writes' query ends it):",
        "",
        "```",
        *b.queries,
        "```",
        "",
    ]


def _query_count(listed: list[str]) -> int:
    """The queries in ``breakdown._listed`` lines: each line but a query's indented
    statements."""
    return sum(1 for line in listed if not line.startswith("  "))


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


def _seconds(value: float) -> str:
    return f"{value:.2f}" if value < 10 else f"{value:.1f}"


def _times(value: float, ceiling: float) -> str:
    return f"{value / ceiling:,.2f}" if ceiling else "—"


def _sweep_section(results: Results) -> list[str]:
    """Section 6: the sweep against one UPDATE, and where the sweep's time goes."""
    w = results.sweep
    if w is None:
        return []
    per_item = max(w.applied, 1)
    rows = [
        [
            "`sweep_due` until nothing is due (write path)",
            _seconds(w.sweep_s),
            f"{w.applied:,}",
            _rate(w.applied / w.sweep_s if w.sweep_s else math.nan),
            f"{w.queries:,}",
            f"{w.queries / per_item:.1f}",
            f"{w.events:,}",
            f"{w.ratio:,.1f}",
        ],
        [
            "set-based script doing the same writes (events, records, heads)",
            _seconds(w.ceiling_script_s),
            f"{w.ceiling_rows:,}",
            _rate(w.ceiling_rows / w.ceiling_script_s if w.ceiling_script_s else math.nan),
            "1",
            "—",
            f"{3 * w.ceiling_rows:,}",
            "1",
        ],
        [
            "one `UPDATE` of the same rows' columns",
            _seconds(w.ceiling_s),
            f"{w.ceiling_rows:,}",
            _rate(w.ceiling_rows / w.ceiling_s if w.ceiling_s else math.nan),
            "1",
            "—",
            "0",
            _times(w.ceiling_s, w.ceiling_script_s),
        ],
        [
            "one `UPDATE` also rewriting each row's JSON document",
            _seconds(w.ceiling_document_s),
            f"{w.ceiling_rows:,}",
            _rate(w.ceiling_rows / w.ceiling_document_s if w.ceiling_document_s else math.nan),
            "1",
            "—",
            "0",
            _times(w.ceiling_document_s, w.ceiling_script_s),
        ],
    ]
    python_s = w.sweep_s - w.sql_s
    steps = [
        [
            f"`{kind}`",
            f"{count:,}",
            f"{count / per_item:.2f}",
            f"{w.statement_s[kind] * 1000:,.0f}",
            f"{w.statement_s[kind] / count * 1e6:,.0f}",
            f"{w.statement_s[kind] / w.sweep_s:.0%}",
        ]
        for kind, count in w.statements.items()
    ]
    steps += [
        [
            "all SQL statements",
            f"{w.queries:,}",
            f"{w.queries / per_item:.2f}",
            f"{w.sql_s * 1000:,.0f}",
            f"{w.sql_s / max(w.queries, 1) * 1e6:,.0f}",
            f"{w.sql_s / w.sweep_s:.0%}",
        ],
        [
            "outside SQL (Python: decide, evolve, hashing, ORM; commits)",
            "",
            "",
            f"{python_s * 1000:,.0f}",
            "",
            f"{python_s / w.sweep_s:.0%}",
        ],
        [
            "CPU of this process (all of the above)",
            "",
            "",
            f"{w.sweep_cpu_s * 1000:,.0f}",
            f"{w.sweep_cpu_s / per_item * 1e6:,.0f} per item",
            f"{w.sweep_cpu_s / w.sweep_s:.0%}",
        ],
    ]
    lines = [
        "## 6. The lease sweep",
        "",
        f"- **Measured:** {w.started_at}, revision `{w.git_revision}` (plus uncommitted "
        f"changes, if any), load average {w.load_before} before and {w.load_after} after "
        "(1/5/15 min)",
        f"- **Data:** {w.leases:,} active leases in {w.groups} groups, {w.due:,} of them "
        f"expired by the database clock; `sweep_due(limit={w.limit:,})` called until a call "
        f"applied nothing ({w.calls} calls, {w.commits} group transactions); "
        f"{w.applied:,} reassigned, {w.replayed:,} replayed, {w.refused:,} refused",
        f"- **Seed ({_seconds(w.seed_s)} s):** {w.seed_note}",
        "",
        "One sweep of every due lease through the write path (`work.reassign` per item: "
        "`lease.expired`, `work.reassigned` and, to the next eligible worker, `work.offered`), "
        "against one set-based SQL statement doing the same writes on copies of the tables "
        "(same rows, same indexes, one committed transaction): each due row's columns and "
        "JSON document, three events per item padded to the sizes the sweep stores, with "
        "gapless sequences and a SHA-256 each, a command record per item, and the group "
        "heads (`benchmarks/sweep.py`, `script_sql`). It decides nothing and chains no "
        "hash. Two single `UPDATE`s of the projection rows alone are shown for scale. "
        "*× ceiling*: wall time over the script's (issue 15 asks for at most 5).",
        "",
        *_table(
            [
                "what",
                "wall s",
                "rows",
                "rows/s",
                "statements",
                "per row",
                "events",
                "× ceiling",
            ],
            rows,
            text_columns=1,
        ),
        "Where the sweep's wall time goes: every statement counted and timed by a "
        "`connection.execute_wrapper` (time inside the call: driver, round trip and server), "
        "by verb and table; *per item* divides by the items reassigned.",
        "",
        *_table(
            ["statement", "count", "per item", "total ms", "mean µs", "share of wall"],
            steps,
            text_columns=1,
        ),
    ]
    if SWEEP_INTERPRETATION.exists():
        lines += [SWEEP_INTERPRETATION.read_text().rstrip(), ""]
    return lines


def sweep_block(results: Results) -> list[str]:
    """Section 6 between its markers (empty when the sweep was not measured)."""
    section = _sweep_section(results)
    return [SWEEP_BEGIN, "", *section, SWEEP_END, ""] if section else []


def splice_sweep(document: str, results: Results) -> str:
    """``document`` with section 6 replaced by this run's (``--only sweep``): between the
    markers if it has them, else before *Where the time goes*, else at the end."""
    return splice_block(document, SWEEP_BEGIN, SWEEP_END, "\n".join(sweep_block(results)))


def _rounds_sentence(results: Results) -> str:
    rounds = results.config.rounds
    if rounds <= 1:
        return "The figures below are from one run."
    return (
        f"Sections 1–5 measured every cell in {rounds} rounds, one after another, each round "
        "timing the ceiling and the figures side by side; a table shows the round with the "
        f"median rate, and a ratio is the median of the {rounds} paired ratios (each round's "
        "figure over that round's ceiling), each round's in brackets (`benchmarks/rounds.py`). "
        "The sweep, the breakdown and sections 7–10 are from one run."
    )


def render(results: Results) -> str:
    lines = [
        "# Benchmarks",
        "",
        "Generated by `make bench` (`python -m benchmarks.run`). Ratios matter more than "
        "absolutes: each figure is divided by a ceiling measured in the same run on the same "
        "machine (PostgreSQL alone, doing the same gapless append). " + _rounds_sentence(results),
        "",
        *_facts(results),
        "## 1. Signed commands over HTTP",
        "",
        "`POST /api/v1/groups/{g}/commands` with a fresh signed `mission.create` per request "
        "(pre-signed before the clock starts), each client a thread with its own keep-alive "
        "`http.client` connection (the standard library's: `httpx` cost three times its CPU "
        "per request on the cores the servers need, `benchmarks/http_load.py`), agent and "
        "session token, clients spread round-robin over the server "
        "processes (which server: *Settings* above); latency is per request as the client "
        "sees it. The servers run the product "
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
        *_floor_section(results),
        "## 5. Ratios to the ceilings",
        "",
        *_ratio_section(results),
        *_cpu_section(results),
        *_must_holds_section(results),
        *sweep_block(results),
        "## Where the time goes",
        "",
        *_breakdown_section(results),
    ]
    if INTERPRETATION.exists():
        lines += [INTERPRETATION.read_text().rstrip(), ""]
    lines += HOW_TO
    return "\n".join(lines)
