"""``kill -9`` of the server at a random point of a load, again and again (issue 16 §8).

Each trial: a server process (uvicorn, as deployed), client threads sending a load of signed
commands over HTTP, and — when a number of acknowledgements drawn at random has arrived —
SIGKILL to the server, as a crash or the OOM killer would. A new server is started on the
same port, as a supervisor would; meanwhile every client whose request failed at the
transport sends *the same envelope* again until it is answered (the only safe retry: the
command may have committed before its answer was lost, and the authority answers a command
id it already accepted as an idempotent replay, wire.md §3 step 5).

After every trial: every command acknowledged, every acknowledged command in its log exactly
once and nothing else there, no gap, every head row at its last event; after all of them,
``rebuild_projections --verify`` (hash chains, projections equal to a replay).

``make test`` runs a bounded sample; ``make chaos`` runs 20 trials of 1,000 commands.
"""

from __future__ import annotations

import os
import random
import signal
import socket
import statistics
import time
import uuid
from contextlib import ExitStack
from typing import Any

import psycopg
import pytest
from django.db import connection

from tests import proofs
from tests.faults.private_log_checks import log_figures, suite_database_url, verify_rebuild
from tests.faults.reporting import report
from tests.live_server import run_live_server
from tests.scale.failover_load import FailoverLoad
from tests.scale.writers import load_clients, load_writers

pytestmark = [pytest.mark.e2e, pytest.mark.chaos]

TRIALS = proofs.size(sample=3, full=20)
CLIENTS = proofs.size(sample=4, full=8)
COMMANDS = proofs.size(sample=160, full=1000)  # per trial
GROUPS = 4
#: the draw of each kill point; reported, so a failing trial can be run again
SEED = int(os.environ.get("MWP_CHAOS_SEED") or time.time_ns() % 1_000_000)
#: the kill comes before half the load is acknowledged: a kill drawn later could land after
#: the last command (the load goes on while the test reacts to the count), and a trial where
#: no client meets the dead server proves nothing. With the writes folded into one statement
#: (issue 38) the last tenth — 16 commands of the CI sample — could finish on a loaded
#: machine before the test's thread was scheduled to kill: CI saw it once
KILL_BEFORE = COMMANDS // 2


def _wait_until_released(port: int, timeout_s: float = 10.0) -> None:
    """Until the killed server's listening socket is gone and ``port`` can be bound again.
    (Its process turns zombie before its last threads have exited and dropped their files,
    so the process state alone does not tell.)"""
    deadline = time.monotonic() + timeout_s
    while True:
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(("127.0.0.1", port))
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise
        time.sleep(0.005)


def _trial(
    number: int,
    writers: list[Any],
    groups: list[str],
    kill_at: int,
    channel_prefix: str,
    earlier: set[str],
) -> dict[str, Any] | None:
    """One load with one kill; its figures, after asserting nothing was lost or doubled.
    ``earlier``: the commands the trials before acknowledged in the same groups (this
    trial's are added). ``None`` when no client met the dead server: the load had ended
    before the kill landed (its integrity is still asserted), which proves nothing of a
    crash under load."""
    clients = load_clients(writers, groups, per_client=COMMANDS // CLIENTS)
    database_name = connection.settings_dict["NAME"]
    with ExitStack() as stack:
        first = stack.enter_context(
            run_live_server(
                database_name=database_name, channel_prefix=channel_prefix, server="uvicorn"
            )
        )
        port = int(first.url.rsplit(":", 1)[1])
        load = FailoverLoad([first.url], clients)
        load.start()
        load.wait_for_acks(kill_at)
        os.kill(first.pid, signal.SIGKILL)
        killed_at = time.monotonic()
        _wait_until_released(port)
        acknowledged_at_kill = load.acknowledged
        stack.enter_context(
            run_live_server(
                database_name=database_name,
                channel_prefix=channel_prefix,
                server="uvicorn",
                port=port,
            )
        )
        restarted_at = time.monotonic()
        logs = load.join()

    assert [log.refused for log in logs] == [[] for _ in logs], f"trial {number}"
    assert [log.abandoned for log in logs] == [[] for _ in logs], f"trial {number}"
    acks = load.acks()
    sent = {command_id for client in clients for command_id in client.sent}
    assert len(acks) == len(sent) == load.total, f"trial {number}"
    assert {ack.command_id for ack in acks} == sent
    earlier |= sent
    url = suite_database_url()
    with psycopg.connect(url, autocommit=True) as database:
        figures = log_figures(database, url, groups=groups, acknowledged=earlier, verify=False)
    # acknowledged = found; nothing doubled, nothing unacknowledged, no gap, heads right
    assert figures.found == figures.acknowledged == len(earlier), f"trial {number}"
    assert (figures.duplicates, figures.unacknowledged, figures.gaps) == (0, 0, 0), number
    assert figures.heads_behind == 0, f"trial {number}"
    failures = [f for log in logs for f in log.failures]
    if not failures:
        return None
    return {
        "acknowledged_at_kill": acknowledged_at_kill,
        "found": figures.found,
        "transport_failures": len(failures),
        "replayed": sum(1 for ack in acks if ack.replayed),
        "restart_s": restarted_at - killed_at,
        # kill → every client that met the dead server served again (by the new one)
        "kill_to_all_served_s": max(
            min(a.at for a in log.acks if a.at > log.failures[0].at) - killed_at
            for log in logs
            if log.failures
        ),
    }


def test_kill_9_of_the_server_at_random_points_loses_and_doubles_nothing(
    transactional_db: None, worker_id: str
) -> None:
    """Issue 16 §8; wire.md §3 step 5, §6."""
    draw = random.Random(SEED)
    groups, writers = load_writers(f"k9-{uuid.uuid4().hex[:6]}", groups=GROUPS, agents=CLIENTS)
    prefix = f"mwp-faults-{worker_id}-{uuid.uuid4().hex[:8]}"
    trials: list[dict[str, Any]] = []
    acknowledged: set[str] = set()
    # a kill the test's thread was scheduled too late to land inside the load (a loaded CI
    # machine, CI saw it twice) is drawn again, counted and reported; it cannot be most of them
    attempts = late = 0
    while len(trials) < TRIALS:
        attempts += 1
        assert attempts <= 2 * TRIALS, f"{late} of {attempts} kills landed after the load"
        kill_at = draw.randrange(1, KILL_BEFORE)
        trial = _trial(attempts - 1, writers, groups, kill_at, prefix, acknowledged)
        if trial is None:
            late += 1
            continue
        trials.append(trial)
    assert len(acknowledged) == attempts * COMMANDS
    verified = verify_rebuild(suite_database_url())
    assert verified >= GROUPS

    report(
        "server_kills",
        {
            "size": "full" if proofs.FULL else "sample",
            "seed": SEED,
            "trials": TRIALS,
            "kills_after_the_load_drawn_again": late,
            "commands_per_trial": COMMANDS,
            "clients": CLIENTS,
            "kill_points": [t["acknowledged_at_kill"] for t in trials],
            "acknowledged": len(acknowledged),
            "found": trials[-1]["found"],  # cumulative: every trial's, in the logs at the end
            "duplicates": 0,
            "gaps": 0,
            "groups_verified": verified,
            "replayed_after_kill": sum(t["replayed"] for t in trials),
            "transport_failures": sum(t["transport_failures"] for t in trials),
            "restart_s_median": round(statistics.median(t["restart_s"] for t in trials), 2),
            "kill_to_all_served_s_median": round(
                statistics.median(t["kill_to_all_served_s"] for t in trials), 2
            ),
            "kill_to_all_served_s_max": round(max(t["kill_to_all_served_s"] for t in trials), 2),
        },
    )
