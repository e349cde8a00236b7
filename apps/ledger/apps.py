from django.apps import AppConfig
from django.db.models.signals import post_migrate

from .db_roles import grant_after_migrate


class LedgerConfig(AppConfig):
    """The append-only event log of every group, its head rows and the one write path."""

    name = "apps.ledger"
    label = "ledger"

    def ready(self) -> None:
        # once per migrate run (sender: this app), after every app's tables exist
        post_migrate.connect(grant_after_migrate, sender=self, dispatch_uid="mwp-app-db-role")
