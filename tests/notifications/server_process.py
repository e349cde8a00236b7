"""Starting a test's helper server as a process of its own (the hook receiver, the SMTP
sink: issue 36; R10.2-06) and stopping it again: one way to wait until it listens and to
clean up, so that every real-part test gets the same guarantees."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO

BASE_DIR = Path(__file__).resolve().parents[2]
START_S = 15.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def server_process(
    command: Sequence[str], port: int, *, name: str, stdout: int | IO[bytes] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """Run ``command`` from the repository root until the block exits; yield once it accepts
    connections on ``port``. A server that exits or does not listen within ``START_S``
    fails with its stderr (``name`` says which server in the message)."""
    process = subprocess.Popen(command, cwd=BASE_DIR, stdout=stdout, stderr=subprocess.PIPE)
    try:
        _wait_until_listening(process, port, name)
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


def _wait_until_listening(process: subprocess.Popen[bytes], port: int, name: str) -> None:
    deadline = time.monotonic() + START_S
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                stderr = process.stderr.read() if process.stderr else b""
                raise RuntimeError(f"the {name} did not start: {stderr!r}") from None
            time.sleep(0.05)
