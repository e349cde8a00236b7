"""PostgreSQL restarted mid-load (issue 16 §8).

A server process (uvicorn, as deployed) on a PostgreSQL cluster of the test's own
(``tests/faults/private_postgres.py``), under signed commands from client threads. Mid-load
the cluster is stopped as a crash stops it (``pg_ctl stop -m immediate``: no checkpoint,
every session cut), kept away for a while, and started again; the server is not touched.

What must hold: while PostgreSQL is away, every answer is ``503`` with ``Retry-After`` and
the wire.md §8 document — never a 500, never a hang; the clients send the same envelopes
again when told to, and once PostgreSQL is back the same server process serves them with no
restart; every acknowledged command is in its log exactly once, nothing unacknowledged is,
no log has a gap, and the chains and projections verify (wire.md §3 step 5, §6).
"""

from __future__ import annotations

import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests import proofs
from tests.faults.private_log_checks import log_figures
from tests.faults.private_postgres import (
    DATABASE,
    PrivatePostgres,
    copy_test_database,
)
from tests.faults.reporting import report
from tests.live_server import LiveServer, run_live_server
from tests.scale.failover_load import FailoverLoad
from tests.scale.writers import load_clients, load_writers

pytestmark = [pytest.mark.e2e, pytest.mark.chaos]

GROUPS = 2
CLIENTS = proofs.size(sample=4, full=8)
PER_CLIENT = proofs.size(sample=60, full=250)
OUTAGE_S = proofs.size(sample=6, full=10)
#: the share of the load acknowledged when PostgreSQL is stopped
STOP_AT = 0.3


def _probe(server: LiveServer, token: str, group: str) -> dict[str, httpx.Response]:
    """What each kind of request is answered, asked side by side: the command edge's read, a
    DRF view, the readiness check, a dashboard page (a session cookie makes it read its
    session from the database)."""
    bearer = {"Authorization": f"Bearer {token}"}
    requests = {
        "events": (f"/api/v1/groups/{group}/events?after=0", bearer),
        "sessions/current": ("/api/v1/sessions/current", bearer),
        "readyz": ("/readyz", {}),
        "dashboard": ("/", {"Cookie": "sessionid=faults-probe"}),
    }
    with (
        httpx.Client(base_url=server.url, timeout=30) as http,
        ThreadPoolExecutor(max_workers=len(requests)) as pool,
    ):
        answers = {
            name: pool.submit(http.get, path, headers=headers)
            for name, (path, headers) in requests.items()
        }
        return {name: answer.result() for name, answer in answers.items()}


def test_postgres_restarted_mid_load_is_503_with_retry_after_and_loses_nothing(
    cluster: PrivatePostgres, worker_id: str
) -> None:
    """Issue 16 §8; wire.md §3 step 5, §6, §8."""
    groups, writers = load_writers(f"pgr-{uuid.uuid4().hex[:6]}", groups=GROUPS, agents=CLIENTS)
    copy_test_database(cluster)
    clients = load_clients(writers, groups, per_client=PER_CLIENT)

    with run_live_server(
        database_name=DATABASE,
        channel_prefix=f"mwp-faults-{worker_id}-{uuid.uuid4().hex[:8]}",
        extra_env={"DATABASE_URL": cluster.url},
        server="uvicorn",
    ) as server:
        load = FailoverLoad([server.url], clients, max_retry_after_s=0.25)
        load.start()
        load.wait_for_acks(int(load.total * STOP_AT))
        cluster.stop("immediate")
        stopped_at = time.monotonic()
        acknowledged_at_stop = load.acknowledged
        # a request waits for a connection up to the pool's timeout (5 s), then is answered
        during = _probe(server, writers[0].token, groups[0])
        time.sleep(max(0.0, stopped_at + OUTAGE_S - time.monotonic()))
        cluster.start()
        started_at = time.monotonic()
        logs = load.join()
        after = _probe(server, writers[0].token, groups[0])
        server_log = server.log()

    unavailable = [answer for log in logs for answer in log.unavailable]
    acks = load.acks()
    # the premises: the outage fell inside the load, and the clients met it
    assert acknowledged_at_stop < load.total
    assert unavailable, "no client was answered 503 while PostgreSQL was away"

    # during the outage: 503, Retry-After and the §8 document (a styled page in the
    # dashboard), whatever was asked; the readiness probe names the database
    readiness = during.pop("readyz")
    assert (readiness.status_code, readiness.json()["failing"][:1]) == (503, ["database"])
    for name, response in during.items():
        assert response.status_code == 503, (name, response.status_code, response.text[:300])
        assert response.headers.get("Retry-After", "").isdigit(), (name, response.headers)
        if name != "dashboard":
            assert response.json()["error"]["code"] == "UNAVAILABLE", response.text
    assert "text/html" in during["dashboard"].headers["Content-Type"]
    assert "Back in a moment" in during["dashboard"].text
    assert all(answer.retry_after and answer.retry_after.isdigit() for answer in unavailable)
    assert " 500 " not in server_log
    assert "Internal Server Error" not in server_log

    # after it, the same process serves everything again
    assert [log.refused for log in logs] == [[] for _ in logs]
    assert [log.abandoned for log in logs] == [[] for _ in logs]
    assert [log.failures for log in logs] == [[] for _ in logs], "the server itself went away"
    # (no beat runs here, so readiness may fail on that, but not on the database)
    assert "database" not in after.pop("readyz").json()["failing"]
    assert {name: response.status_code for name, response in after.items()} == {
        "events": 200,
        "sessions/current": 200,
        "dashboard": 302,
    }

    with cluster.connect() as database:
        figures = log_figures(
            database, cluster.url, groups=groups, acknowledged=[a.command_id for a in acks]
        )
    assert (figures.acknowledged, figures.found) == (load.total, load.total)
    assert (figures.duplicates, figures.unacknowledged, figures.gaps) == (0, 0, 0)
    assert figures.heads_behind == 0
    assert figures.groups_verified >= GROUPS

    first_after = min((a.at for a in acks if a.at > started_at), default=None)
    report(
        "postgres_restart",
        {
            "size": "full" if proofs.FULL else "sample",
            "clients": CLIENTS,
            "commands": load.total,
            "outage_s": OUTAGE_S,
            "acknowledged_at_stop": acknowledged_at_stop,
            "answered_503": len(unavailable),
            "answered_500": 0,
            "found": figures.found,
            "duplicates": figures.duplicates,
            "gaps": figures.gaps,
            "replayed": sum(1 for a in acks if a.replayed),
            "first_ack_after_start_s": None
            if first_after is None
            else round(first_after - started_at, 3),
            "last_503_after_start_s": round(
                max(answer.at for answer in unavailable) - started_at, 3
            ),
            "stopped_for_s": round(started_at - stopped_at, 2),
        },
    )
