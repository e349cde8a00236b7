"""A real SMTP server process for tests (aiosmtpd, ``smtp_sink``), and reading what it got."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from email import message_from_bytes, policy
from email.message import EmailMessage
from pathlib import Path

from tests.notifications.server_process import free_port, server_process


@dataclass
class Mailbox:
    folder: Path
    port: int
    process: subprocess.Popen

    @property
    def url(self) -> str:
        return f"smtp://127.0.0.1:{self.port}"

    def messages(self) -> list[EmailMessage]:
        return [
            message_from_bytes(path.read_bytes(), policy=policy.default)  # type: ignore[misc]
            for path in sorted(self.folder.glob("*.eml"))
        ]

    def refused(self) -> int:
        return len(list(self.folder.glob("refused-*")))

    def to(self, address: str) -> list[EmailMessage]:
        return [m for m in self.messages() if address in str(m["To"])]

    def wait_for(
        self, count: int, *, timeout: float = 20.0, address: str | None = None
    ) -> list[EmailMessage]:
        deadline = time.monotonic() + timeout
        while True:
            found = self.to(address) if address else self.messages()
            if len(found) >= count or time.monotonic() > deadline:
                return found
            time.sleep(0.1)


@contextmanager
def smtp_server(folder: Path, *, refuse_first: int = 0) -> Iterator[Mailbox]:
    """Run ``python -m aiosmtpd`` with the folder handler until the block exits."""
    port = free_port()
    command = [
        sys.executable, "-m", "aiosmtpd", "-n", "-l", f"127.0.0.1:{port}",
        "-c", "tests.notifications.smtp_sink.FolderHandler", str(folder), str(refuse_first),
    ]  # fmt: skip
    with server_process(command, port, name="SMTP server", stdout=subprocess.DEVNULL) as process:
        yield Mailbox(folder, port, process)
