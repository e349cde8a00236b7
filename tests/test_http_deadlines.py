"""Requests that never finish arriving are closed (issue 33 §3, ``missionweave.http_deadlines``),
on the production server's protocol, with the deadlines shortened through the environment.

A black-box probe kept 300 half-sent requests open for 75 s. Here 300 connections — silent,
headers cut off, a form's body declared and never sent, an API body declared and never sent
— must each be closed by the server within its deadline, and not before it.
"""

from __future__ import annotations

import selectors
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from missionweave import http_deadlines
from tests.api.raw_http import connect, request_head
from tests.live_server import LiveServer, session_server

pytestmark = pytest.mark.django_db(transaction=True)

DEADLINE_S = 2.0
#: the server's timers are armed when it accepts, a little after the client's send
SLACK_S = 3.0
SERVER_ENV = {
    http_deadlines.HEADER_TIMEOUT_ENV: str(DEADLINE_S),
    http_deadlines.BODY_TIMEOUT_ENV: str(DEADLINE_S),
}
PER_KIND = 75
TIMEOUT_PAGE = b"HTTP/1.1 408 Request Timeout"


@pytest.fixture(scope="module")
def strict_server(django_db_setup: None, worker_id: str) -> Iterator[LiveServer]:
    with session_server(worker_id, server="uvicorn", extra_env=SERVER_ENV) as server:
        yield server


#: what each kind of half-sent request sends, and nothing more
HALF_SENT = {
    "silent": b"",
    "headers cut off": b"POST /login/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le",
    "form body never sent": request_head(
        "/login/",
        {"Content-Type": "application/x-www-form-urlencoded", "Content-Length": "1000"},
    ),
    "API body never sent": request_head(
        "/api/v1/sessions", {"Content-Type": "application/json", "Content-Length": "1000"}
    ),
}


@dataclass
class HalfSent:
    kind: str
    sock: socket.socket
    sent_at: float
    received: bytes = b""
    closed_after: float | None = None


def _open_all(server: LiveServer) -> list[HalfSent]:
    requests = []
    for kind, data in HALF_SENT.items():
        for _ in range(PER_KIND):
            sock = connect(server)
            sock.sendall(data)
            sock.setblocking(False)
            requests.append(HalfSent(kind, sock, time.monotonic()))
    return requests


def _wait_for_closes(requests: list[HalfSent], until: float) -> None:
    """Read each socket until the server closes it (EOF or reset), noting when."""
    with selectors.DefaultSelector() as selector:
        for request in requests:
            selector.register(request.sock, selectors.EVENT_READ, request)
        while selector.get_map() and time.monotonic() < until:
            for key, _ in selector.select(timeout=0.1):
                request: HalfSent = key.data
                try:
                    data = request.sock.recv(65536)
                except ConnectionResetError:
                    data = b""
                request.received += data
                if not data:
                    request.closed_after = time.monotonic() - request.sent_at
                    selector.unregister(request.sock)


def test_300_half_sent_requests_are_all_closed_within_the_deadline(
    strict_server: LiveServer,
) -> None:
    requests = _open_all(strict_server)
    try:
        _wait_for_closes(requests, until=time.monotonic() + DEADLINE_S + SLACK_S + 5)
    finally:
        for request in requests:
            request.sock.close()

    open_still = [r.kind for r in requests if r.closed_after is None]
    assert not open_still, f"{len(open_still)} still open: {set(open_still)}"
    times = [r.closed_after for r in requests if r.closed_after is not None]
    assert min(times) >= DEADLINE_S - 0.1, f"closed before the deadline: {min(times):.2f} s"
    assert max(times) <= DEADLINE_S + SLACK_S, f"closed {max(times):.2f} s after the last byte"
    for request in requests:
        if request.kind == "headers cut off":
            assert request.received.startswith(TIMEOUT_PAGE), request.received[:200]
        else:
            # nothing of a request had arrived, or its answer is the application's to give
            # and the application only sees the client gone
            assert request.received == b"", (request.kind, request.received[:200])


def test_a_body_arriving_slower_than_the_deadline_in_all_but_faster_per_part_is_served(
    strict_server: LiveServer,
) -> None:
    """The body's deadline is between two reads (nginx's ``client_body_timeout``): a form
    sent in parts, each within the deadline, reaches Django after more than twice as long."""
    body = b"username=nobody&password=wrong"
    head = request_head(
        "/login/",
        {
            "Content-Type": "application/x-www-form-urlencoded",
            "Content-Length": str(len(body)),
        },
    )
    parts = [body[:10], body[10:20], body[20:]]
    with connect(strict_server) as sock:
        started = time.monotonic()
        sock.sendall(head)
        for part in parts:
            time.sleep(DEADLINE_S * 0.7)
            sock.sendall(part)
        sock.settimeout(10)
        answer = sock.recv(65536)
        elapsed = time.monotonic() - started

    assert elapsed > 2 * DEADLINE_S
    # Django read the form and refused it for its missing CSRF token: the request got there
    assert answer.startswith(b"HTTP/1.1 403 "), answer[:200]


def test_the_deadlines_default_to_10_and_30_seconds_and_refuse_nonsense(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in SERVER_ENV:
        monkeypatch.delenv(name, raising=False)
    http_deadlines.deadlines.cache_clear()
    try:
        assert http_deadlines.deadlines() == http_deadlines.Deadlines(header_s=10, body_s=30)
        http_deadlines.deadlines.cache_clear()
        for nonsense in ("0", "-1", "soon", "inf"):
            monkeypatch.setenv(http_deadlines.BODY_TIMEOUT_ENV, nonsense)
            with pytest.raises(ValueError, match=http_deadlines.BODY_TIMEOUT_ENV):
                http_deadlines.deadlines()
            http_deadlines.deadlines.cache_clear()
    finally:
        http_deadlines.deadlines.cache_clear()
