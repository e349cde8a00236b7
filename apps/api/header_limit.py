"""Requests with too many or too large headers, refused before anything reads them (issue 16
§3; wire.md §1 limits).

uvicorn's httptools parser takes any number of header fields of any size (checked: 10,000
fields, and one field of 200 KB, reached the application), and Django would go on to copy
each into ``request.META``. This is the outermost application: a request whose headers pass
``MWP_MAX_HEADER_FIELDS`` (100) or ``MWP_MAX_HEADER_BYTES`` (32 KiB, names and values) is
answered at once — 400 ``MALFORMED`` in the wire.md §8 shape under ``/api/``, the styled
"Bad request" page elsewhere — and the connection closed, its body unread; a websocket
handshake so burdened is refused. The bytes already received are the server's to bound: a
deployment puts a proxy in front (docs/deploy.md) whose header limits are tighter still.
"""

from __future__ import annotations

import base64
import functools
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.staticfiles import finders
from django.template import loader
from django.utils.safestring import SafeString, mark_safe

from apps.artifacts.http import Receive, Responder, Scope, Send
from missionweave.protocol.errors import ErrorCode, ProtocolError

from .middleware import API_PREFIX


def too_many_headers(scope: Scope) -> str | None:
    """Why ``scope``'s headers are refused, or ``None`` when they are within the limits."""
    headers = scope.get("headers") or ()
    if len(headers) > settings.MWP_MAX_HEADER_FIELDS:
        return f"more than {settings.MWP_MAX_HEADER_FIELDS} header fields"
    if sum(len(name) + len(value) for name, value in headers) > settings.MWP_MAX_HEADER_BYTES:
        return f"more than {settings.MWP_MAX_HEADER_BYTES} bytes of headers"
    return None


@functools.cache
def _inline_styles() -> SafeString:
    """The dashboard's stylesheets, for the page that refuses a browser's headers: the
    browser would send the same headers for the stylesheets, and be refused again."""
    found = (finders.find(f"dashboard/{name}") for name in ("dashboard.css", "inbox.css"))
    return mark_safe("\n".join(Path(path).read_text() for path in found if path))  # noqa: S308


@functools.cache
def _page_policy() -> str:
    """The dashboard's policy for this page, which Django's middleware never sees: its one
    inline stylesheet allowed by its hash, nothing else inline (docs/deploy.md, "Headers")."""
    digest = base64.b64encode(hashlib.sha256(_inline_styles().encode()).digest()).decode()
    return (
        f"default-src 'self'; style-src 'sha256-{digest}'; object-src 'none'; "
        "base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
    )


class HeaderLimit:
    """Refuses over-burdened requests; passes everything else to ``inner`` untouched."""

    def __init__(self, inner: Callable[..., Any]) -> None:
        self.inner = inner

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        reason = too_many_headers(scope) if scope["type"] in {"http", "websocket"} else None
        if reason is None:
            await self.inner(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": reason})
        elif scope["path"].startswith(API_PREFIX):
            error = ProtocolError(ErrorCode.MALFORMED, reason, requirement="wire§1")
            await Responder(send, head=scope["method"] == "HEAD").error(error, close=True)
        else:
            context = {"reason": reason, "inline_styles": _inline_styles()}
            page = loader.get_template("400.html").render(context).encode()
            responder = Responder(send, head=scope["method"] == "HEAD")
            html = [
                ("content-type", "text/html; charset=utf-8"),
                ("content-security-policy", _page_policy()),
                ("connection", "close"),
            ]
            await responder.start(400, [*html, ("content-length", str(len(page)))])
            await responder.body(page)
