"""Every route bounds its body (issue 33 §1): outside ``/api/`` too, a body over the limit is
refused from its headers before a byte of it is read, under uvicorn, with no login.

A black-box probe found the dashboard reading any body whole: a 256 MiB form POST to
``/login/`` with a well-formed ``csrftoken`` cookie grew the worker by 513 MiB, never given
back; 512 MiB to a missing page was spooled whole. Each test here measures the server
process's resident memory (``/proc/<pid>/status``) around the request it makes.
"""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import httpx
import pytest
from django.conf import settings

from tests.artifacts.helpers import read_response
from tests.live_server import LiveServer, uvicorn_server

from .raw_http import connect, request_head

__all__ = ["uvicorn_server"]

pytestmark = pytest.mark.django_db(transaction=True)

MIB = 1024 * 1024
DECLARED = 256 * MIB
#: what a refusal may cost the server in resident memory (allocator noise, not the body)
GROWTH_ALLOWED = 4 * MIB
#: a form's headers: a well-formed CSRF cookie, so nothing but the size can refuse it
FORM = {
    "Cookie": "csrftoken=" + "a" * 32,
    "Content-Type": "application/x-www-form-urlencoded",
}
REFUSAL = b"Request too large: this server accepts at most 1 MiB here.\n"
PAGES = [
    pytest.param("/login/", id="login"),
    pytest.param("/account/tokens/", id="dashboard form"),
    pytest.param("/admin/login/", id="admin login"),
    pytest.param("/no-such-page/", id="missing page"),
]


def resident_bytes(pid: int) -> int:
    """The process's resident set size, from ``VmRSS`` in ``/proc/<pid>/status``."""
    status = Path(f"/proc/{pid}/status").read_text()
    match = re.search(r"^VmRSS:\s+(\d+) kB$", status, re.MULTILINE)
    assert match is not None, status
    return int(match[1]) * 1024


def _declare(server: LiveServer, path: str, **headers: str) -> tuple[int, dict, bytes, float]:
    """Send only the headers of a POST declaring ``DECLARED`` bytes; the answer, how long it
    took, and that the server then closed the connection (the body is never read)."""
    with connect(server) as sock:
        started = time.monotonic()
        sock.sendall(request_head(path, {**FORM, "Content-Length": str(DECLARED), **headers}))
        status, response_headers, body = read_response(sock, timeout_s=5)
        elapsed = time.monotonic() - started
        assert sock.recv(1) == b"", "the server must close: the body was not read"
    return status, response_headers, body, elapsed


@pytest.mark.parametrize("path", PAGES)
def test_a_declared_256_mib_form_is_refused_from_its_headers_without_growing_the_server(
    uvicorn_server: LiveServer, path: str
) -> None:
    _declare(uvicorn_server, path)  # whatever the path's first use allocates, before measuring
    before = resident_bytes(uvicorn_server.pid)

    status, headers, body, elapsed = _declare(uvicorn_server, path)

    growth = resident_bytes(uvicorn_server.pid) - before
    assert status == 413
    assert elapsed < 1.0
    assert growth < GROWTH_ALLOWED, f"the server grew by {growth / MIB:.1f} MiB"
    assert headers["content-type"] == "text/plain; charset=utf-8"
    assert headers["connection"] == "close"
    assert body == REFUSAL


@pytest.mark.parametrize(
    ("method", "path"),
    [
        pytest.param("POST", "/api/v1/no-such-endpoint", id="missing API path"),
        pytest.param("GET", "/api/v1/authority", id="a GET with a body"),
    ],
)
def test_under_api_the_refusal_keeps_the_wire_document(
    uvicorn_server: LiveServer, method: str, path: str
) -> None:
    """Routes without a token check still bound their bodies, answered as wire.md §8."""
    with connect(uvicorn_server) as sock:
        head = {"Content-Type": "application/json", "Content-Length": str(DECLARED)}
        sock.sendall(request_head(path, head, method=method))
        status, headers, body = read_response(sock, timeout_s=5)

    assert status == 413
    assert headers["content-type"] == "application/json"
    assert b'"code":"TOO_LARGE"' in body
    assert headers["connection"] == "close"


def _stream_chunks(server: LiveServer, path: str) -> tuple[int, bytes, int, BaseException | None]:
    """A chunked POST whose body keeps coming (up to ``DECLARED`` bytes) while the answer is
    read: the status, the answer, how much the client managed to send, and what stopped it."""
    chunk = b"%x\r\n%s\r\n" % (64 * 1024, b"a" * 64 * 1024)
    sent = 0
    stopped: list[BaseException] = []
    with connect(server) as sock:
        sock.sendall(request_head(path, {**FORM, "Transfer-Encoding": "chunked"}))

        def stream() -> None:
            nonlocal sent
            try:
                while sent < DECLARED:
                    sock.sendall(chunk)
                    sent += len(chunk)
            except OSError as error:
                stopped.append(error)

        sender = threading.Thread(target=stream)
        sender.start()
        status, _, body = read_response(sock, timeout_s=10, reset_ends_body=True)
        sender.join(timeout=30)
        assert not sender.is_alive()
    return status, body, sent, stopped[0] if stopped else None


@pytest.mark.parametrize("path", [PAGES[0], PAGES[-1]])
def test_a_chunked_form_streaming_past_the_limit_is_cut_off(
    uvicorn_server: LiveServer, path: str
) -> None:
    _stream_chunks(uvicorn_server, path)
    before = resident_bytes(uvicorn_server.pid)

    status, body, sent, stopped = _stream_chunks(uvicorn_server, path)

    growth = resident_bytes(uvicorn_server.pid) - before
    assert status == 413
    # the answer's text, or the part of it that arrived before the reset (see read_response)
    assert body == REFUSAL[: len(body)]
    # the server closed on it: the client's sending failed long before the 256 MiB
    assert stopped is not None
    assert sent < 32 * MIB
    assert growth < GROWTH_ALLOWED, f"the server grew by {growth / MIB:.1f} MiB"


def _login_form(http: httpx.Client, server: LiveServer) -> dict[str, str]:
    page = http.get(f"{server.url}/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert token is not None, page.text[:500]
    return {"csrfmiddlewaretoken": token[1], "username": "nobody", "password": "wrong"}


def _bad_login(response: httpx.Response) -> None:
    """Django read the form: the login page again, saying the credentials are wrong."""
    assert response.status_code == 200, response.text[:500]
    assert "Please enter a correct username and password" in response.text


def test_a_form_at_the_limit_reaches_django(uvicorn_server: LiveServer) -> None:
    with httpx.Client(timeout=30) as http:
        form = _login_form(http, uvicorn_server)
        body = str(httpx.QueryParams(form)).encode() + b"&padding="
        body += b"a" * (settings.MWP_MAX_FORM_BYTES - len(body))
        assert len(body) == settings.MWP_MAX_FORM_BYTES
        headers = {"Content-Type": "application/x-www-form-urlencoded"}

        _bad_login(http.post(f"{uvicorn_server.url}/login/", content=body, headers=headers))


def test_a_chunked_form_within_the_limit_reaches_django_whole(
    uvicorn_server: LiveServer,
) -> None:
    """The guard reads the chunked body and hands Django its length (without it, Django
    reads a body without ``Content-Length`` as empty)."""
    with httpx.Client(timeout=30) as http:
        body = str(httpx.QueryParams(_login_form(http, uvicorn_server))).encode()
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        parts = (body[i : i + 7] for i in range(0, len(body), 7))  # a generator: chunked

        _bad_login(http.post(f"{uvicorn_server.url}/login/", content=parts, headers=headers))
