"""``manage.py export_group G [--output FILE]``: the complete verifiable history of a group.

JSON Lines (see ``missionweave.protocol.exports``): an authority-signed header, every event
exactly as stored and hashed, and the authority-signed head (the document of
``GET /groups/{g}/head``) the chain ends at. History is never deleted and stays exportable
(R16-08); ``manage.py verify_export`` checks a file against the signed head (R16-10/R16-11).
"""

from __future__ import annotations

import sys
from typing import Any, BinaryIO

from django.core.management.base import BaseCommand, CommandError

from apps.ledger.exports import group_export


class Command(BaseCommand):
    help = "Write a group's complete history (signed header, events, signed head) as JSON Lines."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("group", help="the group id")
        parser.add_argument("--output", help="file to write (default: standard output)")

    def handle(self, *args: Any, **options: Any) -> None:
        group_id: str = options["group"]
        exported = group_export(group_id)
        if exported is None:
            raise CommandError(f"no group {group_id!r}")
        log, lines = exported
        if options["output"]:
            with open(options["output"], "wb") as handle:
                _write(handle, lines)
            self.stderr.write(
                f"{group_id}: {log.head_sequence} events written to {options['output']}"
            )
        else:
            out = getattr(self.stdout, "_out", sys.stdout)
            binary: BinaryIO | None = getattr(out, "buffer", None)
            if binary is not None:
                out.flush()
                _write(binary, lines)
                binary.flush()
            else:  # a text stream (call_command with StringIO)
                for line in lines:
                    out.write(line.decode("utf-8"))


def _write(handle: BinaryIO, lines: Any) -> None:
    for line in lines:
        handle.write(line)
