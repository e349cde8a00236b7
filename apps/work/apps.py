from __future__ import annotations

from django.apps import AppConfig

from apps.ledger.projections import register_projection

#: aggregate kind → the model that stores it (each model carries its ``projection``)
PROJECTED_MODELS = (
    ("mission", "Mission"),
    ("work_item", "WorkItem"),
    ("proposal", "WorkProposal"),
    ("dependencies", "DependencyEdges"),
)


class WorkConfig(AppConfig):
    """Missions, WorkItems, proposals and their dependencies as projections of the group log."""

    name = "apps.work"
    label = "work"

    def ready(self) -> None:
        # The ledger writes these rows but sits below this app, so the app hands it each model.
        for kind, model_name in PROJECTED_MODELS:
            register_projection(kind, self.get_model(model_name).projection)
