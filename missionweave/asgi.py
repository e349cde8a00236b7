"""ASGI entry point: HTTP (API, dashboard), the websocket stream ``/ws/v1/stream`` and the
dashboard bell's ``/ws/notifications/``.

First, a request with too many or too large headers is refused (``apps.api.header_limit``).
``/api/v1/artifacts/`` is answered ahead of Django by ``apps.artifacts.asgi``, which reads an
upload's body as it arrives; the command endpoints ``POST /api/v1/groups/{group}/commands``
and ``commands:batch`` by ``apps.api.edge``, below Django's request handling; every other
request with a body, on any path, is judged from its headers and bounded by
``apps.api.body_guard`` before Django reads it. Serve with uvicorn, with the protocol flags of
``missionweave.production_server``, for bodies to stream and slow requests to be cut off
(daphne, like Django's own handler, reads a whole body before the application runs).
"""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "missionweave.settings")
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.urls import path  # noqa: E402

from apps.api.body_guard import BodyGuard  # noqa: E402
from apps.api.edge import CommandEdge  # noqa: E402
from apps.api.header_limit import HeaderLimit  # noqa: E402
from apps.artifacts.asgi import mount_artifacts  # noqa: E402
from apps.notifications.consumers import BellConsumer  # noqa: E402
from apps.stream.auth import StreamAuthMiddleware  # noqa: E402
from apps.stream.consumers import StreamConsumer  # noqa: E402

application = HeaderLimit(
    mount_artifacts(
        ProtocolTypeRouter(
            {
                "http": CommandEdge(BodyGuard(django_asgi_app)),
                "websocket": StreamAuthMiddleware(
                    URLRouter(
                        [
                            path("ws/v1/stream", StreamConsumer.as_asgi()),
                            # the dashboard's bell: a person's unread count, live (issue 36)
                            path("ws/notifications/", BellConsumer.as_asgi()),
                        ]
                    )
                ),
            }
        )
    )
)
