"""The full run (``make bench``): every (groups, clients) cell, batches, the per-step
breakdown and the sweep, then the whole report; sections 7 to 11 are carried over from the
last ``--only stream`` / ``replay`` / ``artifacts`` / ``dashboard`` run and from
``benchmarks.worker_scheduler --write``, and the frozen floor's block from the last ``--only
floor`` run; the must-holds table is rendered last, from the whole
report (``make bench`` prints it last: ``python -m benchmarks.must_holds``)."""

from __future__ import annotations

import argparse
import os
from contextlib import ExitStack
from datetime import UTC, datetime

from django.db import connection
from django.db.models import Avg
from django.db.models.functions import Length

from apps.ledger.models import Event

from . import ceilings, floor
from .breakdown import measure_breakdown
from .config import ROOT, BenchConfig
from .dashboard_report import carry_over_dashboard
from .facts import load_average
from .fresh import fresh_results, log
from .frozen_floor_figures import FLOOR_BEGIN, FLOOR_END
from .http_load import measure_http, measure_http_batch
from .inprocess import measure_inprocess
from .must_holds import splice_must_holds
from .report import render
from .results import Results
from .rounds import collapse, tag
from .run_sweep import measure_sweep_section
from .servers import describe_pool, describe_server, running_servers
from .splice import SCHEDULER_BEGIN, SCHEDULER_END, carry_over_block
from .stream_report import carry_over
from .world import BenchWorld, build_world

#: the floor's pgbench scripts of the last run, kept to be read or run again by hand
FLOOR_SCRIPTS = ROOT / "var" / "benchmarks" / "floor"


def _event_bytes() -> float:
    average = Event.objects.filter(type="mission.created").aggregate(size=Avg(Length("document")))[
        "size"
    ]
    return float(average or 0)


def _settle(config: BenchConfig) -> None:
    """One untimed pgbench second to warm PostgreSQL's caches before the first cell (each
    cell starts with fresh planner statistics, ``_analyze``)."""
    ceilings.run_pgbench(config.database_url, clients=4, groups=config.max_groups, seconds=1)


def _analyze() -> None:
    """Fresh planner statistics, as autovacuum keeps them on a production server. Where it is
    off (this machine's PostgreSQL), the statistics of a table that grew from a few rows
    mislead the planner: in the 2026-12-04 run a group's ``work_mission`` read by
    ``(group_id, mission_id)`` walked the group's primary-key range (7 ms, not 0.06 ms) once
    the floor had added thousands of missions, and every 16-group cell fell round by round."""
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


def _measure_cell(
    results: Results,
    config: BenchConfig,
    world: BenchWorld,
    urls: list[str],
    unpooled_urls: list[str],
    groups: int,
    clients: int,
    round_: int,
) -> None:
    """One (groups, clients) cell of one round: the ceiling, the floor and the server's
    figures, back to back, on fresh planner statistics."""
    _analyze()
    results.pgbench.append(
        tag(
            ceilings.run_pgbench(
                config.database_url, clients=clients, groups=groups, seconds=config.seconds
            ),
            round_,
        )
    )
    results.floor.append(
        tag(
            floor.run_floor(
                config.database_url,
                FLOOR_SCRIPTS,
                clients=clients,
                groups=groups,
                seconds=config.seconds,
            ),
            round_,
        )
    )
    results.inprocess.append(
        tag(measure_inprocess(world, clients=clients, groups=groups, config=config), round_)
    )
    results.http.append(
        tag(measure_http(world, urls, clients=clients, groups=groups, config=config), round_)
    )
    line = (
        f"round {round_ + 1}, {groups} group(s), {clients} client(s): "
        f"pgbench {results.pgbench[-1].rate:.0f}/s, floor {results.floor[-1].rate:.0f}/s, "
        f"in-process {results.inprocess[-1].rate:.0f}/s, http {results.http[-1].rate:.0f}/s"
    )
    if unpooled_urls:
        results.http_no_pool.append(
            tag(
                measure_http(
                    world,
                    unpooled_urls,
                    clients=clients,
                    groups=groups,
                    config=config,
                    name="http_no_pool",
                ),
                round_,
            )
        )
        line += f", http without pool {results.http_no_pool[-1].rate:.0f}/s"
    results.loads[f"{groups}/{clients}"] = os.getloadavg()[0]
    log(f"{line} (load {results.loads[f'{groups}/{clients}']:.1f})")


def _measure_batches(
    results: Results, config: BenchConfig, world: BenchWorld, urls: list[str], round_: int
) -> None:
    for size in config.batch_sizes:
        results.executemany.append(
            tag(
                ceilings.run_executemany(
                    config.database_url, batch_size=size, seconds=config.seconds
                ),
                round_,
            )
        )
        results.batch.append(tag(measure_http_batch(world, urls, size=size, config=config), round_))
        results.loads[f"batch/{size}"] = os.getloadavg()[0]
        log(
            f"round {round_ + 1}, batch {size}: "
            f"executemany {results.executemany[-1].rate:.0f} rows/s, "
            f"commands:batch {results.batch[-1].rate:.0f} events/s"
        )


def measure(config: BenchConfig, command: str) -> Results:
    """Run every section; return the :class:`~benchmarks.results.Results`."""
    results = fresh_results(config, command)
    results.facts["server_db_pool"] = describe_pool(config, pool=True)
    results.facts["server"] = describe_server(config.server, processes=config.servers)
    world = build_world(groups=config.max_groups, agents=config.max_clients)
    log(f"{len(world.groups)} groups, {len(world.agents)} agents with sessions")
    floor.write_scripts(floor.capture(world), world.groups, FLOOR_SCRIPTS)
    _settle(config)

    with ExitStack() as servers:
        urls = servers.enter_context(running_servers(config, pool=True))
        unpooled_urls: list[str] = []
        if config.pool_variant:
            unpooled_urls = servers.enter_context(
                running_servers(config, pool=False, first_index=config.servers)
            )
        log(
            f"{results.facts['server']} at {', '.join(urls)}; "
            f"without a pool at {', '.join(unpooled_urls) or '-'}"
        )
        for round_ in range(config.rounds):
            for groups in config.groups:
                for clients in config.clients:
                    _measure_cell(
                        results, config, world, urls, unpooled_urls, groups, clients, round_
                    )
            _measure_batches(results, config, world, urls, round_)
    results.breakdown = measure_breakdown(world, repeat=50 if config.quick else 200)
    results.event_bytes = _event_bytes()
    results.sweep = measure_sweep_section(config)
    results.load_after = load_average()
    results.finished_at = datetime.now(UTC)
    return results


def run(config: BenchConfig, args: argparse.Namespace) -> int:
    command = "python -m benchmarks.run --quick" if args.quick else "make bench"
    results = measure(config, command)
    document = render(collapse(results))
    if config.output.exists():
        old = config.output.read_text()
        document = carry_over_dashboard(old, carry_over(old, document))
        document = carry_over_block(old, document, SCHEDULER_BEGIN, SCHEDULER_END)
        document = carry_over_block(old, document, FLOOR_BEGIN, FLOOR_END)
    document = splice_must_holds(document)
    config.output.write_text(document)
    results.dump(ROOT / "var" / "benchmarks" / ("quick.json" if args.quick else "results.json"))
    log(f"wrote {config.output}")
    return 0
