from django.apps import AppConfig


class WorkConfig(AppConfig):
    """Missions (and, next, WorkItems, offers and leases) as projections of the group log."""

    name = "apps.work"
    label = "work"

    def ready(self) -> None:
        from apps.ledger.projections import register_projection

        from .models import DependencyEdges, Mission, WorkItem, WorkProposal

        register_projection("mission", Mission.projection)
        register_projection("work_item", WorkItem.projection)
        register_projection("proposal", WorkProposal.projection)
        register_projection("dependencies", DependencyEdges.projection)
