"""Requests and checks the artifact tests share: real HTTP to the real server, raw sockets
where the test must control exactly what is sent (a header without its body, half a body)."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import httpx

from apps.artifacts.models import GroupArtifact
from missionweave.protocol.artifacts.records import ArtifactRecord
from missionweave.protocol.canonical import sha256_digest

from .servers import ArtifactServer

OCTETS = "application/octet-stream"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def put(
    http: httpx.Client,
    server: ArtifactServer,
    token: str,
    data: bytes,
    *,
    digest: str | None = None,
    content_type: str | None = OCTETS,
) -> httpx.Response:
    headers = bearer(token)
    if content_type is not None:
        headers["Content-Type"] = content_type
    return http.put(
        server.artifact_url(digest or sha256_digest(data)), content=data, headers=headers
    )


def get(
    http: httpx.Client, server: ArtifactServer, token: str, digest: str, **headers: str
) -> httpx.Response:
    extra = {name.replace("_", "-"): value for name, value in headers.items()}
    return http.get(server.artifact_url(digest), headers={**bearer(token), **extra})


def error_of(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """The wire.md §8 error of ``response``, which must have ``status`` and ``code``."""
    assert response.status_code == status, (response.status_code, response.text[:500])
    assert response.headers["content-type"] == "application/json"
    document = response.json()
    assert set(document) == {"error"}
    assert set(document["error"]) == {"code", "message", "requirement", "details"}
    assert document["error"]["code"] == code, document
    return document["error"]


def reference(group_id: str, digest: str) -> GroupArtifact:
    """The projection row a group's log gives an artifact it references. Written here
    directly: no command that references artifacts is wired to the write path yet."""
    return GroupArtifact.objects.create(
        group_id=group_id, digest=digest, data=ArtifactRecord(digest=digest).as_dict()
    )


def connect(server: ArtifactServer) -> socket.socket:
    parts = urlsplit(server.url)
    return socket.create_connection((parts.hostname, parts.port), timeout=10)


def request_head(method: str, path: str, headers: dict[str, str], host: str = "127.0.0.1") -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def read_response(
    sock: socket.socket, timeout_s: float = 10.0, *, reset_ends_body: bool = False
) -> tuple[int, dict[str, str], bytes]:
    """Status, headers and body of one response (Content-Length framed) read off ``sock``.

    ``reset_ends_body``: a connection reset after the head ends the body as a close would.
    A server that answers and closes while the client is still sending has unread bytes in
    its socket, so its kernel resets the connection, and the client's kernel may drop the
    answer's last bytes on the reset; the head has arrived, what follows may not."""
    sock.settimeout(timeout_s)
    buffer = b""
    while b"\r\n\r\n" not in buffer:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"closed before a response: {buffer!r}")
        buffer += chunk
    head, _, body = buffer.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            if not reset_ends_body:
                raise
            break
        if not chunk:
            break
        body += chunk
    return int(status_line.split()[1]), headers, body


def raw_error(body: bytes, code: str) -> dict[str, Any]:
    document = json.loads(body)
    assert document["error"]["code"] == code, document
    return document["error"]


def eventually(check: Callable[[], bool], timeout_s: float = 10.0) -> bool:
    """Whether ``check`` holds within ``timeout_s`` (the server finishes after the client)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()
