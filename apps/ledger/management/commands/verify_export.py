"""``manage.py verify_export FILE [--public-key KEY]``: check an export offline.

Every event's hash, the chain from 64 zeros, gapless sequences and the authority-signed head
at the last event (wire.md §6, R16-10/R16-11). Exits 0 with a one-line summary, or non-zero
naming the first bad line and sequence. With ``--public-key``, a file signed under any other
authority key is refused.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from missionweave.protocol.exports import verify_export


class Command(BaseCommand):
    help = "Verify an export_group file: hash chain, gapless sequences, signed head."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("file", help="the JSON Lines export")
        parser.add_argument(
            "--public-key",
            help="the authority public key to trust; write --public-key=KEY, since a base64url "
            "key may start with '-'",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            with open(options["file"], "rb") as handle:
                check = verify_export(handle, public_key=options["public_key"])
        except OSError as exc:
            raise CommandError(f"cannot read {options['file']}: {exc}") from None
        if not check.ok:
            raise CommandError(check.summary())
        self.stdout.write(check.summary())
