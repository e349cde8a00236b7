"""Who is on the socket (wire.md §7): an agent's bearer token, or a browser's Django session
from an allowed origin. A handshake with neither is refused.
"""

from __future__ import annotations

from typing import Any

from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from django.conf import settings

from apps.ledger.write_path import Caller
from apps.registry.services import authenticate_bearer
from missionweave.protocol.errors import ProtocolError


def _header(scope: dict[str, Any], name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return value.decode("latin-1")
    return None


@database_sync_to_async
def _caller_from_token(token: str) -> Caller | ProtocolError:
    try:
        return authenticate_bearer(token).caller
    except ProtocolError as error:
        return error


class _ResolveCaller:
    """Sets ``scope["mwp_caller"]`` (a Caller) or ``scope["mwp_refusal"]`` (why not)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        scope = dict(scope)
        authorization = _header(scope, b"authorization")
        if authorization:
            scheme, _, token = authorization.partition(" ")
            result = await _caller_from_token(token.strip()) if scheme.lower() == "bearer" else None
            if isinstance(result, Caller):
                scope["mwp_caller"] = result
            else:
                scope["mwp_refusal"] = result.code.value if result else "UNAUTHENTICATED"
        else:
            user = scope.get("user")
            origin = _header(scope, b"origin")
            if user is not None and user.is_authenticated:
                if origin in settings.MWP_STREAM_ALLOWED_ORIGINS:
                    scope["mwp_caller"] = Caller.for_user(user)
                else:
                    scope["mwp_refusal"] = "FORBIDDEN"
            else:
                scope["mwp_refusal"] = "UNAUTHENTICATED"
        return await self.inner(scope, receive, send)


class _BearerOrBrowser:
    """A handshake with ``Authorization`` goes straight to the caller check; only one
    without it passes Channels' cookie, session and auth middleware first.

    An agent has no Django session, and Channels' session middleware wraps the socket's
    ``send`` for its whole life, checking the lazy session on every frame although a
    websocket frame never carries a cookie: about a third of the consumer's CPU per
    ``EVENT`` frame of a replay (15 -> 9-11 us in process; docs/benchmarks.md §8). Which
    branch runs changes nothing else: with a bearer header, ``_ResolveCaller`` never reads
    the session's user either.
    """

    def __init__(self, inner: Any) -> None:
        self.bearer = _ResolveCaller(inner)
        self.browser = AuthMiddlewareStack(self.bearer)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        route = self.bearer if _header(scope, b"authorization") else self.browser
        return await route(scope, receive, send)


def StreamAuthMiddleware(inner: Any) -> Any:
    return _BearerOrBrowser(inner)
