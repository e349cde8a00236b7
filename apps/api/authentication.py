"""``Authorization: Bearer <token>`` for agents (session token) and humans (API token)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request

from apps.ledger.write_path import Caller
from apps.registry.services import Authenticated, authenticate_bearer
from missionweave.protocol.errors import ErrorCode, ProtocolError


class BearerTokenAuthentication(BaseAuthentication):
    """Sets ``request.user`` to a :class:`Caller` and ``request.auth`` to the token's details.

    A missing header leaves the request anonymous; the views that need a caller refuse it
    with ``UNAUTHENTICATED`` (wire.md §3 step 1) before they read the body.
    """

    def authenticate(self, request: Request) -> tuple[Caller, Authenticated] | None:
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not header:
            return None
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise ProtocolError(ErrorCode.UNAUTHENTICATED, "expected Authorization: Bearer <token>")
        authenticated = authenticate_bearer(token.strip())
        return authenticated.caller, authenticated

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="missionweave"'


class BearerTokenScheme(OpenApiAuthenticationExtension):
    """Documents ``Authorization: Bearer <session or API token>`` in the OpenAPI document.

    Defined next to the class it describes: drf-spectacular finds an extension by its
    subclassing, so it must be imported wherever the authentication class is.
    """

    target_class = BearerTokenAuthentication
    name = "bearerToken"

    def get_security_definition(self, auto_schema: object) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An agent's session token (POST /sessions) or a human's API token.",
        }


def require_caller(request: Request) -> Caller:
    """The authenticated caller, or ``UNAUTHENTICATED``."""
    caller: Any = request.user
    if not isinstance(caller, Caller):
        raise ProtocolError(ErrorCode.UNAUTHENTICATED, "a bearer token is required")
    return caller


def require_staff(request: Request) -> Caller:
    """A staff user's API token (wire.md §4 admin endpoints); any other token is FORBIDDEN."""
    caller = require_caller(request)
    if caller.kind != "user" or not caller.is_staff:
        raise ProtocolError(
            ErrorCode.FORBIDDEN,
            "admin endpoints need a staff user's API token",
            requirement="wire§4",
        )
    return caller
