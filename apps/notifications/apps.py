from __future__ import annotations

from importlib import import_module

from django.apps import AppConfig

from apps.ledger import reactions


class NotificationsConfig(AppConfig):
    """Notifications from the log, their email and the people's preferences (issue 36)."""

    name = "apps.notifications"
    label = "notifications"

    def ready(self) -> None:
        # After commit, the events that may tell someone something hint the producer; the
        # beat's catch-up finds whatever a lost hint missed.
        tasks = import_module(f"{self.name}.tasks")
        recipients = import_module(f"{self.name}.recipients")
        for event_type in sorted(recipients.TRIGGERS):
            reactions.react_to(event_type, tasks.hint_produce)
