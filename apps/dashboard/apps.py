from django.apps import AppConfig


class DashboardConfig(AppConfig):
    """Server-rendered pages for people: groups, their event timelines, live updates."""

    name = "apps.dashboard"
    label = "dashboard"
