"""uvicorn's HTTP protocol (httptools) with deadlines on reading a request (issue 33 §3).

uvicorn arms one timer of its own: the keep-alive wait after a response. A connection that
opens and sends nothing, a request whose headers never end and a body declared and never
sent each held a connection, a parser and (for a body) an application task for as long as
the client liked: a probe found 300 such requests all still open after 75 s. This protocol
adds the two deadlines nginx has (``client_header_timeout``, ``client_body_timeout``), read
from the environment when the server starts (uvicorn imports its ``--http`` class then, so a
bad value stops the server there):

- **headers** (``MWP_HTTP_HEADER_TIMEOUT_S``, default 10 s): a request's headers must be
  complete within this of the connection opening (the first request) or of the request's
  first byte (the next ones on a kept-alive connection, whose idle wait before that byte is
  uvicorn's ``--timeout-keep-alive``). Past it a request begun is answered 408 and the
  connection closed; a connection where none had begun is closed without a word.
- **body** (``MWP_HTTP_BODY_TIMEOUT_S``, default 30 s): while a request's body is awaited, at
  most this between two reads of it. Past it the connection closes and the application
  receives ``http.disconnect`` (the body guard and the artifact edge drop what they read).
  The wait is not counted while the server itself is not reading: uvicorn stops reading a
  body the application has not taken yet (its flow control), and a client that asked for
  ``100 Continue`` waits for the application's first read before it sends.

A body that keeps arriving, however slowly, is bounded by the size limits
(``apps/api/body_guard.py``, the edges) rather than by time; nginx in front, which buffers a
whole body before it forwards one, bounds its pace (docs/deploy.md).
"""

from __future__ import annotations

import math
import os
from asyncio import TimerHandle
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

HEADER_TIMEOUT_ENV = "MWP_HTTP_HEADER_TIMEOUT_S"
BODY_TIMEOUT_ENV = "MWP_HTTP_BODY_TIMEOUT_S"
DEFAULT_HEADER_TIMEOUT_S = 10.0
DEFAULT_BODY_TIMEOUT_S = 30.0

_TIMEOUT_TEXT = b"Request timeout: the request did not arrive in time.\n"
REQUEST_TIMEOUT_RESPONSE = b"".join(
    [
        b"HTTP/1.1 408 Request Timeout\r\n",
        b"content-type: text/plain; charset=utf-8\r\n",
        b"content-length: %d\r\n" % len(_TIMEOUT_TEXT),
        b"connection: close\r\n",
        b"\r\n",
        _TIMEOUT_TEXT,
    ]
)


@dataclass(frozen=True, slots=True)
class Deadlines:
    header_s: float
    body_s: float


@cache
def deadlines() -> Deadlines:
    """The deadlines this process serves with, from its environment (read once)."""
    return Deadlines(
        header_s=_seconds(HEADER_TIMEOUT_ENV, DEFAULT_HEADER_TIMEOUT_S),
        body_s=_seconds(BODY_TIMEOUT_ENV, DEFAULT_BODY_TIMEOUT_S),
    )


def _seconds(name: str, default: float) -> float:
    text = os.environ.get(name) or str(default)
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value < math.inf:
        raise ValueError(f"{name} must be a positive number of seconds, not {text!r}")
    return value


class DeadlineHttpToolsProtocol(HttpToolsProtocol):
    """``HttpToolsProtocol`` that closes a connection whose request does not arrive in time.

    One timer at a time, ``_deadline``: the headers' from the connection opening (or the
    request's first byte) to the end of its headers, then the body's, renewed by each part
    of it, until the request is whole.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._limits = deadlines()
        self._deadline: TimerHandle | None = None
        self._awaiting_headers = False
        self._request_begun = False

    def connection_made(self, transport: Any) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._await_headers()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_deadline()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._request_begun = True
        if not self._awaiting_headers:
            self._await_headers()

    def on_headers_complete(self) -> None:
        self._cancel_deadline()
        self._awaiting_headers = False
        self._request_begun = False
        super().on_headers_complete()
        if not self._upgrading():
            # the body's deadline; a request without one completes in this same feed
            self._await_body()

    def on_body(self, body: bytes) -> None:
        self._await_body()
        super().on_body(body)

    def on_message_complete(self) -> None:
        self._cancel_deadline()
        super().on_message_complete()
        if self._upgrading():
            return  # a websocket handshake: its protocol takes the connection over
        if self.cycle.response_complete and not self.pipeline:
            # Answered before its body ended (a refusal that kept the connection): uvicorn
            # armed its keep-alive wait at the answer, and the body's bytes since cancelled
            # it; without this the connection would stay open, idle, for good.
            self._unset_keepalive_if_required()
            self.timeout_keep_alive_task = self.loop.call_later(
                self.timeout_keep_alive, self.timeout_keep_alive_handler
            )

    def _upgrading(self) -> bool:
        """Whether the request is a websocket handshake uvicorn hands to its ws protocol."""
        return bool(self.parser.should_upgrade() and self._should_upgrade())

    def _await_headers(self) -> None:
        self._awaiting_headers = True
        self._arm(self._limits.header_s, self._headers_late)

    def _await_body(self) -> None:
        self._arm(self._limits.body_s, self._body_late)

    def _arm(self, seconds: float, callback: Callable[[], None]) -> None:
        self._cancel_deadline()
        self._deadline = self.loop.call_later(seconds, callback)

    def _cancel_deadline(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _headers_late(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        if self._request_begun:
            self.transport.write(REQUEST_TIMEOUT_RESPONSE)
        self.transport.close()

    def _body_late(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        if self.flow.read_paused or self.cycle.waiting_for_100_continue:
            # the server is not reading: the client cannot be late
            self._await_body()
            return
        self.transport.close()


deadlines()  # at the server's start: a bad value stops it here, not at each connection
