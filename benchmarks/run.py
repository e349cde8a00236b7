"""``python -m benchmarks.run [--quick]``: reset the benchmark database, measure, report.

Order: for every (groups, clients) cell, pgbench's ceiling, then the in-process write path,
then HTTP to the servers as shipped (Django's psycopg pool, the PostgreSQL default), then HTTP
to the same servers started with ``MWP_DB_POOL=0`` — back to back, so a ratio compares
figures taken seconds apart even when other work on the machine comes and goes. Then batches
(default servers) next to ``executemany``, then the per-step breakdown, then the lease sweep
against one SQL ``UPDATE`` (section 6). The report goes to ``docs/benchmarks.md``
(``--quick``: under ``var/``) and the raw figures to ``var/benchmarks/results.json``.

``--only sweep`` resets the database and measures section 6 alone, then replaces only that
section of the existing report (the other figures stay those of the last full run); its raw
figures go to ``var/benchmarks/sweep.json``.

``--only stream`` resets the database and measures section 7 (latency from a command's
acceptance to its EVENT frame at 1, 100 and 1,000 websocket subscribers); ``--only replay``
measures section 8 (replaying a 1,000,000-event group over the stream and REST) in its own
database ``BENCH_REPLAY_DATABASE_URL`` (default ``mw_bench_replay``), built once and reused
while it checks out. Each replaces only its section; a full run keeps both as they were.
Their raw figures go to ``var/benchmarks/stream.json`` and ``replay.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from contextlib import ExitStack
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from .config import ROOT, BenchConfig, load_config
from .database import reset_database

if TYPE_CHECKING:
    from .results import Results
    from .sweep import SweepResult
    from .world import BenchWorld

REPLAY_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/mw_bench_replay"


def _log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", flush=True)


def _setup_django(config: BenchConfig) -> None:
    """Point this process at the benchmark database and Redis db, then start Django."""
    os.environ["DATABASE_URL"] = config.database_url
    os.environ["REDIS_URL"] = config.redis_url
    os.environ["DJANGO_SETTINGS_MODULE"] = "missionweave.settings"
    os.environ.setdefault("LOG_LEVEL", "ERROR")
    os.environ["MWP_CHANNEL_PREFIX"] = "mwp-bench"
    os.environ.pop("MWP_TEST_DB_NAME", None)
    import django

    django.setup()


def _event_bytes() -> float:
    from django.db.models import Avg
    from django.db.models.functions import Length

    from apps.ledger.models import Event

    average = Event.objects.filter(type="mission.created").aggregate(size=Avg(Length("document")))[
        "size"
    ]
    return float(average or 0)


def _settle(config: BenchConfig) -> None:
    """Start every cell from the same server state: fresh planner statistics on the new
    tables (autovacuum would otherwise ANALYZE them in the middle of the first cell) and
    one untimed pgbench second to warm PostgreSQL's caches."""
    from django.db import connection

    from . import ceilings

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    ceilings.run_pgbench(config.database_url, clients=4, groups=config.max_groups, seconds=1)


def _measure_cell(
    results: Results,
    config: BenchConfig,
    world: BenchWorld,
    urls: list[str],
    unpooled_urls: list[str],
    groups: int,
    clients: int,
) -> None:
    """One (groups, clients) cell: the ceiling and the server's figures, back to back."""
    from . import ceilings
    from .http_load import measure_http
    from .inprocess import measure_inprocess

    results.pgbench.append(
        ceilings.run_pgbench(
            config.database_url, clients=clients, groups=groups, seconds=config.seconds
        )
    )
    results.inprocess.append(
        measure_inprocess(world, clients=clients, groups=groups, config=config)
    )
    results.http.append(measure_http(world, urls, clients=clients, groups=groups, config=config))
    line = (
        f"{groups} group(s), {clients} client(s): pgbench {results.pgbench[-1].rate:.0f}/s, "
        f"in-process {results.inprocess[-1].rate:.0f}/s, http {results.http[-1].rate:.0f}/s"
    )
    if unpooled_urls:
        results.http_no_pool.append(
            measure_http(
                world,
                unpooled_urls,
                clients=clients,
                groups=groups,
                config=config,
                name="http_no_pool",
            )
        )
        line += f", http without pool {results.http_no_pool[-1].rate:.0f}/s"
    results.loads[f"{groups}/{clients}"] = os.getloadavg()[0]
    _log(f"{line} (load {results.loads[f'{groups}/{clients}']:.1f})")


def _fresh_results(config: BenchConfig, command: str) -> Results:
    """Results of a new run on a freshly reset and migrated bench database."""
    from django.core.management import call_command

    from .facts import load_average, machine_facts
    from .results import Results

    results = Results(command=command, config=config, started_at=datetime.now(UTC))
    results.load_before = load_average()
    _log(f"resetting {config.database_url} and migrating")
    reset_database(config.database_url)
    call_command("migrate", verbosity=0)
    results.facts = machine_facts(config.database_url)
    return results


def measure(config: BenchConfig, command: str) -> Results:
    """Run every section; return the :class:`~benchmarks.results.Results`."""

    from . import ceilings
    from .breakdown import measure_breakdown
    from .facts import load_average
    from .http_load import measure_http_batch
    from .servers import describe_pool, running_servers
    from .world import build_world

    results = _fresh_results(config, command)
    results.facts["server_db_pool"] = describe_pool(config, pool=True)
    world = build_world(groups=config.max_groups, agents=config.max_clients)
    _log(f"{len(world.groups)} groups, {len(world.agents)} agents with sessions")
    _settle(config)

    with ExitStack() as servers:
        urls = servers.enter_context(running_servers(config, pool=True))
        unpooled_urls: list[str] = []
        if config.pool_variant:
            unpooled_urls = servers.enter_context(
                running_servers(config, pool=False, first_index=config.servers)
            )
        _log(f"daphne at {', '.join(urls)}; without a pool at {', '.join(unpooled_urls) or '-'}")
        for groups in config.groups:
            for clients in config.clients:
                _measure_cell(results, config, world, urls, unpooled_urls, groups, clients)
        for size in config.batch_sizes:
            results.executemany.append(
                ceilings.run_executemany(
                    config.database_url, batch_size=size, seconds=config.seconds
                )
            )
            results.batch.append(measure_http_batch(world, urls, size=size, config=config))
            results.loads[f"batch/{size}"] = os.getloadavg()[0]
            _log(
                f"batch {size}: executemany {results.executemany[-1].rate:.0f} rows/s, "
                f"commands:batch {results.batch[-1].rate:.0f} events/s"
            )
    results.breakdown = measure_breakdown(world, repeat=50 if config.quick else 200)
    results.event_bytes = _event_bytes()
    results.sweep = _measure_sweep(config)
    results.load_after = load_average()
    results.finished_at = datetime.now(UTC)
    return results


def _measure_sweep(config: BenchConfig) -> SweepResult:
    from .sweep import measure_sweep

    _log(
        f"sweep: seeding {config.sweep_leases:,} leases in {config.sweep_groups} groups, "
        f"{config.sweep_due_fraction:.0%} due"
    )
    return measure_sweep(
        leases=config.sweep_leases,
        due_fraction=config.sweep_due_fraction,
        groups=config.sweep_groups,
        limit=config.sweep_limit,
        log=_log,
    )


def measure_sweep_only(config: BenchConfig, command: str) -> Results:
    """Section 6 alone, on a freshly reset database."""

    from .facts import load_average

    results = _fresh_results(config, command)
    results.sweep = _measure_sweep(config)
    results.load_after = load_average()
    results.finished_at = datetime.now(UTC)
    return results


def stream_section_only(
    section: str, config: BenchConfig, *, quick: bool, render_only: bool
) -> int:
    """``--only stream`` (section 7) or ``--only replay`` (section 8): measure (or load the
    saved figures), then replace only that section of the report."""
    from .replay import ReplayResult, measure_replay, replay_events
    from .stream import StreamResult, measure_stream, stream_plan
    from .stream_report import splice_replay, splice_stream

    command = f"python -m benchmarks.run --only {section}" + (" --quick" if quick else "")
    saved = ROOT / "var" / "benchmarks" / f"{section}{'-quick' if quick else ''}.json"
    result: StreamResult | ReplayResult
    if render_only:
        data = json.loads(saved.read_text())
        command = data["command"]
        loaded = StreamResult.from_dict if section == "stream" else ReplayResult.from_dict
        result = loaded(data[section])
    elif section == "stream":
        if not config.redis_url:
            raise SystemExit("--only stream measures the Redis channel layer: set BENCH_REDIS_URL")
        _fresh_results(config, command)  # reset and migrate the benchmark database
        result = measure_stream(config, stream_plan(quick=quick), log=_log)
    else:
        result = measure_replay(config, replay_events(quick=quick), log=_log)
    document = config.output.read_text() if config.output.exists() else "# Benchmarks\n"
    if isinstance(result, StreamResult):
        document = splice_stream(document, result, command)
    else:
        document = splice_replay(document, result, command)
    config.output.write_text(document)
    if not render_only:
        saved.parent.mkdir(parents=True, exist_ok=True)
        payload = {"command": command, section: result.as_dict()}
        saved.write_text(json.dumps(payload, indent=2, default=str) + "\n")
    _log(f"wrote section {7 if section == 'stream' else 8} of {config.output}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="tiny sizes: checks the wiring only")
    parser.add_argument(
        "--only",
        choices=["sweep", "stream", "replay"],
        help="measure this section alone and replace only it in the existing report",
    )
    parser.add_argument(
        "--render-only",
        action="store_true",
        help="with --only: measure nothing, render the section again from the figures "
        "the last run saved (after editing its benchmarks/*interpretation.md)",
    )
    args = parser.parse_args(argv)
    config = load_config(quick=args.quick)
    if args.only == "replay":  # its own database, kept between runs
        default = REPLAY_DATABASE_URL + ("_quick" if args.quick else "")  # never the big one
        replay_url = os.environ.get("BENCH_REPLAY_DATABASE_URL", default)
        config = dataclasses.replace(config, database_url=replay_url)
    _setup_django(config)

    from .report import render, splice_sweep
    from .results import Results

    config.output.parent.mkdir(parents=True, exist_ok=True)
    raw = ROOT / "var" / "benchmarks"
    if args.only == "sweep":
        command = "python -m benchmarks.run --only sweep" + (" --quick" if args.quick else "")
        saved = raw / ("sweep-quick.json" if args.quick else "sweep.json")
        if args.render_only:
            results = Results.load_sweep(saved, config)
            config.output.write_text(splice_sweep(config.output.read_text(), results))
            _log(f"rendered section 6 of {config.output} again from {saved}")
            return 0
        results = measure_sweep_only(config, command)
        if config.output.exists():
            config.output.write_text(splice_sweep(config.output.read_text(), results))
        else:
            config.output.write_text(render(results))
        results.dump(saved)
        _log(f"wrote section 6 of {config.output}")
        return 0
    if args.only in ("stream", "replay"):
        return stream_section_only(
            args.only, config, quick=args.quick, render_only=args.render_only
        )
    command = "python -m benchmarks.run --quick" if args.quick else "make bench"
    results = measure(config, command)
    document = render(results)
    if config.output.exists():
        from .stream_report import carry_over

        document = carry_over(config.output.read_text(), document)
    config.output.write_text(document)
    results.dump(raw / ("quick.json" if args.quick else "results.json"))
    _log(f"wrote {config.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
