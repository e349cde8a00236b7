from __future__ import annotations

from importlib import import_module

from django.apps import AppConfig

from apps.ledger import reactions
from apps.ledger.projections import register_projection

#: aggregate kind → the model that stores it (each model carries its ``projection``)
PROJECTED_MODELS = (
    ("mission", "Mission"),
    ("work_item", "WorkItem"),
    ("proposal", "WorkProposal"),
    ("dependencies", "DependencyEdges"),
    ("context", "ContextPackage"),
)


class WorkConfig(AppConfig):
    """Missions, WorkItems, proposals, their dependencies and context packages as projections
    of the group log."""

    name = "apps.work"
    label = "work"

    def ready(self) -> None:
        # The ledger writes these rows but sits below this app, so the app hands it each model.
        for kind, model_name in PROJECTED_MODELS:
            register_projection(kind, self.get_model(model_name).projection)
        # A submission's review starts right after it commits (R13.2-03); the tasks module
        # imports models, so it is imported by name once the registry is ready.
        tasks = import_module(f"{self.name}.tasks")
        reactions.react_to("work.submitted", tasks.hint_review)
