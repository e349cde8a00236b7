"""One HTTP request to an ASGI application in process (``asgiref``'s communicator)."""

from __future__ import annotations

from typing import Any

from asgiref.testing import ApplicationCommunicator

Headers = list[tuple[bytes, bytes]]


def http_scope(path: str, headers: Headers, method: str = "POST", query: bytes = b"") -> dict:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode("latin-1"),
        "query_string": query,
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 80),
    }


async def asgi_call(
    app: Any, path: str, headers: Headers, body: bytes, *, method: str = "POST", query: bytes = b""
) -> tuple[int, dict, bytes]:
    """(status, headers by lower-case name, the whole body) of one request to ``app``."""
    communicator = ApplicationCommunicator(app, http_scope(path, headers, method, query))
    await communicator.send_input({"type": "http.request", "body": body, "more_body": False})
    start = await communicator.receive_output(timeout=30)
    chunks = [start]
    while chunks[-1].get("more_body", chunks[-1]["type"] == "http.response.start"):
        chunks.append(await communicator.receive_output(timeout=30))
    await communicator.wait(timeout=30)
    answer = b"".join(message.get("body", b"") for message in chunks[1:])
    names = {name.decode("latin-1").lower(): value.decode() for name, value in start["headers"]}
    return start["status"], names, answer
