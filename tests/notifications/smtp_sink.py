"""An aiosmtpd handler for tests: each message it accepts is written, whole, to a folder.

Run as a real SMTP server process::

    python -m aiosmtpd -n -l 127.0.0.1:<port> -c tests.notifications.smtp_sink.FolderHandler \\
        <folder> [<refuse first N>]

With a second argument it answers the first N messages ``451`` (try again later), so a test
can watch the sender retry.
"""

from __future__ import annotations

import itertools
import os
from argparse import ArgumentParser
from pathlib import Path
from typing import Any


class FolderHandler:
    def __init__(self, folder: str, refuse_first: int = 0) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.refuse_left = refuse_first
        self.counter = itertools.count(1)

    @classmethod
    def from_cli(cls, parser: ArgumentParser, *args: str) -> FolderHandler:
        if not 1 <= len(args) <= 2:
            parser.error("FolderHandler takes a folder and, optionally, how many to refuse")
        return cls(args[0], int(args[1]) if len(args) == 2 else 0)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        if self.refuse_left > 0:
            self.refuse_left -= 1
            (self.folder / f"refused-{next(self.counter):04d}").touch()
            return "451 4.3.0 try again later"
        number = next(self.counter)
        partial = self.folder / f".{number:04d}.tmp"
        partial.write_bytes(envelope.original_content or envelope.content)
        # whole or not at all: a reader never sees half a message
        os.replace(partial, self.folder / f"{number:04d}.eml")
        return "250 OK"
