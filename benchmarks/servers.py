"""Real ASGI server processes serving the benchmark database: the production server by
default (``config.server``), or any other kind the comparison in docs/deploy.md measured.

Under ASGI Django runs each request's sync code (middleware, DRF view, write path) in a
thread of that request's own (``ThreadSensitiveContext``), so one process serves requests
concurrently, but all its Python shares one GIL: on two cores the harness starts several
processes and spreads the clients over them. A new thread per request also means a new
database connection per request (connections are per thread) unless the settings give a
connection pool, which they do by default on PostgreSQL; ``pool=False`` starts the servers
with ``MWP_DB_POOL=0`` to measure what the pool buys.

Each process listens on a port of its own and the clients are dealt round-robin over them
(a load balancer's job in a deployment), so every process carries the same share whatever
the kernel would have done with one shared listening socket. ``workers`` > 1 starts the
server's own multi-process mode instead (one port, ``--workers``), the way the production
command line in docs/deploy.md runs it.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import httpx

from missionweave.production_server import APPLICATION, UVICORN_PROTOCOL_FLAGS

from .config import ROOT, BenchConfig

SECRET_KEY = "benchmark-only-secret-key-not-for-production-0123456789"
READY_TIMEOUT_S = 30.0
HOST = "127.0.0.1"


def _executable(name: str) -> str:
    """A console script of this interpreter's environment (the servers run its packages)."""
    return str(Path(sys.executable).with_name(name))


def _daphne(port: int, workers: int) -> list[str]:
    if workers != 1:
        raise ValueError("daphne has no multi-process mode: start one process per port")
    return [_executable("daphne"), "-b", HOST, "-p", str(port), "-v", "0", APPLICATION]


def _bind(port: int, workers: int) -> list[str]:
    """Where uvicorn and granian listen, with how many processes, on uvloop (same flags)."""
    return ["--host", HOST, "--port", str(port), "--workers", str(workers), "--loop", "uvloop"]


def _uvicorn(port: int, workers: int) -> list[str]:
    # uvloop and httptools are the C event loop and HTTP parser (the pure-Python defaults cost
    # CPU the GIL-bound write path needs); the protocol flags are production's, httptools'
    # protocol among them (missionweave.production_server says why each).
    return [
        _executable("uvicorn"),
        *_bind(port, workers),
        *UVICORN_PROTOCOL_FLAGS,
        "--log-level",
        "warning",
        APPLICATION,
    ]


def _granian(port: int, workers: int) -> list[str]:
    # asginl: ASGI without the lifespan protocol, for the same reason as uvicorn's flag.
    return [
        _executable("granian"),
        "--interface",
        "asginl",
        *_bind(port, workers),
        "--log-level",
        "warning",
        APPLICATION,
    ]


#: the command line of each server kind, given its port and its workers on that port
SERVER_COMMANDS: dict[str, Callable[[int, int], list[str]]] = {
    "daphne": _daphne,
    "uvicorn": _uvicorn,
    "granian": _granian,
}
#: the distributions behind each kind, whose versions the report names
SERVER_PACKAGES = {
    "daphne": ("daphne", "twisted"),
    "uvicorn": ("uvicorn", "uvloop", "httptools"),
    "granian": ("granian", "uvloop"),
}


def server_command(kind: str, *, port: int, workers: int = 1) -> list[str]:
    """The command line of one ``kind`` server on ``port`` with ``workers`` processes."""
    if kind not in SERVER_COMMANDS:
        raise ValueError(f"unknown server kind {kind!r}; one of {', '.join(SERVER_COMMANDS)}")
    return SERVER_COMMANDS[kind](port, workers)


def describe_server(kind: str, *, processes: int, workers: int = 1) -> str:
    """What the report says served the HTTP figures, e.g. ``uvicorn 0.55.0 (uvloop 0.23.0,
    httptools 0.9.0), 2 processes on 2 ports`` — read from the installed packages."""
    versions = []
    for package in SERVER_PACKAGES.get(kind, (kind,)):
        try:
            versions.append(f"{package} {importlib.metadata.version(package)}")
        except importlib.metadata.PackageNotFoundError:
            versions.append(f"{package} (not installed)")
    head, *rest = versions
    software = f"{head} ({', '.join(rest)})" if rest else head
    if workers > 1:
        layout = f"{workers} worker processes on one port (--workers {workers})"
    else:
        layout = f"{processes} process(es), one port each"
    return f"{software}, {layout}"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def server_environment(config: BenchConfig, *, pool: bool) -> dict[str, str]:
    """The product's settings module; only the database and the pool switch differ."""
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "missionweave.settings",
        "MWP_DB_POOL": "1" if pool else "0",
        "DATABASE_URL": config.database_url,
        "REDIS_URL": config.redis_url,
        "CELERY_BROKER_URL": config.broker_url,
        "DEBUG": "0",
        "SECRET_KEY": SECRET_KEY,
        "LOG_LEVEL": "ERROR",
        "DB_CONN_MAX_AGE": str(config.conn_max_age),
        "MWP_CHANNEL_PREFIX": "mwp-bench",
    }


def describe_pool(config: BenchConfig, *, pool: bool) -> str:
    """The connection pool the servers' settings resolve to, asked of a process with exactly
    their environment (the settings module owns the defaults; this does not repeat them)."""
    script = (
        "import json; from django.conf import settings; "
        "print(json.dumps(settings.DATABASES['default'].get('OPTIONS', {}).get('pool')))"
    )
    completed = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=server_environment(config, pool=pool),
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        return "? (could not read the servers' settings)"
    return describe_pool_options(json.loads(completed.stdout))


def describe_pool_options(options: object) -> str:
    if not options:
        return "no pool"
    if isinstance(options, dict):
        return f"psycopg pool, max_size {options.get('max_size', '?')}"
    return "psycopg pool"


def _wait_ready(base_url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server at {base_url} exited early; see {log}")
        with suppress(httpx.HTTPError):
            if httpx.get(f"{base_url}/api/v1/authority", timeout=1.0).status_code == 200:
                return
        time.sleep(0.1)
    raise RuntimeError(f"{base_url} did not answer within {READY_TIMEOUT_S}s; see {log}")


def _stop(processes: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM every server (a multi-worker one stops its workers), then SIGKILL laggards."""
    for process in processes:
        process.terminate()
    for process in processes:
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def running_servers(
    config: BenchConfig,
    *,
    pool: bool = True,
    first_index: int = 0,
    kind: str | None = None,
    workers: int = 1,
) -> Iterator[list[str]]:
    """Start ``config.servers`` servers of ``kind`` (default ``config.server``), each with
    ``workers`` processes on its port; yield their base URLs; stop them."""
    kind = kind or config.server
    log_dir = ROOT / "var" / "benchmarks"
    log_dir.mkdir(parents=True, exist_ok=True)
    env = server_environment(config, pool=pool)
    processes: list[subprocess.Popen[bytes]] = []
    urls: list[str] = []
    try:
        for index in range(first_index, first_index + config.servers):
            port = config.base_port + index if config.base_port else _free_port()
            log = log_dir / f"{kind}-{index}.log"
            with log.open("wb") as sink:
                processes.append(
                    subprocess.Popen(
                        server_command(kind, port=port, workers=workers),
                        cwd=ROOT,
                        env=env,
                        stdout=sink,
                        stderr=subprocess.STDOUT,
                    )
                )
            urls.append(f"http://{HOST}:{port}")
            _wait_ready(urls[-1], processes[-1], log)
        yield urls
    finally:
        _stop(processes)
