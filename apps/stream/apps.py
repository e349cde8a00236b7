from django.apps import AppConfig


class StreamConfig(AppConfig):
    """The websocket stream of wire.md §7: subscribe, replay from the log, live events."""

    name = "apps.stream"
    label = "stream"
