"""ASGI plumbing of the artifact endpoints: the request's headers and the answer's shape.

Refusals are the wire.md §8 document of a :class:`ProtocolError`, with the status the core
fixes for its code (``ProtocolError.status``), never a second table here.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

from missionweave.protocol.errors import ErrorCode, ProtocolError

from .storage import Storage

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Headers = list[tuple[bytes, bytes]]

logger = logging.getLogger(__name__)

#: how long a client is told to wait when storage or the database is out (503)
RETRY_AFTER_S = "5"
#: Content-Length longer than this many digits is past any limit (and slow to parse)
_MAX_LENGTH_DIGITS = 18
#: an unread body up to this size is left for the server to discard, keeping the connection
LINGER_BYTES = 64 * 1024


class ClientGone(Exception):
    """The client disconnected: nothing can be answered."""


class Request:
    """The parts of an HTTP scope the endpoints read."""

    def __init__(self, scope: Scope, digest: str) -> None:
        self.scope = scope
        self.method: str = scope["method"]
        self.digest = digest
        self.headers: dict[str, str] = {}
        for name, value in scope.get("headers", []):
            self.headers[name.decode("latin-1").lower()] = value.decode("latin-1")
        #: set once the whole body has been received (an early answer must close otherwise)
        self.body_consumed = False

    def header(self, name: str) -> str | None:
        return self.headers.get(name)

    @property
    def must_close_unread(self) -> bool:
        """Whether a refusal sent before the body was read must close the connection.

        The server would otherwise have to read and discard the rest of the body to find
        the next request: fine for a small one (the server discards it, and closing while a
        client is still sending makes its kernel reset the connection, losing our answer),
        not for a large or unbounded one (a declared 2 GiB, a chunked stream).
        """
        if self.body_consumed:
            return False
        if "chunked" in (self.header("transfer-encoding") or "").lower():
            return True
        length = (self.header("content-length") or "").strip()
        if not length.isascii() or not length.isdigit():
            return bool(length)
        return len(length) > _MAX_LENGTH_DIGITS or int(length) > LINGER_BYTES

    def content_length(self) -> int | None:
        """The declared body length; ``MALFORMED`` when it is not a number."""
        text = self.header("content-length")
        if text is None:
            return None
        text = text.strip()
        if not text.isascii() or not text.isdigit():
            raise ProtocolError(
                ErrorCode.MALFORMED, "Content-Length is not a number", requirement="wire§1"
            )
        return 10**_MAX_LENGTH_DIGITS if len(text) > _MAX_LENGTH_DIGITS else int(text)

    def describe(self, principal: str = "") -> str:
        """``PUT /api/v1/artifacts/… by agent:w1`` for logs and corruption reports."""
        return f"{self.method} {self.scope.get('path', '')}" + (
            f" by {principal}" if principal else ""
        )


class Responder:
    """Sends one response and remembers whether it has started (after that, a failure can
    only end the connection)."""

    def __init__(self, send: Send, *, head: bool) -> None:
        self._send = send
        self.head = head
        self.started = False

    async def start(self, status: int, headers: Iterable[tuple[str, str]]) -> None:
        self.started = True
        await self._send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers],
            }
        )

    async def body(self, data: bytes, *, more: bool = False) -> None:
        await self._send({"type": "http.response.body", "body": data, "more_body": more})

    async def json(
        self,
        status: int,
        document: object,
        *,
        headers: Iterable[tuple[str, str]] = (),
        close: bool = False,
    ) -> None:
        payload = json.dumps(document, separators=(",", ":")).encode()
        all_headers = [
            ("content-type", "application/json"),
            ("content-length", str(len(payload))),
            ("cache-control", "no-store"),
            *headers,
        ]
        if close:
            # The body was not read: the connection cannot carry another request.
            all_headers.append(("connection", "close"))
        await self.start(status, all_headers)
        await self.body(b"" if self.head else payload)

    async def error(
        self,
        error: ProtocolError,
        *,
        status: int | None = None,
        headers: Iterable[tuple[str, str]] = (),
        close: bool = False,
    ) -> None:
        """The wire.md §8 document of ``error``; ``status`` only where HTTP needs another
        status for the same code (416 for an unsatisfiable range, 503 for an outage)."""
        status = status or error.status
        extra = list(headers)
        if status == 401:
            extra.append(("www-authenticate", 'Bearer realm="missionweave"'))
        await self.json(status, error.as_body(), headers=extra, close=close)


@dataclass(frozen=True)
class Exchange:
    """One authenticated request being answered, and the storage that answers it."""

    request: Request
    principal: str
    receive: Receive
    responder: Responder
    storage: Storage


async def body_parts(
    request: Request,
    receive: Receive,
    *,
    limit: int,
    too_large: Callable[[int], ProtocolError],
) -> AsyncIterator[bytes]:
    """The body's parts as they arrive, counted: ``too_large(limit)`` as soon as more than
    ``limit`` bytes came (a chunked body has no declared length to refuse up front),
    ``ClientGone`` on a disconnect; ``request.body_consumed`` once the last part is in."""
    total = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGone
        part = message.get("body", b"")
        if part:
            total += len(part)
            if total > limit:
                raise too_large(limit)
            yield part
        if not message.get("more_body", False):
            request.body_consumed = True
            return


async def refuse(
    responder: Responder,
    request: Request | None,
    error: ProtocolError,
    *,
    status: int | None = None,
    headers: Iterable[tuple[str, str]] = (),
) -> None:
    """Answer ``error`` as its wire.md §8 document, closing the connection when the body was
    not read; once the response has started there is no status left to send, and the
    incomplete response ends the connection."""
    if responder.started:
        return
    close = request is None or request.must_close_unread
    try:
        await responder.error(error, status=status, headers=headers, close=close)
    except Exception:
        logger.exception("could not send the refusal %s", error.code)


def unavailable(what: str) -> ProtocolError:
    """The refusal of a request that storage or the database could not serve: 503
    ``UNAVAILABLE``, sent with ``Retry-After: RETRY_AFTER_S``."""
    return ProtocolError(ErrorCode.UNAVAILABLE, f"{what} unavailable, retry later")


def storage_full() -> ProtocolError:
    """The refusal of an upload the artifact store has no room for: 507 ``STORAGE_FULL``.
    Nothing of it is kept (its spool is discarded); unlike 503 it is not worth retrying soon,
    since room is made by an operator, not by time."""
    return ProtocolError(
        ErrorCode.STORAGE_FULL, "the artifact store is full: nothing was stored, retry later"
    )
