"""``manage.py demo`` as a process of its own, for the tests that watch the whole
organisation run (issue 14 §8, issue 36 §5; R10.2-06): on its own SQLite file under the
test's folder (the test servers' PostgreSQL and Redis are not passed on), agents at a quick
pace, stopped by SIGTERM however the test ends."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: how long a demo has to exit after SIGTERM (it stops every agent first)
STOP_S = 90


@dataclass(frozen=True)
class LaunchedDemo:
    base: str
    process: subprocess.Popen[str]
    log_path: Path
    env: dict[str, str]

    def output(self) -> str:
        return self.log_path.read_text()

    def token(self) -> str:
        """The API token the demo's banner prints, or "" while it has not printed it."""
        match = re.search(r"API token: +(\S+)", self.output())
        return match.group(1) if match else ""

    def manage(self, *args: str) -> None:
        """Run a ``manage.py`` command on the demo's own database (raises if it fails)."""
        _manage(self.env, *args)


def _manage(env: dict[str, str], *args: str) -> None:
    command = [sys.executable, "manage.py", *args]
    subprocess.run(command, cwd=ROOT, env=env, check=True, timeout=300)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def launched_demo(tmp_path: Path) -> Iterator[LaunchedDemo]:
    """Migrate a fresh database under ``tmp_path``, start the demo on a free port and yield
    at once (the caller waits for what it needs); SIGTERM and wait when the block exits."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL")
    }
    env |= {"MWP_VAR_DIR": str(tmp_path / "var"), "MWP_DEMO_STEP_S": "0.2"}
    _manage(env, "migrate", "-v", "0")
    port = _free_port()
    command = [sys.executable, "manage.py", "demo", "--port", str(port), "--interval", "0.5"]
    log_path = tmp_path / "demo.log"
    with log_path.open("w+") as log:
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, text=True
        )
    try:
        yield LaunchedDemo(f"http://127.0.0.1:{port}", process, log_path, env)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=STOP_S)
