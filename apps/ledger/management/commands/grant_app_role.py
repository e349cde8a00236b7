"""``manage.py grant_app_role <role>``: grant the application's database role what it needs
and no more (``apps.ledger.db_roles``; ``migrate`` does it when ``MWP_APP_DB_ROLE`` is set)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.ledger.db_roles import grant_app_privileges


class Command(BaseCommand):
    help = "Grant the application's PostgreSQL role its privileges (no UPDATE, no TRUNCATE)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("role", help="an existing role that owns nothing")
        parser.add_argument("--database", default="default")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            grant_app_privileges(options["role"], using=options["database"])
        except ImproperlyConfigured as problem:
            raise CommandError(str(problem)) from problem
        self.stdout.write(f"granted {options['role']} the application's privileges")
