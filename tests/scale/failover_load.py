"""Signed commands over HTTP from client threads that fail over between server processes.

Each client is a thread with its own agent, its own envelopes and a keep-alive
``httpx.Client`` per server; client ``i`` starts on server ``i % len(urls)``. When a request
fails at the transport (the server died: refused, reset, closed without an answer), the
client moves to the next server and sends *the same envelope again*. That is the only safe
retry: the command may have committed before its answer was lost, and the authority answers
a command id it already accepted as an idempotent replay (wire.md §3 step 5, the
``Idempotent-Replayed`` header), never as a second append.

Everything a client saw is recorded with its time, so the test can check every
acknowledgement against the logs afterwards and measure how long the failover took.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from benchmarks.envelopes import EnvelopePool

#: a request that takes longer than this is a transport failure like any other
TIMEOUT_S = 30.0
#: give up on one command after this many transport failures in a row (~20 s of backoff)
MAX_ATTEMPTS = 50


@dataclass(frozen=True, slots=True)
class Ack:
    """A 2xx answer: the authority's promise that the command is in the log."""

    client: int
    command_id: str
    group: str
    server: int  # index of the server that answered
    at: float  # time.monotonic() when the answer arrived
    replayed: bool  # answered from the command record: it had committed before


@dataclass(frozen=True, slots=True)
class TransportFailure:
    client: int
    server: int
    at: float
    error: str


@dataclass(frozen=True, slots=True)
class Unavailable:
    """A 503 answer: the server is up but cannot serve now (its database is away)."""

    client: int
    server: int
    at: float
    retry_after: str | None  # the header, which a 503 must carry


@dataclass
class ClientLog:
    home: int  # the server the client started on
    acks: list[Ack] = field(default_factory=list)
    failures: list[TransportFailure] = field(default_factory=list)
    unavailable: list[Unavailable] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # non-2xx answers (none expected)
    abandoned: list[str] = field(default_factory=list)  # command ids never acknowledged

    def last_acknowledged_by(self, server: int) -> str:
        """The command id ``server`` acknowledged last to this client."""
        return next(ack.command_id for ack in reversed(self.acks) if ack.server == server)


@dataclass
class LoadClient:
    """One client's agent and how many commands it sends.

    Envelopes are signed as they are sent (tens of microseconds against milliseconds for a
    request): signed in advance, a long run's last ones would be older than the ±300 s
    ``issued_at`` window (wire.md §3 step 4) by the time they arrive.
    """

    token: str
    envelopes: EnvelopePool
    count: int
    sent: dict[str, dict[str, Any]] = field(default_factory=dict)  # command id → envelope


class FailoverLoad:
    """Run ``clients`` against ``urls`` in threads; ``start``, watch ``acknowledged``, ``join``.

    A ``503`` is an answer that nothing was done and the same envelope may be sent again
    after ``Retry-After`` seconds; the clients wait at most ``max_retry_after_s`` of it (a
    test that measures when service came back polls sooner than a polite client would).
    """

    def __init__(
        self,
        urls: Sequence[str],
        clients: Sequence[LoadClient],
        *,
        max_retry_after_s: float = 5.0,
    ) -> None:
        self.urls = list(urls)
        self.max_retry_after_s = max_retry_after_s
        self.clients = list(clients)
        self.logs = [ClientLog(home=index % len(urls)) for index in range(len(clients))]
        self._threads = [
            threading.Thread(target=self._run, args=(index,), daemon=True)
            for index in range(len(clients))
        ]
        self._errors: list[BaseException] = []
        self.started_at = 0.0

    @property
    def total(self) -> int:
        return sum(client.count for client in self.clients)

    @property
    def acknowledged(self) -> int:
        return sum(len(log.acks) for log in self.logs)

    def start(self) -> None:
        self.started_at = time.monotonic()
        for thread in self._threads:
            thread.start()

    def wait_for_acks(self, count: int, *, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while self.acknowledged < count:
            if self._errors:
                raise self._errors[0]
            if time.monotonic() > deadline or not any(t.is_alive() for t in self._threads):
                raise TimeoutError(f"{self.acknowledged} of {count} acknowledged")
            time.sleep(0.01)

    def join(self, *, timeout: float = 900.0) -> list[ClientLog]:
        for thread in self._threads:
            thread.join(timeout)
        if any(thread.is_alive() for thread in self._threads):
            raise TimeoutError(f"clients still running after {timeout} s")
        if self._errors:
            raise self._errors[0]
        return self.logs

    def acks(self) -> list[Ack]:
        return sorted((ack for log in self.logs for ack in log.acks), key=lambda ack: ack.at)

    def _run(self, index: int) -> None:
        client, log = self.clients[index], self.logs[index]
        headers = {"Authorization": f"Bearer {client.token}", "Content-Type": "application/json"}
        sessions = [
            httpx.Client(base_url=url, headers=headers, timeout=TIMEOUT_S) for url in self.urls
        ]
        try:
            current = log.home
            for _ in range(client.count):
                document = client.envelopes.next()
                client.sent[document["id"]] = document
                current = self._deliver(index, document, sessions, current)
        except BaseException as error:  # reported by wait_for_acks / join
            self._errors.append(error)
        finally:
            for session in sessions:
                session.close()

    def _deliver(
        self, index: int, document: dict[str, Any], sessions: list[httpx.Client], current: int
    ) -> int:
        """Send ``document`` until a server answers; the server to use next."""
        log = self.logs[index]
        body = json.dumps(document)
        path = f"/api/v1/groups/{document['group']}/commands"
        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                response = sessions[current].post(path, content=body)
            except httpx.TransportError as error:
                log.failures.append(
                    TransportFailure(index, current, time.monotonic(), type(error).__name__)
                )
                current = (current + 1) % len(sessions)
                time.sleep(min(0.02 * attempt, 0.5))
                continue
            if response.status_code == 503:
                retry_after = response.headers.get("Retry-After")
                log.unavailable.append(Unavailable(index, current, time.monotonic(), retry_after))
                time.sleep(min(float(retry_after or 1), self.max_retry_after_s))
                continue
            if response.is_success:
                log.acks.append(
                    Ack(
                        client=index,
                        command_id=document["id"],
                        group=document["group"],
                        server=current,
                        at=time.monotonic(),
                        replayed=response.headers.get("Idempotent-Replayed") == "true",
                    )
                )
            else:
                log.refused.append(
                    f"{document['id']}: HTTP {response.status_code} {response.text[:300]}"
                )
            return current
        log.abandoned.append(document["id"])
        return current


def send_again(url: str, client: LoadClient, command_id: str) -> httpx.Response:
    """Send one of ``client``'s envelopes once more, unchanged, to ``url``: what a client
    does whose answer was lost after the command committed."""
    document = client.sent[command_id]
    with httpx.Client(base_url=url, timeout=TIMEOUT_S) as http:
        return http.post(
            f"/api/v1/groups/{document['group']}/commands",
            content=json.dumps(document),
            headers={"Authorization": f"Bearer {client.token}", "Content-Type": "application/json"},
        )


@dataclass(frozen=True)
class Recovery:
    """How the load came back after one server was killed (all times in seconds)."""

    rate_before: float  # acknowledgements per second in the window before the kill
    rate_after: float  # per second from the moment every client was served again to the end
    failover_s: float  # kill → every client of the killed server acknowledged by another
    recovered_s: float | None  # kill → end of the first window at ≥ half ``rate_before``
    longest_pause_s: float  # the longest time without any acknowledgement, from the kill on


def recovery(
    acks: Sequence[Ack],
    *,
    killed_at: float,
    killed_server: int,
    moved: Sequence[int],
    started_at: float,
    window_s: float = 0.5,
    before_s: float = 2.0,
) -> Recovery:
    """Measure the failover from the clients' own records. ``moved``: the clients whose
    server was killed; each must have an acknowledgement from another server."""
    times = sorted(ack.at for ack in acks)
    start = max(started_at, killed_at - before_s)
    rate_before = sum(1 for t in times if start <= t < killed_at) / max(killed_at - start, 1e-9)
    firsts = [
        min(a.at for a in acks if a.client == client and a.server != killed_server)
        for client in moved
    ]
    served_again = max(firsts)
    after = [t for t in times if t >= served_again]
    end = times[-1]
    rate_after = len(after) / (end - served_again) if end > served_again else 0.0
    recovered_s = None
    t = killed_at + window_s
    while t <= end + 1e-9:
        if sum(1 for a in times if t - window_s < a <= t) / window_s >= rate_before / 2:
            recovered_s = t - killed_at
            break
        t += 0.05
    marks = [killed_at, *(t for t in times if t > killed_at)]
    pauses = [b - a for a, b in itertools.pairwise(marks)]
    return Recovery(
        rate_before=rate_before,
        rate_after=rate_after,
        failover_s=served_again - killed_at,
        recovered_s=recovered_s,
        longest_pause_s=max(pauses, default=0.0),
    )
