"""Commands over HTTP to real ASGI server processes (``benchmarks/servers.py``; the kind
the report names): what an agent sees end to end.

Each client is a thread with its own keep-alive connection, agent and session token, spread
round-robin over the server processes. Envelopes are signed before the clock starts (see
:mod:`benchmarks.envelopes`); JSON encoding of each request is in the loop.

The connection is the standard library's ``http.client``, not ``httpx``: the clients share
the machine's two cores with the servers and PostgreSQL, and ``httpx`` spent ~0.75 ms of
CPU per request against ~0.25 ms for ``http.client`` (section 5b of docs/benchmarks.md,
measured side by side on 2026-12-05): a sixth of the machine at 16 clients, taken from the
servers the figure is meant to measure. pgbench, the ceiling, has a client in C.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Sequence
from urllib.parse import urlsplit

from .config import BenchConfig
from .envelopes import EnvelopePool
from .scenario import measure_commands
from .stats import Measurement
from .world import BenchWorld

TIMEOUT_S = 60.0
#: what a keep-alive connection the server closed while idle raises on the next request,
#: before the request reached the server (so sending it again on a new one is safe)
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


class KeepAlive:
    """One keep-alive HTTP/1.1 connection sending requests with the agent's bearer token
    (JSON bodies when posting).

    Like ``httpx``'s pool, a connection the server closed while idle (uvicorn's keep-alive
    timeout, between the warm-up and the timed window) is opened again and the request sent
    on the new one."""

    def __init__(self, base_url: str, token: str) -> None:
        parts = urlsplit(base_url)
        self._address = (parts.hostname or "127.0.0.1", parts.port or 80)
        self._headers = {"Authorization": f"Bearer {token}"}
        self._json_headers = {**self._headers, "Content-Type": "application/json"}
        self._connection = self._connect()

    def _connect(self) -> http.client.HTTPConnection:
        host, port = self._address
        return http.client.HTTPConnection(host, port, timeout=TIMEOUT_S)

    def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        """POST ``body`` to ``path``: the status and the response's body."""
        return self._send("POST", path, body)

    def get(self, path: str) -> tuple[int, bytes]:
        """GET ``path`` (its query string included): the status and the response's body."""
        return self._send("GET", path, None)

    def _send(self, method: str, path: str, body: bytes | None) -> tuple[int, bytes]:
        try:
            return self._once(method, path, body)
        except _STALE:
            self._connection.close()
            self._connection = self._connect()
            return self._once(method, path, body)

    def _once(self, method: str, path: str, body: bytes | None) -> tuple[int, bytes]:
        headers = self._headers if body is None else self._json_headers
        self._connection.request(method, path, body=body, headers=headers)
        response = self._connection.getresponse()
        return response.status, response.read()

    def close(self) -> None:
        self._connection.close()


class HttpCommandClient:
    """``POST /api/v1/groups/{group}/commands``, one envelope per request."""

    def __init__(self, pool: EnvelopePool, base_url: str) -> None:
        self.pool = pool
        self.http = KeepAlive(base_url, pool.agent.token)
        self.first_error = ""

    def send(self) -> tuple[int, int]:
        document = self.pool.next()
        status, body = self.http.post(
            f"/api/v1/groups/{document['group']}/commands", json.dumps(document).encode()
        )
        if status == 201:
            return 1, 0
        self.first_error = self.first_error or f"HTTP {status}: {body[:200]!r}"
        return 0, 1

    def close(self) -> None:
        self.http.close()


class HttpBatchClient:
    """``POST /api/v1/groups/{group}/commands:batch`` with ``size`` envelopes per request."""

    def __init__(self, pool: EnvelopePool, base_url: str, size: int) -> None:
        self.pool = pool
        self.size = size
        self.http = KeepAlive(base_url, pool.agent.token)
        self.first_error = ""

    def send(self) -> tuple[int, int]:
        commands = self.pool.take(self.size)
        status, body = self.http.post(
            f"/api/v1/groups/{commands[0]['group']}/commands:batch",
            json.dumps({"commands": commands}).encode(),
        )
        if status != 200:
            self.first_error = self.first_error or f"HTTP {status}: {body[:200]!r}"
            return 0, self.size
        results = json.loads(body)["results"]
        accepted = sum(1 for item in results if item["status"] == 201)
        if accepted != len(results):
            refused = next(item for item in results if item["status"] != 201)
            self.first_error = self.first_error or f"batch item refused: {refused}"
        return accepted, len(results) - accepted

    def close(self) -> None:
        self.http.close()


def measure_http(
    world: BenchWorld,
    urls: Sequence[str],
    *,
    clients: int,
    groups: int,
    config: BenchConfig,
    name: str = "http",
) -> Measurement:
    counter = iter(range(clients))
    return measure_commands(
        name,
        world=world,
        clients=clients,
        groups=groups,
        config=config,
        make_client=lambda pool: HttpCommandClient(pool, urls[next(counter) % len(urls)]),
        params={"server": config.server, "servers": len(urls)},
    )


def measure_http_batch(
    world: BenchWorld, urls: Sequence[str], *, size: int, config: BenchConfig
) -> Measurement:
    """One client sending batches of ``size`` into one group (the head lock is per group)."""
    return measure_commands(
        "http_batch",
        world=world,
        clients=1,
        groups=1,
        config=config,
        make_client=lambda pool: HttpBatchClient(pool, urls[0], size),
        params={"batch_size": size, "server": config.server, "servers": 1},
        extra_per_client=size,
    )
