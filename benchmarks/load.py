"""A closed-loop load driver: N client threads, each sending its next request as soon as the
previous one is answered, first for a warm-up and then for the timed window.

The same threads run both phases, so connections (a database connection per thread in
process, a keep-alive HTTP connection per client) are open before the clock starts. Between
the phases the driver calls ``prepare(warmup_rate)`` while the clients wait, which is where
the envelope pools are signed for the timed window. The CPU every process used in the timed
window is read around it (``cpu_share``), outside the clock.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from . import cpu_share


class Client(Protocol):
    def send(self) -> tuple[int, int]:
        """Send one request; return (operations accepted, operations refused)."""
        ...

    def close(self) -> None: ...


@dataclass
class _Tally:
    latencies: list[float] = field(default_factory=list)
    accepted: int = 0
    refused: int = 0
    finished_at: float = 0.0


@dataclass(frozen=True)
class LoadResult:
    accepted: int
    refused: int
    elapsed_s: float
    latencies_s: list[float]
    warmup_rate: float
    #: CPU seconds of each party in the timed window (``cpu_share.shares``)
    cpu_s: dict[str, float] = field(default_factory=dict)


class _Run:
    def __init__(self, clients: Sequence[Client]) -> None:
        parties = len(clients) + 1  # the clients and the conducting thread
        self.clients = clients
        self.warm_tallies = [_Tally() for _ in clients]
        self.tallies = [_Tally() for _ in clients]
        self.start_warmup = threading.Barrier(parties)
        self.end_warmup = threading.Barrier(parties)
        self.start_timed = threading.Barrier(parties, action=self._mark_start)
        self.warm_deadline = 0.0
        self.seconds = 0.0
        self.started_at = 0.0
        self.deadline = 0.0
        self.errors: list[BaseException] = []
        self.warmup_rate = 0.0
        self.cpu_before = cpu_share.Snapshot()

    def _mark_start(self) -> None:
        self.cpu_before = cpu_share.snapshot()  # before the clock: reading /proc takes ms
        self.started_at = time.perf_counter()
        self.deadline = self.started_at + self.seconds

    def abort(self) -> None:
        for barrier in (self.start_warmup, self.end_warmup, self.start_timed):
            barrier.abort()

    def client_thread(self, index: int) -> None:
        client = self.clients[index]
        try:
            self.start_warmup.wait()
            _loop(client, self.warm_tallies[index], lambda: self.warm_deadline)
            self.end_warmup.wait()
            self.start_timed.wait()
            _loop(client, self.tallies[index], lambda: self.deadline)
        except threading.BrokenBarrierError:
            pass
        except BaseException as exc:  # surfaced by the conducting thread
            self.errors.append(exc)
            self.abort()
        finally:
            client.close()


def _loop(client: Client, tally: _Tally, deadline: Callable[[], float]) -> None:
    end = deadline()
    now = time.perf_counter()
    while now < end:
        accepted, refused = client.send()
        finished = time.perf_counter()
        tally.latencies.append(finished - now)
        tally.accepted += accepted
        tally.refused += refused
        now = finished
    tally.finished_at = now


def run_clients(
    clients: Sequence[Client],
    *,
    warmup_s: float,
    seconds: float,
    prepare: Callable[[float], None] = lambda rate: None,
) -> LoadResult:
    """Warm up, call ``prepare(warm-up operations/s)``, then measure for ``seconds``."""
    run = _Run(clients)
    run.seconds = seconds
    threads = [
        threading.Thread(target=run.client_thread, args=(index,), name=f"bench-client-{index}")
        for index in range(len(clients))
    ]
    for thread in threads:
        thread.start()
    try:
        run.warm_deadline = time.perf_counter() + warmup_s
        run.start_warmup.wait()
        run.end_warmup.wait()
        warm_ops = sum(t.accepted + t.refused for t in run.warm_tallies)
        run.warmup_rate = warm_ops / warmup_s if warmup_s > 0 else 0.0
        prepare(run.warmup_rate)
        run.start_timed.wait()
    except threading.BrokenBarrierError:
        pass
    except BaseException:
        run.abort()
        raise
    finally:
        for thread in threads:
            thread.join()
    cpu_after = cpu_share.snapshot()
    if run.errors:
        raise run.errors[0]
    finished = max(t.finished_at for t in run.tallies)
    return LoadResult(
        accepted=sum(t.accepted for t in run.tallies),
        refused=sum(t.refused for t in run.tallies),
        elapsed_s=finished - run.started_at,
        latencies_s=[latency for t in run.tallies for latency in t.latencies],
        warmup_rate=run.warmup_rate,
        cpu_s=cpu_share.shares(run.cpu_before, cpu_after),
    )
