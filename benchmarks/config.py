"""What a benchmark run measures and for how long, from the environment and ``--quick``.

Every knob has an environment variable so ``make bench`` stays one command:
``BENCH_DATABASE_URL``, ``BENCH_REDIS_URL``, ``BENCH_SECONDS``, ``BENCH_WARMUP_SECONDS``,
``BENCH_SERVER``, ``BENCH_SERVERS``, ``BENCH_PORT``, ``BENCH_DB_CONN_MAX_AGE``,
``BENCH_POOL_VARIANT`` (0 skips the HTTP-without-pool table), ``BENCH_OUTPUT``,
``BENCH_ROUNDS`` (3: sections 1–5 report the median of 3 rounds); for the lease
sweep ``BENCH_SWEEP_LEASES``, ``BENCH_SWEEP_GROUPS``, ``BENCH_SWEEP_LIMIT``.

The HTTP figures come from the production server as deployed (docs/deploy.md, issue 15 §5):
uvicorn, one process per core.

The servers always run ``missionweave.settings``, whose PostgreSQL default is Django's psycopg
connection pool (``MWP_DB_POOL``, ``MWP_DB_POOL_MAX``): the main HTTP table measures that
default, the variant the same servers started with ``MWP_DB_POOL=0``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/mw_bench"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/5"


@dataclass(frozen=True)
class BenchConfig:
    database_url: str
    redis_url: str
    seconds: float  # length of each timed scenario
    warmup_seconds: float  # untimed run before each scenario; also sizes the pre-signed pool
    clients: tuple[int, ...]  # concurrent clients (threads) per scenario
    groups: tuple[int, ...]  # how many groups the commands are spread over
    batch_sizes: tuple[int, ...]  # commands per commands:batch request
    server: str  # the ASGI server kind (benchmarks/servers.py); the default is production's
    servers: int  # server processes the HTTP clients are spread over
    base_port: int
    conn_max_age: int  # DB_CONN_MAX_AGE of the servers without a pool (a pool forces 0)
    pool_variant: bool  # also measure HTTP with MWP_DB_POOL=0, next to the default servers
    output: Path
    quick: bool
    sweep_leases: int = 100_000  # active leases seeded for the sweep benchmark
    sweep_due_fraction: float = 0.1  # of which due
    sweep_groups: int = 10
    sweep_limit: int = 1000  # sweep_due(limit=...), the product's default
    rounds: int = 1  # times each cell and batch size is measured; the report takes medians

    @property
    def broker_url(self) -> str:
        """Where the write path's after-commit hints go during a run: the bench's own Redis
        db, else kombu's in-process ``memory://``. Never the product's default, the
        filesystem broker under ``var/celery``: a ``make demo`` on this checkout reads that
        folder, and its worker then produced for groups its database does not hold."""
        return self.redis_url or "memory://"

    @property
    def max_clients(self) -> int:
        return max(self.clients)

    @property
    def max_groups(self) -> int:
        return max(self.groups)


def _float(name: str, default: float) -> float:
    return float(os.environ.get(name, str(default)))


def _int(name: str, default: int) -> int:
    return int(os.environ.get(name, str(default)))


def _cores() -> int:
    return len(os.sched_getaffinity(0))


def load_config(*, quick: bool = False) -> BenchConfig:
    """The full run (about ten minutes on two cores: three rounds of every cell), or a tiny
    one that only checks wiring."""
    return BenchConfig(
        database_url=os.environ.get("BENCH_DATABASE_URL", DEFAULT_DATABASE_URL),
        redis_url=os.environ.get("BENCH_REDIS_URL", DEFAULT_REDIS_URL),
        seconds=_float("BENCH_SECONDS", 0.5 if quick else 5.0),
        warmup_seconds=_float("BENCH_WARMUP_SECONDS", 0.2 if quick else 1.0),
        clients=(1, 2) if quick else (1, 4, 16),
        groups=(1, 2) if quick else (1, 16),
        batch_sizes=(10,) if quick else (100, 500),
        server=os.environ.get("BENCH_SERVER", "uvicorn"),
        # one per core, as deployed: two per core measured no faster (docs/deploy.md)
        servers=_int("BENCH_SERVERS", 1 if quick else _cores()),
        base_port=_int("BENCH_PORT", 0),  # 0: a free port per server
        # Django under ASGI runs each request's sync code in a thread of its own, so a persistent
        # connection (CONN_MAX_AGE > 0) is never reused and leaks until garbage collection.
        conn_max_age=_int("BENCH_DB_CONN_MAX_AGE", 0),
        pool_variant=os.environ.get("BENCH_POOL_VARIANT", "1") == "1",
        # A quick run only proves the wiring: it never overwrites the published numbers.
        output=Path(
            os.environ.get(
                "BENCH_OUTPUT",
                ROOT / "var" / "benchmarks-quick.md" if quick else ROOT / "docs" / "benchmarks.md",
            )
        ),
        quick=quick,
        sweep_leases=_int("BENCH_SWEEP_LEASES", 2_000 if quick else 100_000),
        sweep_groups=_int("BENCH_SWEEP_GROUPS", 10),
        sweep_limit=_int("BENCH_SWEEP_LIMIT", 1000),
        rounds=_int("BENCH_ROUNDS", 1 if quick else 3),
    )
