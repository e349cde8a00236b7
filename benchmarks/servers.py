"""Real ASGI server processes (daphne) serving the benchmark database.

Under ASGI Django runs each request's sync code (middleware, DRF view, write path) in a
thread of that request's own (``ThreadSensitiveContext``), so one process serves requests
concurrently, but all its Python shares one GIL: on two cores the harness starts two
processes and spreads the clients over them. A new thread per request also means a new
database connection per request (connections are per thread) unless the settings give a
connection pool, which they do by default on PostgreSQL; ``pool=False`` starts the servers
with ``MWP_DB_POOL=0`` to measure what the pool buys.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import httpx

from .config import ROOT, BenchConfig

SECRET_KEY = "benchmark-only-secret-key-not-for-production-0123456789"
READY_TIMEOUT_S = 30.0


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def server_environment(config: BenchConfig, *, pool: bool) -> dict[str, str]:
    """The product's settings module; only the database and the pool switch differ."""
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "missionweave.settings",
        "MWP_DB_POOL": "1" if pool else "0",
        "DATABASE_URL": config.database_url,
        "REDIS_URL": config.redis_url,
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
            raise RuntimeError(f"daphne exited early; see {log}")
        with suppress(httpx.HTTPError):
            if httpx.get(f"{base_url}/api/v1/authority", timeout=1.0).status_code == 200:
                return
        time.sleep(0.1)
    raise RuntimeError(f"daphne at {base_url} did not answer within {READY_TIMEOUT_S}s; see {log}")


@contextmanager
def running_servers(
    config: BenchConfig, *, pool: bool = True, first_index: int = 0
) -> Iterator[list[str]]:
    """Start ``config.servers`` daphne processes; yield their base URLs; stop them."""
    log_dir = ROOT / "var" / "benchmarks"
    log_dir.mkdir(parents=True, exist_ok=True)
    daphne = Path(sys.executable).with_name("daphne")
    env = server_environment(config, pool=pool)
    processes: list[subprocess.Popen[bytes]] = []
    urls: list[str] = []
    try:
        for index in range(first_index, first_index + config.servers):
            port = config.base_port + index if config.base_port else _free_port()
            log = log_dir / f"daphne-{index}.log"
            with log.open("wb") as sink:
                processes.append(
                    subprocess.Popen(
                        [
                            str(daphne),
                            "-b",
                            "127.0.0.1",
                            "-p",
                            str(port),
                            "-v",
                            "0",
                            "missionweave.asgi:application",
                        ],
                        cwd=ROOT,
                        env=env,
                        stdout=sink,
                        stderr=subprocess.STDOUT,
                    )
                )
            urls.append(f"http://127.0.0.1:{port}")
            _wait_ready(urls[-1], processes[-1], log)
        yield urls
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
