"""The HTTP figures' client (``benchmarks/http_load.py``): commands and batches over a real
server on keep-alive ``http.client`` connections, and a connection the server closed while
idle opened again, as ``httpx``'s pool would. No speed is asserted."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from apps.ledger.models import Event
from benchmarks.config import load_config
from benchmarks.cpu_share import PARTIES
from benchmarks.envelopes import EnvelopePool
from benchmarks.http_load import HttpBatchClient, HttpCommandClient, KeepAlive, measure_http
from benchmarks.world import build_world


@pytest.mark.django_db(transaction=True)
def test_commands_and_batches_reach_a_real_server_and_are_accepted(live_asgi_server):
    """Each command is one accepted 201 (one event, wire§3); a batch's answer is read item by
    item (wire§4)."""
    world = build_world(groups=1, agents=1, prefix="http-smoke")
    pool = EnvelopePool(world.agents[0], world.groups, seed=3)
    pool.presign(8)
    single = HttpCommandClient(pool, live_asgi_server.url)
    batch = HttpBatchClient(pool, live_asgi_server.url, size=5)
    try:
        sent = [single.send(), single.send(), batch.send()]
    finally:
        single.close()
        batch.close()

    assert sent == [(1, 0), (1, 0), (5, 0)], single.first_error or batch.first_error
    assert Event.objects.filter(group_id=world.groups[0], type="mission.created").count() == 7


@pytest.mark.django_db(transaction=True)
def test_a_measured_cell_counts_the_commands_and_whose_cpu_they_used(live_asgi_server):
    """Every party of the window is counted, and the server this process started is found
    as its descendant. The client's own share is only asserted not negative: ``/proc``
    counts in clock ticks (10 ms), and a 0.3 s window of ``http.client`` requests at
    ~0.25 ms each can fall under one tick on a busy machine (CI failed on that, 0.0)."""
    world = build_world(groups=2, agents=2, prefix="http-cell")
    config = dataclasses.replace(load_config(quick=True), seconds=0.3, warmup_seconds=0.1)

    measurement = measure_http(world, [live_asgi_server.url], clients=2, groups=2, config=config)

    assert measurement.errors == 0, measurement.notes
    assert measurement.operations > 0
    cpu = measurement.params["cpu_s"]
    assert set(cpu) == set(PARTIES)
    assert cpu["servers"] > 0, cpu
    assert all(seconds >= 0 for seconds in cpu.values()), cpu


class _ClosesAfterEachAnswer(BaseHTTPRequestHandler):
    """Answers 201 and closes the connection, as a server whose keep-alive ran out does."""

    protocol_version = "HTTP/1.1"
    seen: list[str] = []

    def do_POST(self) -> None:
        length = int(self.headers["Content-Length"])
        self.seen.append(self.rfile.read(length).decode())
        self._answer()

    def do_GET(self) -> None:
        self.seen.append(f"{self.path} {self.headers['Content-Type']}")
        self._answer()

    def _answer(self) -> None:
        self.send_response(201)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")
        self.close_connection = True

    def log_message(self, *_args: object) -> None:
        return None


@pytest.fixture
def closing_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ClosesAfterEachAnswer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_connection_closed_while_idle_is_opened_again_for_the_next_request(closing_server):
    _ClosesAfterEachAnswer.seen.clear()
    connection = KeepAlive(closing_server, "token")
    try:
        answers = [connection.post("/x", f'{{"n": {n}}}'.encode()) for n in range(3)]
    finally:
        connection.close()

    assert answers == [(201, b"{}")] * 3
    assert _ClosesAfterEachAnswer.seen == ['{"n": 0}', '{"n": 1}', '{"n": 2}']  # each once


def test_a_get_is_sent_once_with_its_query_and_no_json_content_type(closing_server):
    """The replay's REST reader (``benchmarks/replay.py``) pages with ``get``: the same
    reopening, each request reaching the server once."""
    _ClosesAfterEachAnswer.seen.clear()
    connection = KeepAlive(closing_server, "token")
    try:
        answers = [connection.get(f"/events?after={n}&limit=2") for n in range(2)]
    finally:
        connection.close()

    assert answers == [(201, b"{}")] * 2
    assert _ClosesAfterEachAnswer.seen == [
        "/events?after=0&limit=2 None",
        "/events?after=1&limit=2 None",
    ]
