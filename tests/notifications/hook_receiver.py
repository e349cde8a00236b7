"""A real HTTP server process for the hook tests: each request it receives is written, whole
(method, path, headers, body), as a JSON file in a folder; it answers 500 to the first N
requests and 200 after.

Run as::

    python -m tests.notifications.hook_receiver <folder> <port> [<fail first N>]

``Receiver`` (below) starts one for a test and reads what it got.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from tests.notifications.server_process import free_port, server_process


def serve(folder: Path, port: int, fail_first: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    counter = itertools.count(1)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with lock:
                number = next(counter)
            status = 500 if number <= fail_first else 200
            record = {
                "number": number,
                "method": self.command,
                "path": self.path,
                "headers": dict(self.headers.items()),
                "body": base64.b64encode(body).decode(),
                "answered": status,
            }
            partial = folder / f".{number:04d}.tmp"
            partial.write_text(json.dumps(record))
            os.replace(partial, folder / f"{number:04d}.json")
            self.send_response(status)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            self.wfile.write(b"try again later" if status == 500 else b"ok")

        def log_message(self, *args: object) -> None:
            pass

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


@dataclass(frozen=True)
class Request:
    number: int
    path: str
    headers: dict[str, str]
    body: bytes
    answered: int

    def header(self, name: str) -> str:
        lowered = {k.lower(): v for k, v in self.headers.items()}
        return lowered.get(name.lower(), "")

    def json(self) -> dict:
        return json.loads(self.body)


@dataclass
class Receiver:
    folder: Path
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def requests(self) -> list[Request]:
        found = []
        for path in sorted(self.folder.glob("*.json")):
            raw = json.loads(path.read_text())
            found.append(
                Request(
                    number=raw["number"],
                    path=raw["path"],
                    headers=raw["headers"],
                    body=base64.b64decode(raw["body"]),
                    answered=raw["answered"],
                )
            )
        return found

    def wait_for(self, count: int, *, timeout: float = 30.0) -> list[Request]:
        deadline = time.monotonic() + timeout
        while len(found := self.requests()) < count and time.monotonic() < deadline:
            time.sleep(0.1)
        return found


@contextmanager
def receiver(folder: Path, *, fail_first: int = 0) -> Iterator[Receiver]:
    """Run the receiver as a process of its own until the block exits."""
    port = free_port()
    command = [
        sys.executable, "-m", "tests.notifications.hook_receiver",
        str(folder), str(port), str(fail_first),
    ]  # fmt: skip
    with server_process(command, port, name="receiver"):
        yield Receiver(folder=folder, port=port)


if __name__ == "__main__":
    serve(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 0)
