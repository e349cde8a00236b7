"""A Redis server of the test's own, to stop and start on purpose.

The suite's Redis (127.0.0.1:6379) carries both xdist workers' channel layers and Celery
brokers; a fault test that takes Redis away runs ``redis-server`` on a free port instead,
keeping nothing on disk (as the deployed one: hints and queued tasks are not the log), and
stops and starts that one on the same port.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import redis

from tests.faults.private_postgres import free_port

START_TIMEOUT_S = 10.0


@dataclass
class PrivateRedis:
    port: int
    folder: Path
    process: subprocess.Popen | None = field(default=None)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        command = [
            shutil.which("redis-server") or "redis-server",
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(self.folder),
        ]
        with (self.folder / "redis.log").open("ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self.answers():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not start:\n{self.log()}")
            time.sleep(0.02)

    def stop(self) -> None:
        """SIGKILL: Redis gone at once, every connection to it cut."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        self.process = None

    def answers(self) -> bool:
        try:
            return bool(redis.Redis(port=self.port, socket_timeout=0.5).ping())
        except redis.RedisError:
            return False

    def log(self) -> str:
        path = self.folder / "redis.log"
        return path.read_text(errors="replace") if path.exists() else ""


@contextmanager
def private_redis() -> Iterator[PrivateRedis]:
    server = PrivateRedis(port=free_port(), folder=Path(tempfile.mkdtemp(prefix="mwp-redis-")))
    try:
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(server.folder, ignore_errors=True)
