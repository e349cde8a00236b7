"""The project's own app: what has to happen once when Django starts, whatever the entry point
(``manage.py``, ASGI, WSGI, Celery, pytest)."""

from __future__ import annotations

from django.apps import AppConfig
from django.conf import settings

from .local_dirs import make_local_dirs


class MissionWeaveConfig(AppConfig):
    name = "missionweave"
    verbose_name = "MissionWeave"

    def ready(self) -> None:
        # Before the first connection: SQLite cannot create the folder of its database file.
        make_local_dirs(settings)
