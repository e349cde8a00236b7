"""Every request's body, judged from its headers before a byte of it is read (issue 16 §1,
issue 33; wire.md §3 step 1, §1 size limits).

Django's ASGI handler reads a whole body, however large, before any middleware or view runs:
a 64 MiB API body without a token was read in full, then answered 401; a 256 MiB form POST to
``/login/`` grew a worker by 513 MiB (the body, then the form parsed from it) that it never
gave back; a 512 MiB POST to a missing page was spooled whole. The command edge (``edge.py``)
and the artifact edge judge their own bodies; every other request, on every path and with any
method, passes this guard on its way to Django, which answers from the headers alone:

- a declared ``Content-Length`` over the path's limit: 413;
- under ``/api/``, for a method that takes a body: a ``Host`` outside ``ALLOWED_HOSTS``, 400
  ``MALFORMED``; no ``Authorization: Bearer …``, 401 ``UNAUTHENTICATED`` — on every routed
  endpoint that answers the method, but ``POST /sessions``, whose body is signed instead
  (wire.md §5), and views without authentication. Whether the token is valid is still
  Django's to judge; only its absence is known without the body. An unknown path or method
  stays Django's 404/405 (its body still bounded here);

then reads the body, counting a chunked one as it arrives and cutting it at the same limit,
and hands Django the one message it would have read, with the ``Content-Length`` it has (a
chunked body has none, and Django took such a body for an empty one). The limit is the view's
own under ``/api/`` (``body_limit_setting``, as the JSON parser reads it: 1 MiB,
``MWP_MAX_COMMAND_BYTES``, unless the view names another) and ``MWP_MAX_FORM_BYTES`` (1 MiB)
everywhere else: dashboard forms, the admin, missing pages. A refusal under ``/api/`` is the
wire.md §8 document; anywhere else a short plain-text answer, since a person may read it.
Refusals close the connection when the body was not read (``Request.must_close_unread``).
Under uvicorn (production, the demo) nothing of the body has arrived when this runs; daphne
reads a whole body before the application runs, so only uvicorn keeps it out of memory.
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
from missionweave.protocol.errors import ErrorCode, ProtocolError

from .django_checks import bearer_token, check_host, is_secure, security_headers
from .parsers import body_limit, too_large

API_PREFIX = "/api/"
BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
#: signed bodies, not bearer tokens (wire.md §5)
SIGNED_PATHS = frozenset({"/api/v1/sessions"})


class BodyGuard:
    """Bounds every HTTP request's body from its headers; judges ``/api/`` requests that take
    a body (host, token) before Django reads it."""

    def __init__(self, inner: Callable[..., Any]) -> None:
        self.inner = inner

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.inner(scope, receive, send)
            return
        request = Request(scope, "")
        path = scope.get("path", "")
        api = path.startswith(API_PREFIX)
        judged = (
            api
            and scope["method"] in BODY_METHODS
            # SecurityMiddleware redirects it to HTTPS: Django answers, as at the edge
            and not (settings.SECURE_SSL_REDIRECT and not is_secure(scope))
        )
        if not judged and not _has_body(request):
            await self.inner(scope, receive, send)
            return
        view = _view_class(path) if api else None
        limit = body_limit({"view": view}) if api else settings.MWP_MAX_FORM_BYTES
        try:
            if judged:
                check_host(request)
                if _takes_a_bearer_token(view, path, scope["method"]):
                    bearer_token(request.header("authorization"))
            declared = request.content_length()
            if declared is not None and declared > limit:
                raise too_large(limit)
            parts = body_parts(request, receive, limit=limit, too_large=too_large)
            body = b"".join([part async for part in parts])
        except ClientGone:
            return
        except ProtocolError as error:
            headers = security_headers(secure=is_secure(scope))
            if api:
                await refuse(Responder(send, head=False), request, error, headers=headers)
            else:
                await _refuse_plainly(send, request, error, headers=headers)
            return
        await self.inner(_with_length(scope, len(body)), _replaying(body, receive), send)


def _has_body(request: Request) -> bool:
    """Whether the request's headers announce a body (RFC 9112 §6.3: a length, or a transfer
    coding); without either it has none, and Django reads nothing."""
    if request.header("transfer-encoding") is not None:
        return True
    length = request.header("content-length")
    return length is not None and length.strip() != "0"


def _view_class(path: str) -> type | None:
    """The view class routed at ``path``, or ``None`` (no route, or a function view)."""
    try:
        match = resolve(path)
    except Resolver404:
        return None
    return getattr(match.func, "view_class", None)


def _takes_a_bearer_token(view: type | None, path: str, method: str) -> bool:
    """Whether ``method`` on ``view`` is an endpoint that needs a bearer token: a routed view
    that answers the method, and not a signed one. An unknown path or method is left to
    Django, which answers 404 or 405 whatever the token (its body still counted here)."""
    if path in SIGNED_PATHS:
        return False
    return (
        view is not None
        and hasattr(view, method.lower())
        and bool(getattr(view, "authentication_classes", True))
    )


async def _refuse_plainly(
    send: Send, request: Request, error: ProtocolError, *, headers: list[tuple[str, str]]
) -> None:
    """A refusal outside the API, in words a person reads (no error codes); the connection
    closes when the body was not read, as ``refuse`` does."""
    text = _plain_words(error).encode()
    extra = [("connection", "close")] if request.must_close_unread else []
    responder = Responder(send, head=request.method == "HEAD")
    await responder.start(
        error.status,
        [
            ("content-type", "text/plain; charset=utf-8"),
            ("content-length", str(len(text))),
            ("cache-control", "no-store"),
            *extra,
            *headers,
        ],
    )
    await responder.body(b"" if responder.head else text)


def _plain_words(error: ProtocolError) -> str:
    if error.code == ErrorCode.TOO_LARGE:
        limit = error.details.get("limit", 0)
        return f"Request too large: this server accepts at most {_size(limit)} here.\n"
    return "Bad request: the request's length could not be read.\n"


def _size(limit: int) -> str:
    mib, kib = 1024 * 1024, 1024
    if limit % mib == 0:
        return f"{limit // mib} MiB"
    if limit % kib == 0:
        return f"{limit // kib} KiB"
    return f"{limit} bytes"


def _with_length(scope: Scope, length: int) -> Scope:
    """``scope`` as if the body had been sent with ``Content-Length``: Django sizes a request's
    stream by that header and reads a chunked body (which has none) as empty."""
    headers = [
        (name, value)
        for name, value in scope.get("headers", [])
        if name.lower() not in (b"content-length", b"transfer-encoding")
    ]
    return {**scope, "headers": [*headers, (b"content-length", str(length).encode())]}


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
