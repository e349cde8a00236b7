"""``manage.py verify_export FILE [--public-key KEY] [--known-head HEAD ...]``: check an export.

Every event's hash, the chain from 64 zeros, gapless sequences and the authority-signed head
at the last event (wire.md §6, R16-10/R16-11). Exits 0 with a one-line summary, or non-zero
naming the first bad line and sequence. With ``--public-key``, a file signed under any other
authority key is refused. Each ``--known-head`` (a signed head as ``GET /groups/{g}/head``
served it: a JSON file, or the JSON itself) is a head seen earlier: a history that
contradicts one fails (issue 33 §2). Where this database holds the group, its archive and
online log must also agree (``apps.ledger.storage_check``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from apps.ledger.storage_check import storage_problems
from missionweave.protocol.exports import verify_export


def _known_head(value: str) -> dict[str, Any]:
    """A head given on the command line: its JSON, or the path of a file holding it."""
    text = value if value.lstrip().startswith("{") else _read(value)
    try:
        head = json.loads(text)
    except ValueError:
        raise CommandError(f"--known-head {value[:60]!r} is not a JSON head") from None
    if not isinstance(head, dict):
        raise CommandError(f"--known-head {value[:60]!r} is not a JSON object")
    return head


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc}") from None


class Command(BaseCommand):
    help = "Verify an export_group file: hash chain, gapless sequences, signed head."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("file", help="the JSON Lines export")
        parser.add_argument(
            "--public-key",
            help="the authority public key to trust; write --public-key=KEY, since a base64url "
            "key may start with '-'",
        )
        parser.add_argument(
            "--known-head",
            action="append",
            default=[],
            help="a signed head seen earlier (a JSON file or the JSON); repeatable",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        known = [_known_head(value) for value in options["known_head"]]
        try:
            with open(options["file"], "rb") as handle:
                check = verify_export(handle, public_key=options["public_key"], known_heads=known)
        except OSError as exc:
            raise CommandError(f"cannot read {options['file']}: {exc}") from None
        if not check.ok:
            raise CommandError(check.summary())
        problems = storage_problems(check.group) if check.group else []
        if problems:
            raise CommandError(
                f"{check.group}: the file verifies, but this database's archive and online log "
                f"disagree: {'; '.join(problems)}"
            )
        self.stdout.write(check.summary())
