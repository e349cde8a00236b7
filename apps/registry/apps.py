from django.apps import AppConfig


class RegistryConfig(AppConfig):
    """Who is who: organisations, agents and their keys, sessions, API tokens, groups, members."""

    name = "apps.registry"
    label = "registry"

    def ready(self) -> None:
        from apps.ledger.projections import register_projection

        from .models import Membership

        register_projection("membership", Membership.projection)
