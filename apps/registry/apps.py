from __future__ import annotations

from django.apps import AppConfig

from apps.ledger import agents
from apps.ledger.projections import register_projection


class RegistryConfig(AppConfig):
    """Who is who: organisations, agents and their keys, sessions, API tokens, groups, members."""

    name = "apps.registry"
    label = "registry"

    def ready(self) -> None:
        # The ledger verifies and projects with these but sits below this app, so the app
        # hands them in rather than the ledger importing registry models.
        register_projection("membership", self.get_model("Membership").projection)
        from .models import parsed_key  # noqa: PLC0415 (models load after the app registry)

        agent, key = self.get_model("Agent"), self.get_model("AgentKey")
        agents.install(
            agents.AgentDirectory(
                current_key_texts=key.current_key_texts,
                parse_key=parsed_key,
                standing_read=agent.standing_read,
                card_version=agent.current_card_version,
            )
        )
