"""Redis stopped mid-stream (issue 16 §8).

A server process (uvicorn, as deployed) whose channel layer and Celery broker are a Redis of
the test's own (``tests/faults/private_redis.py``). Websocket subscribers follow two groups
while client threads send signed commands over HTTP; mid-load Redis is killed, kept away for
a while, and started again on the same port.

Redis carries only hints (wire.md §7: an after-commit "there is more" that wakes a read of
the log) and queued Celery tasks; the log is PostgreSQL's. So: writes keep being accepted
while Redis is away, the subscribers are never left behind — each stream socket goes on
delivering, from the consumers' poll of the log, and a socket that did drop is resumed by
its subscriber like any other — and every subscriber ends holding every event of its
groups exactly once per connection, in order, with no gap.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from dataclasses import dataclass, field

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from apps.ledger.models import GroupLog
from tests import proofs
from tests.faults.private_redis import PrivateRedis
from tests.faults.reporting import report
from tests.live_server import session_server
from tests.scale.failover_load import FailoverLoad
from tests.scale.writers import load_clients, load_writers

pytestmark = [pytest.mark.e2e, pytest.mark.chaos]

GROUPS = 2
CLIENTS = proofs.size(sample=3, full=6)
SUBSCRIBERS = proofs.size(sample=3, full=8)
PER_CLIENT = proofs.size(sample=160, full=600)
OUTAGE_S = proofs.size(sample=5, full=10)
STOP_AT = 0.2


@dataclass
class Subscriber:
    """A websocket client of ``/ws/v1/stream`` that records every event it receives, per
    socket, and resumes after the last one when a socket drops (wire.md §7)."""

    ws_url: str
    token: str
    groups: list[str]
    #: per socket opened: group → the sequences received on it, in order
    connections: list[dict[str, list[int]]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def last(self, group: str) -> int:
        return max((seqs[-1] for c in self.connections if (seqs := c.get(group))), default=0)

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                self._follow()
            except (ConnectionClosed, OSError) as error:
                self.errors.append(f"{type(error).__name__}: {error}")
                time.sleep(0.2)

    def _follow(self) -> None:
        headers = {"Authorization": f"Bearer {self.token}"}
        with connect(f"{self.ws_url}/ws/v1/stream", additional_headers=headers) as socket:
            received: dict[str, list[int]] = {group: [] for group in self.groups}
            after = {group: self.last(group) for group in self.groups}
            self.connections.append(received)
            for group in self.groups:
                frame = {"op": "SUBSCRIBE", "group": group, "afterSequence": after[group]}
                socket.send(json.dumps(frame))
            while not self.stop.is_set():
                try:
                    frame = json.loads(socket.recv(timeout=0.2))
                except TimeoutError:
                    continue
                if frame.get("op") == "EVENT":
                    event = frame["event"]
                    received[event["group"]].append(event["sequence"])
                elif frame.get("op") == "ERROR":
                    self.errors.append(json.dumps(frame))


def _heads(groups: list[str]) -> dict[str, int]:
    return dict(
        GroupLog.objects.filter(group_id__in=groups).values_list("group_id", "head_sequence")
    )


def test_redis_stopped_mid_stream_loses_nothing_and_writes_go_on(
    redis_server: PrivateRedis, worker_id: str
) -> None:
    """Issue 16 §8; wire.md §7 (hints are only hints), R16-01..R16-06."""
    groups, writers = load_writers(
        f"rds-{uuid.uuid4().hex[:6]}", groups=GROUPS, agents=max(CLIENTS, SUBSCRIBERS)
    )
    clients = load_clients(writers[:CLIENTS], groups, per_client=PER_CLIENT)
    environment = {"REDIS_URL": redis_server.url, "CELERY_BROKER_URL": redis_server.url}

    with session_server(worker_id, server="uvicorn", extra_env=environment) as server:
        subscribers = [
            Subscriber(server.ws_url, writer.token or "", groups)
            for writer in writers[:SUBSCRIBERS]
        ]
        threads = [threading.Thread(target=s.run, daemon=True) for s in subscribers]
        for thread in threads:
            thread.start()
        load = FailoverLoad([server.url], clients)
        load.start()
        load.wait_for_acks(int(load.total * STOP_AT))
        redis_server.stop()
        stopped_at = time.monotonic()
        received_at_stop = _received(subscribers)
        with httpx.Client(base_url=server.url, timeout=30) as http:
            readiness = http.get("/readyz").json()
        time.sleep(max(0.0, stopped_at + OUTAGE_S - time.monotonic()))
        acked_in_outage = sum(1 for a in load.acks() if stopped_at <= a.at)
        received_in_outage = _received(subscribers) - received_at_stop
        redis_server.start()
        restarted_at = time.monotonic()
        load.join()
        heads = _heads(groups)
        deadline = time.monotonic() + 60
        while any(s.last(g) < heads[g] for s in subscribers for g in groups):
            assert time.monotonic() < deadline, [
                {g: s.last(g) for g in groups} for s in subscribers
            ]
            time.sleep(0.05)
        # from the last acknowledgement to every subscriber holding every event
        delivered_after_last_ack_s = time.monotonic() - load.acks()[-1].at
        for subscriber in subscribers:
            subscriber.stop.set()
        for thread in threads:
            thread.join(timeout=10)

    # writes went on while Redis was away (hints are only hints), and after it came back
    assert acked_in_outage > 0
    assert any(a.at > restarted_at for a in load.acks()), "the load ended inside the outage"
    assert [log.refused for log in load.logs] == [[] for _ in load.logs]
    assert [log.failures for log in load.logs] == [[] for _ in load.logs]
    assert "redis" in readiness["failing"], readiness

    # every subscriber has every event of both groups, once per socket, in order, no gap
    for subscriber in subscribers:
        for group in groups:
            resumed_after = 0
            for received in subscriber.connections:
                sequences = received[group]
                if sequences:
                    assert sequences == list(range(sequences[0], sequences[0] + len(sequences))), (
                        group,
                        sequences,
                    )
                    assert sequences[0] <= resumed_after + 1, (group, resumed_after, sequences)
                    resumed_after = max(resumed_after, sequences[-1])
            assert resumed_after == heads[group]
        assert all("ERROR" not in error for error in subscriber.errors), subscriber.errors

    sockets = [len(s.connections) for s in subscribers]
    report(
        "redis_outage",
        {
            "size": "full" if proofs.FULL else "sample",
            "commands": load.total,
            "subscribers": SUBSCRIBERS,
            "outage_s": OUTAGE_S,
            "acknowledged_while_redis_away": acked_in_outage,
            "events_received_while_redis_away": received_in_outage,
            "sockets_per_subscriber": sockets,
            "load_after_restart_s": round(load.acks()[-1].at - restarted_at, 2),
            "all_delivered_after_last_ack_s": round(delivered_after_last_ack_s, 2),
        },
    )


def _received(subscribers: list[Subscriber]) -> int:
    """Events received so far by all ``subscribers``, over all their sockets."""
    return sum(len(seqs) for s in subscribers for c in s.connections for seqs in c.values())
