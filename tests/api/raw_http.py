"""Requests written byte by byte on a socket to a live server: what a client library would
not send (a declared length with no body, a chunked body cut short) and what a test must
see the server answer before the body is sent."""

from __future__ import annotations

import json
import socket
from typing import Any
from urllib.parse import urlsplit

from tests.artifacts.helpers import read_response
from tests.live_server import LiveServer


def connect(server: LiveServer) -> socket.socket:
    parts = urlsplit(server.url)
    return socket.create_connection((parts.hostname, parts.port), timeout=10)


def request_head(path: str, headers: dict[str, str], *, method: str = "POST") -> bytes:
    lines = [
        f"{method} {path} HTTP/1.1",
        "Host: 127.0.0.1",
        *(f"{k}: {v}" for k, v in headers.items()),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def json_from(token: str, **headers: str) -> dict[str, str]:
    """A JSON request's headers with ``token``, plus ``headers`` (the body's framing)."""
    return {"Authorization": f"Bearer {token}", "Content-Type": "application/json", **headers}


def response_of(sock: socket.socket) -> tuple[int, dict[str, str], dict[str, Any]]:
    status, headers, body = read_response(sock)
    return status, headers, json.loads(body)


def chunked(payload: bytes, size: int) -> bytes:
    parts = [payload[i : i + size] for i in range(0, len(payload), size)]
    return b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in parts) + b"0\r\n\r\n"


def flood_chunks(sock: socket.socket, *, chunks: int = 40, size: int = 64 * 1024) -> None:
    """Send ``chunks`` chunks of ``size`` spaces (2.5 MiB by default, past any JSON limit),
    stopping quietly when the server has answered and closed while they were still going."""
    chunk = b"%x\r\n%s\r\n" % (size, b" " * size)
    try:
        for _ in range(chunks):
            sock.sendall(chunk)
    except (BrokenPipeError, ConnectionResetError):
        pass
