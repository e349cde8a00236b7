from django.apps import AppConfig


class LedgerConfig(AppConfig):
    """The append-only event log of every group, its head rows and the one write path."""

    name = "apps.ledger"
    label = "ledger"
