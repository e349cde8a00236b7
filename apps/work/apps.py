from django.apps import AppConfig


class WorkConfig(AppConfig):
    """Missions (and, next, WorkItems, offers and leases) as projections of the group log."""

    name = "apps.work"
    label = "work"

    def ready(self) -> None:
        from apps.ledger.projections import register_projection

        from .models import Mission

        register_projection("mission", Mission.projection)
