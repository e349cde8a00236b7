"""ASGI entry point: HTTP (API, dashboard) and the websocket stream ``/ws/v1/stream``."""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "missionweave.settings")
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.urls import path  # noqa: E402

from apps.stream.auth import StreamAuthMiddleware  # noqa: E402
from apps.stream.consumers import StreamConsumer  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": StreamAuthMiddleware(
            URLRouter([path("ws/v1/stream", StreamConsumer.as_asgi())])
        ),
    }
)
