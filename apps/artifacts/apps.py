from __future__ import annotations

from importlib import import_module

from django.apps import AppConfig

from apps.ledger import artifacts
from apps.ledger.projections import register_projection


class ArtifactsConfig(AppConfig):
    """Content-addressed bytes outside the logs (R13.1-01, R13.1-02), read back verified
    (R13.1-05), and what the logs say about them (the ``artifact`` projection)."""

    name = "apps.artifacts"
    label = "artifacts"
    verbose_name = "Artifacts"

    def ready(self) -> None:
        # The ledger writes the projection rows and asks which digests a sender may name,
        # but sits below this app, so the app hands it the model and the question.
        register_projection("artifact", self.get_model("GroupArtifact").projection)
        # The directory reads this app's models, which can be imported only now that the
        # app registry is ready: imported by name here, as Django's own apps do in ready().
        directory = import_module(f"{self.name}.directory")
        artifacts.install(
            artifacts.ArtifactDirectory(
                nameable=directory.nameable, read_verified=directory.read_verified
            )
        )
