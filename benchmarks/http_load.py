"""Commands over HTTP to real ASGI server processes (``benchmarks/servers.py``; the kind
the report names): what an agent sees end to end.

Each client is a thread with its own keep-alive ``httpx.Client``, its own agent and session
token, spread round-robin over the server processes. Envelopes are signed before the clock
starts (see :mod:`benchmarks.envelopes`); JSON encoding of each request is in the loop.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import httpx

from .config import BenchConfig
from .envelopes import EnvelopePool
from .scenario import measure_commands
from .stats import Measurement
from .world import BenchWorld

TIMEOUT_S = 60.0


def _http_client(base_url: str, token: str) -> httpx.Client:
    return httpx.Client(
        base_url=base_url,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        timeout=TIMEOUT_S,
    )


class HttpCommandClient:
    """``POST /api/v1/groups/{group}/commands``, one envelope per request."""

    def __init__(self, pool: EnvelopePool, base_url: str) -> None:
        self.pool = pool
        self.http = _http_client(base_url, pool.agent.token)
        self.first_error = ""

    def send(self) -> tuple[int, int]:
        document = self.pool.next()
        response = self.http.post(
            f"/api/v1/groups/{document['group']}/commands", content=json.dumps(document)
        )
        if response.status_code == 201:
            return 1, 0
        self.first_error = self.first_error or f"HTTP {response.status_code}: {response.text[:200]}"
        return 0, 1

    def close(self) -> None:
        self.http.close()


class HttpBatchClient:
    """``POST /api/v1/groups/{group}/commands:batch`` with ``size`` envelopes per request."""

    def __init__(self, pool: EnvelopePool, base_url: str, size: int) -> None:
        self.pool = pool
        self.size = size
        self.http = _http_client(base_url, pool.agent.token)
        self.first_error = ""

    def send(self) -> tuple[int, int]:
        commands = self.pool.take(self.size)
        response = self.http.post(
            f"/api/v1/groups/{commands[0]['group']}/commands:batch",
            content=json.dumps({"commands": commands}),
        )
        if response.status_code != 200:
            self.first_error = (
                self.first_error or f"HTTP {response.status_code}: {response.text[:200]}"
            )
            return 0, self.size
        statuses = [item["status"] for item in response.json()["results"]]
        accepted = sum(1 for status in statuses if status == 201)
        if accepted != len(statuses):
            refused = next(item for item in response.json()["results"] if item["status"] != 201)
            self.first_error = self.first_error or f"batch item refused: {refused}"
        return accepted, len(statuses) - accepted

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
