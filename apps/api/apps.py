from __future__ import annotations

from django.apps import AppConfig


class ApiConfig(AppConfig):
    """The REST surface of wire.md §4: thin views over the services of the other apps."""

    name = "apps.api"
    label = "api"
