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

``--only artifacts`` measures section 9 (a 100 MiB artifact uploaded and downloaded through
uvicorn, against ``sha256sum`` of the same file) in its own database
``BENCH_ARTIFACTS_DATABASE_URL`` (default ``mw_bench_artifacts``); raw figures go to
``var/benchmarks/artifacts.json``.

``--only dashboard`` measures section 10 (the dashboard's server time, in-process, with a
1,000-item mission in a 1,000,000-event group) in its own database
``BENCH_DASHBOARD_DATABASE_URL`` (default ``mw_bench_dashboard``), built once and reused
while it checks out; its artifacts go to ``var/benchmarks/dashboard-artifacts``; raw
figures to ``var/benchmarks/dashboard.json``.

``--only floor`` resets the database and measures issue 38's must-holds side by side in each
round: pgbench running the frozen floor (``benchmarks/pgbench/write_path_statements.sql``,
unchanged) at one client, the in-process write path and HTTP at one group and one client,
and ``commands:batch`` of 500 next to ``executemany`` of as many rows
(``benchmarks/frozen_floor.py``). It replaces only its block of the report and the
must-holds table; its raw figures go to ``var/benchmarks/floor.json``.

``--only profile`` times one client's ``submit_command`` loop on a fresh database and prints
its ``cProfile`` (``benchmarks/profile_submit.py``); it writes no report.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import os
import sys

import django

from .config import ROOT, BenchConfig, load_config

REPLAY_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/mw_bench_replay"
ARTIFACTS_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/mw_bench_artifacts"
DASHBOARD_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/mw_bench_dashboard"

#: the module that runs each choice of ``--only`` (``None``: the full run). Each imports the
#: project's models, which exist only once Django is set up for the database it measures, so
#: it is imported by name after ``django.setup()``; and ``--only X`` imports no other run.
RUNS = {
    None: "benchmarks.run_all",
    "sweep": "benchmarks.run_sweep",
    "stream": "benchmarks.run_stream",
    "replay": "benchmarks.run_stream",
    "artifacts": "benchmarks.artifacts",
    "dashboard": "benchmarks.dashboard",
    "profile": "benchmarks.profile_submit",
    "floor": "benchmarks.frozen_floor",
}


def _setup_django(config: BenchConfig) -> None:
    """Point this process at the benchmark database and Redis db, then start Django."""
    os.environ["DATABASE_URL"] = config.database_url
    os.environ["REDIS_URL"] = config.redis_url
    os.environ["CELERY_BROKER_URL"] = config.broker_url
    os.environ["DJANGO_SETTINGS_MODULE"] = "missionweave.settings"
    os.environ.setdefault("LOG_LEVEL", "ERROR")
    os.environ["MWP_CHANNEL_PREFIX"] = "mwp-bench"
    os.environ.pop("MWP_TEST_DB_NAME", None)
    django.setup()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="tiny sizes: checks the wiring only")
    parser.add_argument(
        "--only",
        choices=[name for name in RUNS if name is not None],
        help="measure this section alone and replace only it in the existing report",
    )
    parser.add_argument(
        "--render-only",
        action="store_true",
        help="with --only: measure nothing, render the section again from the figures "
        "the last run saved (after editing its benchmarks/*interpretation.md)",
    )
    args = parser.parse_args(argv)
    if args.render_only and args.only is None:  # it would measure everything instead
        parser.error("--render-only renders one section: give it --only <section>")
    config = load_config(quick=args.quick)
    if args.only == "replay":  # its own database, kept between runs
        default = REPLAY_DATABASE_URL + ("_quick" if args.quick else "")  # never the big one
        replay_url = os.environ.get("BENCH_REPLAY_DATABASE_URL", default)
        config = dataclasses.replace(config, database_url=replay_url)
    if args.only == "artifacts":  # its own database: it never resets the main benchmark's
        artifacts_url = os.environ.get("BENCH_ARTIFACTS_DATABASE_URL", ARTIFACTS_DATABASE_URL)
        config = dataclasses.replace(config, database_url=artifacts_url)
    if args.only == "dashboard":  # its own database, kept between runs, and artifact store
        default = DASHBOARD_DATABASE_URL + ("_quick" if args.quick else "")
        dashboard_url = os.environ.get("BENCH_DASHBOARD_DATABASE_URL", default)
        config = dataclasses.replace(config, database_url=dashboard_url)
        artifacts = ROOT / "var" / "benchmarks" / "dashboard-artifacts"
        os.environ.setdefault("MWP_ARTIFACT_DIR", str(artifacts))
    _setup_django(config)

    config.output.parent.mkdir(parents=True, exist_ok=True)
    return importlib.import_module(RUNS[args.only]).run(config, args)


if __name__ == "__main__":
    sys.exit(main())
