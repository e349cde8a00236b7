from __future__ import annotations

from django.apps import AppConfig


class DemoConfig(AppConfig):
    """``manage.py demo``: a seeded group whose work moves live, played through the real
    services. It sits on top of every domain app, so none of them carries demo code."""

    name = "apps.demo"
    label = "demo"
