"""``manage.py api_token <username> [--staff]``: create the user if needed, print a new token
(wire.md §4). The token is shown once; only its SHA-256 is stored."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from apps.registry.services import api_token_create
from missionweave.protocol.identifiers import USERNAME_PATTERN


class Command(BaseCommand):
    help = "Create a user if needed and print a new API token for them."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("username")
        parser.add_argument("--staff", action="store_true", help="make the user staff (admin API)")
        parser.add_argument("--label", default="", help="a note on what the token is for")

    def handle(self, *args: Any, **options: Any) -> None:
        username = options["username"]
        if not USERNAME_PATTERN.match(username):
            raise CommandError("a username is 1..150 of letters, digits and @.+-_")
        self.stdout.write(
            api_token_create(username=username, staff=options["staff"], label=options["label"])
        )
