"""Every other API request with a body, judged from its headers before a byte of it is read
(issue 16 §1; wire.md §3 step 1, §1 size limits).

The command edge (``edge.py``) judges the hot endpoints itself and the artifact edge its
uploads. The rest of ``/api/`` — sessions, ``capabilities:check``, the admin endpoints — goes
to Django, whose ASGI handler reads a whole body, however large, before any view runs: a
64 MiB body without a token was read in full, then answered 401. In front of Django, this
guard answers from the headers alone:

- a ``Host`` outside ``ALLOWED_HOSTS``: 400 ``MALFORMED``;
- no ``Authorization: Bearer …``: 401 ``UNAUTHENTICATED`` — on every routed endpoint that
  answers the method, but ``POST /sessions``, whose body is signed instead (wire.md §5), and
  views without authentication. Whether the token is valid is still Django's to judge; only
  its absence is known without the body. An unknown path or method stays Django's 404/405;
- a declared ``Content-Length`` over ``MWP_MAX_COMMAND_BYTES`` (1 MiB, the largest JSON body
  of these endpoints): 413 ``TOO_LARGE``;

then reads the body, counting a chunked one as it arrives and cutting it at the same limit,
and hands Django the one message it would have read, with the ``Content-Length`` it has (a
chunked body has none, and Django took such a body for an empty one: ``MALFORMED``).
Refusals close the connection when the body was not read (``Request.must_close_unread``).
Under daphne the whole body has arrived before any of this runs; under uvicorn (production,
the demo) it has not.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.urls import Resolver404, resolve

from apps.artifacts.http import (
    ClientGone,
    Receive,
    Request,
    Responder,
    Scope,
    Send,
    body_parts,
    refuse,
)
from missionweave.protocol.errors import ProtocolError

from .django_checks import bearer_token, check_host, is_secure, security_headers
from .parsers import too_large

API_PREFIX = "/api/"
BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
#: signed bodies, not bearer tokens (wire.md §5)
SIGNED_PATHS = frozenset({"/api/v1/sessions"})


class BodyGuard:
    """Judges ``/api/`` requests with a body from their headers; everything else passes."""

    def __init__(self, inner: Callable[..., Any]) -> None:
        self.inner = inner

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] not in BODY_METHODS
            or not scope.get("path", "").startswith(API_PREFIX)
            # SecurityMiddleware redirects it to HTTPS, body unread: Django answers, as at the edge
            or (settings.SECURE_SSL_REDIRECT and not is_secure(scope))
        ):
            await self.inner(scope, receive, send)
            return
        request = Request(scope, "")
        limit = settings.MWP_MAX_COMMAND_BYTES
        try:
            check_host(request)
            if _takes_a_bearer_token(scope["path"], scope["method"]):
                bearer_token(request.header("authorization"))
            declared = request.content_length()
            if declared is not None and declared > limit:
                raise too_large(limit)
            parts = body_parts(request, receive, limit=limit, too_large=too_large)
            body = b"".join([part async for part in parts])
        except ClientGone:
            return
        except ProtocolError as error:
            responder = Responder(send, head=False)
            headers = security_headers(secure=is_secure(scope))
            await refuse(responder, request, error, headers=headers)
            return
        await self.inner(_with_length(scope, len(body)), _replaying(body, receive), send)


def _with_length(scope: Scope, length: int) -> Scope:
    """``scope`` as if the body had been sent with ``Content-Length``: Django sizes a request's
    stream by that header and reads a chunked body (which has none) as empty."""
    headers = [
        (name, value)
        for name, value in scope.get("headers", [])
        if name.lower() not in (b"content-length", b"transfer-encoding")
    ]
    return {**scope, "headers": [*headers, (b"content-length", str(length).encode())]}


def _takes_a_bearer_token(path: str, method: str) -> bool:
    """Whether ``method`` on ``path`` is an endpoint that needs a bearer token: a routed view
    that answers the method, and not a signed one. An unknown path or method is left to
    Django, which answers 404 or 405 whatever the token (its body still counted here)."""
    if path in SIGNED_PATHS:
        return False
    try:
        match = resolve(path)
    except Resolver404:
        return False
    view = getattr(match.func, "view_class", None)
    return (
        view is not None
        and hasattr(view, method.lower())
        and bool(getattr(view, "authentication_classes", True))
    )


def _replaying(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` whose first message is the whole body, then the real one's (Django
    waits on it for a disconnect while it answers)."""
    sent = False

    async def replay() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
