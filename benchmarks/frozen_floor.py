"""``--only floor``: issue 38's must-holds, the write path measured side by side with the
frozen floor.

The frozen floor is ``benchmarks/pgbench/write_path_statements.sql``: the eleven statements
one ``mission.create`` sent when the performance issue was blocked, run by pgbench unchanged
(never edited: it is the reference). Its text names group ``bench-g00`` and agent
``bench-a00``, so the run builds a world of one group and one agent on a freshly reset
database, and every figure writes into that group. Each round measures, back to back: the
ceiling (pgbench's gapless append), the frozen floor, the in-process write path, HTTP (one
uvicorn process, the product's pool), then ``executemany`` of 500 rows and ``commands:batch``
of 500 over HTTP. ``benchmarks.frozen_floor_figures`` takes the paired ratios.

The 16 groups × 16 clients must-hold is judged over the frozen floor at the same scale: the
frozen script once per group (``frozen_scripts``), each copy naming group ``bench-gNN`` and
agent ``bench-aNN`` where the frozen text names ``bench-g00`` and ``bench-a00`` and
otherwise unchanged, run by pgbench at 16 clients with each transaction's copy drawn at
random, as the HTTP load draws each command's group (``EnvelopePool``). The HTTP figure of
that scale is served by as many server processes as ``make bench`` starts (one per core).

The frozen script advances the real head (its ``UPDATE`` sets ``head_sequence`` to the next
one and a fixed hash), so the commands sent after it append at the real head, as they
would after any writer; the floor's missions and records have ids of their own.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.db import connection

from . import ceilings
from .config import ROOT, BenchConfig
from .facts import load_average
from .fresh import fresh_results, log
from .frozen_floor_figures import (
    AGENT,
    BATCH_SIZE,
    FLOOR_BEGIN,
    FLOOR_END,
    GROUP,
    WIDE,
    block,
    judge,
)
from .http_load import measure_http, measure_http_batch
from .inprocess import measure_inprocess
from .must_holds import splice_must_holds
from .servers import running_servers
from .splice import splice_block
from .stats import Measurement
from .world import BenchWorld, build_world

FROZEN_SCRIPT = ROOT / "benchmarks" / "pgbench" / "write_path_statements.sql"
#: where the frozen script's copies for the 16 × 16 floor are written for a run
COPIES = ROOT / "var" / "benchmarks" / "frozen"


def _analyze() -> None:
    """Fresh planner statistics before each round (``run_all._analyze`` says why)."""
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


def run_frozen_floor(url: str, *, seconds: float) -> Measurement:
    """pgbench running the frozen script as it is, at one client."""
    return ceilings.pgbench(
        url, ["-f", str(FROZEN_SCRIPT)], clients=1, groups=1, seconds=seconds, name="frozen_floor"
    )


def frozen_scripts(directory: Path, groups: int) -> list[Path]:
    """The frozen script once per group in ``directory``: copy ``NN`` names group
    ``bench-gNN`` and agent ``bench-aNN`` wherever the frozen text names ``bench-g00`` and
    ``bench-a00``; nothing else differs, and the frozen file itself is never written."""
    directory.mkdir(parents=True, exist_ok=True)
    text = FROZEN_SCRIPT.read_text()
    copies = []
    for index in range(groups):
        copy = directory / f"frozen-{index:02d}.sql"
        named = text.replace(GROUP, f"bench-g{index:02d}").replace(AGENT, f"bench-a{index:02d}")
        copy.write_text(named)
        copies.append(copy)
    return copies


def run_frozen_floor_wide(url: str, copies: list[Path], *, seconds: float) -> Measurement:
    """pgbench at one client per copy, each transaction's copy (so its group) drawn at
    random, as ``benchmarks.floor.run_floor`` runs the captured floor."""
    arguments = [arg for copy in copies for arg in ("-f", f"{copy}@1")]
    return ceilings.pgbench(
        url,
        arguments,
        clients=len(copies),
        groups=len(copies),
        seconds=seconds,
        name="frozen_floor_16x16",
    )


def _round(
    config: BenchConfig,
    world: BenchWorld,
    urls: list[str],
    wide_urls: list[str],
    copies: list[Path],
) -> dict[str, float]:
    """One round's rates, by figure, each measured right after the one before."""
    _analyze()
    url = config.database_url
    measured = {
        "pgbench": ceilings.run_pgbench(url, clients=1, groups=1, seconds=config.seconds),
        "frozen_floor": run_frozen_floor(url, seconds=config.seconds),
        "inprocess": measure_inprocess(world, clients=1, groups=1, config=config),
        "http": measure_http(world, urls, clients=1, groups=1, config=config),
        "frozen_floor_16x16": run_frozen_floor_wide(url, copies, seconds=config.seconds),
        "http_16x16": measure_http(
            world, wide_urls, clients=WIDE, groups=WIDE, config=config, name="http_16x16"
        ),
        "executemany": ceilings.run_executemany(url, batch_size=BATCH_SIZE, seconds=config.seconds),
        "batch": measure_http_batch(world, urls, size=BATCH_SIZE, config=config),
    }
    for name, measurement in measured.items():
        if measurement.notes:
            log(f"{name}: {'; '.join(measurement.notes)}")
    return {name: measurement.rate for name, measurement in measured.items()}


def measure(config: BenchConfig, command: str, *, wide_servers: int) -> dict[str, Any]:
    """Every round's rates on a fresh database, with the run's facts.

    ``config.servers`` (one) serve the 1 × 1 figures; the 16 × 16 one has ``wide_servers``
    of its own, as many as ``make bench`` starts, idle while the others are measured."""
    results = fresh_results(config, command)
    world = build_world(groups=WIDE, agents=WIDE)
    if (world.groups[0], world.agents[0].principal) != (GROUP, f"agent:{AGENT}"):
        raise RuntimeError(f"the frozen script writes into {GROUP} as {AGENT}: {world!r}")
    ceilings.run_pgbench(config.database_url, clients=1, groups=1, seconds=1)  # settle
    rounds = []
    copies = frozen_scripts(COPIES, WIDE)
    wide = dataclasses.replace(config, servers=wide_servers)
    with (
        running_servers(config, pool=True) as urls,
        running_servers(wide, pool=True, first_index=config.servers) as wide_urls,
    ):
        for index in range(config.rounds):
            rates = _round(config, world, urls, wide_urls, copies)
            rounds.append(rates)
            log(
                f"round {index + 1}: "
                + ", ".join(f"{name} {rate:,.0f}/s" for name, rate in rates.items())
                + f" (load {os.getloadavg()[0]:.1f})"
            )
    return {
        "command": command,
        "started_at": results.started_at.isoformat(),
        "finished_at": datetime.now(UTC).isoformat(),
        "facts": results.facts,
        "load_before": results.load_before,
        "load_after": load_average(),
        "seconds": config.seconds,
        "rounds": rounds,
    }


def _write_report(config: BenchConfig, figures: dict[str, Any]) -> None:
    """The block of ``figures`` (what :func:`measure` returned, or ``floor.json``) into the
    report, and the must-holds table rendered again from it."""
    when = f"{figures['started_at'][:16].replace('T', ' ')} UTC"
    text = block(figures["rounds"], when=when, command=figures["command"])
    if config.output.exists():  # replace the block (or add it) and the table it feeds
        old = config.output.read_text()
        text = splice_must_holds(splice_block(old, FLOOR_BEGIN, FLOOR_END, text))
    config.output.write_text(text)


def run(config: BenchConfig, args: argparse.Namespace) -> int:
    command = "python -m benchmarks.run --only floor" + (" --quick" if args.quick else "")
    saved = ROOT / "var" / "benchmarks" / ("floor-quick.json" if args.quick else "floor.json")
    if args.render_only:
        _write_report(config, json.loads(saved.read_text()))
        log(f"rendered the frozen floor's block of {config.output} again from {saved}")
        return 0
    # one server process for the 1 × 1 figures: a second would only take CPU from the one
    # that serves the client; the 16 × 16 figure keeps make bench's (``measure``)
    wide_servers = config.servers
    config = dataclasses.replace(config, servers=1)
    figures = measure(config, command, wide_servers=wide_servers)
    saved.parent.mkdir(parents=True, exist_ok=True)
    saved.write_text(json.dumps(figures, indent=2) + "\n")
    _write_report(config, figures)
    for judged in judge(figures["rounds"]):
        log(f"{judged.ratio.text}: {judged.latest} ({judged.verdict})")
    log(f"wrote {saved} and the frozen floor's block of {config.output}")
    return 0
