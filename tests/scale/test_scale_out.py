"""Scale-out proven on one machine, with ``kill -9`` (issue 15 §6).

One deployment: two ASGI server processes, two Celery workers and one ``celery beat``, all
against one PostgreSQL and one Redis (``tests/scale/topology.py``). Client threads send
signed commands over HTTP, spread over both servers (``tests/scale/failover_load.py``);
meanwhile a sweep has due leases to reassign. Mid-load, one worker is killed inside a sweep,
the beat is killed with it and started again on its schedule file (issue 16 §8), and one
server is killed under the clients. Nothing acknowledged may be lost or doubled, no
log may gap or break its hash chain, every due item is reassigned exactly once, and the
survivors carry on.

It is a long proof (``tests/proofs.py``): ``make test`` runs a sample, ``make proofs`` and
``make scale`` the full size; ``make scale`` runs it alone and writes the figures that
``docs/reliability.md`` reports (``MWP_SCALE_REPORT``).
"""

from __future__ import annotations

import io
import json
import os
import time
import uuid
from collections import Counter
from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection

from apps.ledger.models import Event, GroupLog
from apps.work.models import WorkItem
from missionweave.protocol.identifiers import AUTHORITY
from missionweave.protocol.work.leases import reassign_command_id
from tests import proofs
from tests.celery_processes import CeleryProcesses
from tests.ledger.checks import assert_log_consistent
from tests.scale.failover_load import FailoverLoad, recovery, send_again
from tests.scale.topology import (
    SERVER,
    enter_together,
    holding_head_lock,
    kill_celery,
    lock_waiters,
    run_servers,
    start_beat,
    sweeps_finished,
    sweeps_in_flight,
    wait_until,
)
from tests.scale.writers import load_clients, load_writers
from tests.work.expiring import Leased, lease_cast, start_expiring_leases, wait_until_expired

pytestmark = [pytest.mark.e2e, pytest.mark.proof]

SERVERS = 2
WORKERS = 2
LOAD_GROUPS = proofs.size(sample=4, full=16)
CLIENTS = proofs.size(sample=6, full=16)
PER_CLIENT = proofs.size(sample=80, full=500)
LEASE_GROUPS = proofs.size(sample=3, full=8)
DUE_ITEMS = proofs.size(sample=90, full=1000)
#: the share of the load acknowledged when the worker, then the server, is killed
KILL_WORKER_AT = 0.25
KILL_SERVER_AT = 0.5

StartCelery = Callable[..., AbstractContextManager[CeleryProcesses]]


def _reassigned(groups: list[str]) -> int:
    """Items of ``groups`` reassigned (once or more) and due no more."""
    return WorkItem.objects.filter(
        group_id__in=groups, data__reassignments__gte=1, due_at__isnull=True
    ).count()


def _missing_sequences(group: str) -> int:
    """Sequence numbers 1..head with no event (a gap), counted rather than asserted, so the
    report says how many there were."""
    head = GroupLog.objects.get(group_id=group).head_sequence
    stored = set(Event.objects.filter(group_id=group).values_list("sequence", flat=True))
    return len(set(range(1, head + 1)) - stored)


def _reassigned_exactly_once(groups: list[str], leased: list[Leased]) -> int:
    """Items with exactly one ``lease.expired`` and one ``work.reassigned``, both under the
    one deterministic command id, after asserting every log consistent."""
    once = 0
    for group in groups:
        documents = assert_log_consistent(group)
        swept = [d for d in documents if d["actor"] == AUTHORITY]
        kinds = Counter((d["type"], d["payload"]["work_item"]) for d in swept)
        commands = {d["command_id"] for d in swept}
        items = {entry.item for entry in leased if entry.group == group}
        assert commands == {reassign_command_id(item, 1) for item in items}, group
        once += sum(
            1
            for item in items
            if kinds[("lease.expired", item)] == 1 and kinds[("work.reassigned", item)] == 1
        )
    return once


def _verify_rebuild() -> int:
    """``manage.py rebuild_projections --verify`` over every group: chains verify and the
    projections equal a replay. The number of groups it found matching."""
    out = io.StringIO()
    call_command("rebuild_projections", verify=True, stdout=out)
    matched = out.getvalue().count("projections match")
    assert matched == GroupLog.objects.count(), out.getvalue()
    return matched


def _assert_nothing_lost_or_doubled(
    load: FailoverLoad, load_groups: list[str], lease_groups: list[str]
) -> dict[str, int]:
    """Every command acknowledged, every acknowledged command in its group's log exactly
    once and nothing else there; no gap in any log, every chain verifies, every projection
    equals a replay (wire.md §6). The counts, for the report."""
    assert [log.refused for log in load.logs] == [[] for _ in load.logs]
    assert [log.abandoned for log in load.logs] == [[] for _ in load.logs]
    acks = load.acks()
    acknowledged = {ack.command_id for ack in acks}
    assert len(acks) == len(acknowledged) == load.total
    created = Counter(
        Event.objects.filter(group_id__in=load_groups, type="mission.created").values_list(
            "command_id", flat=True
        )
    )
    found = sum(1 for command_id in acknowledged if created[command_id] >= 1)
    duplicates = sum(count - 1 for count in created.values() if count > 1)
    gaps = sum(_missing_sequences(group) for group in [*load_groups, *lease_groups])
    assert (found, duplicates, gaps) == (load.total, 0, 0)
    assert set(created) == acknowledged
    for group in load_groups:
        assert_log_consistent(group)
    return {
        "sent": load.total,
        "acknowledged": len(acknowledged),
        "found": found,
        "duplicates": duplicates,
        "gaps": gaps,
        "replayed_in_load": sum(1 for ack in acks if ack.replayed),
        "groups_verified": _verify_rebuild(),
    }


def _report(figures: dict[str, Any]) -> None:
    """Print the figures; under ``make scale`` also write them where the target reads them."""
    text = json.dumps(figures, indent=2, sort_keys=True)
    print(f"\nscale-out figures:\n{text}")
    target = os.environ.get("MWP_SCALE_REPORT")
    if target:
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        Path(target).write_text(text + "\n")


def test_kill_9_of_a_server_and_a_worker_mid_load_loses_and_doubles_nothing(
    start_celery: StartCelery, worker_id: str
) -> None:
    """Issue 15 §6, R11.3-09, R11.5-01, wire.md §3 step 5 and §6.

    Due work first: leases that ran out in a few groups (``tests/work/expiring.py``). The
    head row of the last of those groups is held locked, so the sweeps commit the groups
    before it and then wait inside their transaction on this one: both workers are certainly
    mid-sweep. Then the load: clients on both servers send signed commands. With a quarter of
    it acknowledged, worker 0 and the beat are killed with SIGKILL, a new beat is started on
    the same schedule file, and the lock is released; with half, server
    0 is killed the same way, and its clients send the command that failed, the same
    envelope, to the other server.

    Then: every command is acknowledged, and every acknowledged command is in its group's log
    exactly once. Whether a retry met a command that had committed depends on when the kill
    fell, so each client of the dead server also sends the last command that server
    acknowledged again to the other one: it is answered as a replay. No log has a
    gap, every hash chain verifies and ``rebuild_projections --verify`` matches; every due
    item was reassigned exactly once; the other worker and the beat kept sweeping. How long
    the clients of the dead server went unserved is measured and reported, not asserted."""
    phases = _Phases()
    load_average_before = os.getloadavg()
    cast = lease_cast("scale-sweep", LEASE_GROUPS)
    leased = start_expiring_leases(cast, DUE_ITEMS, lease_ttl_s=1)
    load_groups, writers = load_writers("scale-load", groups=LOAD_GROUPS, agents=CLIENTS)
    wait_until_expired(leased)
    phases.mark("build")

    database_name = connection.settings_dict["NAME"]
    prefix = f"mwp-scale-{worker_id}-{uuid.uuid4().hex[:8]}"
    held_group = cast.groups[-1]  # built last, so due last: the sweeps reach it last
    with ExitStack() as stack:
        release_held_group = stack.enter_context(holding_head_lock(held_group))
        processes, servers = enter_together(
            stack,
            [
                start_celery(workers=WORKERS, beats=0, embedded_beat=False, channel_prefix=prefix),
                run_servers(SERVERS, database_name=database_name, channel_prefix=prefix),
            ],
        )
        victim, survivor = processes.workers
        beat = start_beat(processes, database_name=database_name, channel_prefix=prefix)
        wait_until(
            lambda: lock_waiters(processes) == WORKERS,
            f"both workers' sweeps should be waiting for {held_group}'s head lock",
            alive=processes.processes,
            log=processes.log,
            timeout=60,
        )
        phases.mark("start")

        load = FailoverLoad(
            [server.url for server in servers],
            load_clients(writers, load_groups, per_client=PER_CLIENT),
        )
        load.start()

        load.wait_for_acks(int(load.total * KILL_WORKER_AT))
        in_flight = sweeps_in_flight(victim)
        reassigned_at_kill = _reassigned(cast.groups)
        kill_celery(victim)
        # the beat dies too, and is started again as a supervisor would: the same command
        # line, so the same schedule file, which the kill may have left half-written
        killed_beat = beat
        sends_before_kill = killed_beat.log().count("Sending due task")
        kill_celery(killed_beat)
        beat = start_beat(
            processes, database_name=database_name, channel_prefix=prefix, schedule_file=0
        )
        release_held_group()
        finished_by_survivor = sweeps_finished(survivor)

        load.wait_for_acks(int(load.total * KILL_SERVER_AT))
        server_killed_at = time.monotonic()  # before: no failure may be stamped earlier
        servers[0].kill()
        logs = load.join()
        phases.mark("load")
        moved = [index for index, log in enumerate(logs) if log.home == 0]
        # a client whose answer is lost after its command committed sends it again: each
        # client of the dead server sends the command it acknowledged last to the other one
        replays = [
            send_again(servers[1].url, load.clients[index], logs[index].last_acknowledged_by(0))
            for index in moved
        ]

        wait_until(
            lambda: _reassigned(cast.groups) == DUE_ITEMS,
            f"the {DUE_ITEMS} due items were not all reassigned after the kill",
            alive=[survivor, beat],
            log=processes.log,
            timeout=120,
        )
        # the beat and the other worker carry on: the restarted beat sends sweeps (it may
        # start slowly on a loaded machine, and the killed beat's backlog alone can keep
        # the survivor busy meanwhile), and the survivor runs more of them after that
        wait_until(
            lambda: beat.log().count("Sending due task") > 0,
            "the restarted beat never sent a sweep",
            alive=[survivor, beat],
            log=processes.log,
            timeout=60,
        )
        finished_after_restart = sweeps_finished(survivor)
        wait_until(
            lambda: sweeps_finished(survivor) >= finished_after_restart + 3,
            "the surviving worker stopped sweeping",
            alive=[survivor, beat],
            log=processes.log,
            timeout=30,
        )
        restarted_beat_sends = beat.log().count("Sending due task")
        assert processes.ping(worker=1) == "pong"
        assert survivor.running()
        assert beat.running()
        assert not victim.running()
        assert not killed_beat.running()
        phases.mark("drain")

    # the premises: the worker died inside a sweep that had work left, the server under load
    assert in_flight, f"worker 0 had no sweep in flight when killed:\n{processes.log()}"
    assert sends_before_kill > 0, "the killed beat had not sent a sweep"
    assert reassigned_at_kill < DUE_ITEMS
    for index in moved:
        assert any(f.server == 0 and f.at >= server_killed_at for f in logs[index].failures), (
            f"client {index} never saw the server die"
        )

    assert [(r.status_code, r.headers.get("Idempotent-Replayed")) for r in replays] == [
        (201, "true") for _ in moved
    ]
    load_figures = _assert_nothing_lost_or_doubled(load, load_groups, cast.groups)
    phases.mark("verify_logs")

    # every due item reassigned exactly once, by whichever sweep got there first
    once = _reassigned_exactly_once(cast.groups, leased)
    assert once == DUE_ITEMS
    rows = {(row.group_id, row.work_item_id): row for row in WorkItem.objects.all()}
    for entry in leased:
        row = rows[(entry.group, entry.item)]
        assert row.state == ("open" if entry.next_worker is None else "offered"), entry
        assert row.data["reassignments"] == 1, entry
    phases.mark("verify_sweep")

    # the clients of the dead server were all served again by the other one
    for index in moved:
        assert any(ack.at > server_killed_at and ack.server == 1 for ack in logs[index].acks)
    acks = load.acks()
    measured = recovery(
        acks,
        killed_at=server_killed_at,
        killed_server=0,
        moved=moved,
        started_at=load.started_at,
    )
    _report(
        {
            "size": "full" if proofs.FULL else "sample",
            "server": SERVER or "harness default",
            "servers": SERVERS,
            "workers": WORKERS,
            "beats": 1,
            "beats_killed_and_restarted": 1,
            "sends_by_restarted_beat": restarted_beat_sends,
            "clients": CLIENTS,
            "load_groups": LOAD_GROUPS,
            **load_figures,
            "replayed_when_sent_again": len(replays),
            "transport_failures": sum(len(log.failures) for log in logs),
            "clients_moved": len(moved),
            "due_items": DUE_ITEMS,
            "lease_groups": LEASE_GROUPS,
            "reassigned_at_worker_kill": reassigned_at_kill,
            "reassigned_exactly_once": once,
            "sweeps_by_survivor_after_kill": sweeps_finished(survivor) - finished_by_survivor,
            "load_s": round(acks[-1].at - load.started_at, 2),
            "phases_s": phases.durations,
            # other work on the machine shares its cores: the figures are this run's
            "load_average_before": [round(value, 2) for value in load_average_before],
            "load_average_after": [round(value, 2) for value in os.getloadavg()],
            **{key: _rounded(value) for key, value in asdict(measured).items()},
        }
    )


class _Phases:
    """Wall time of each phase, for the report (where a CI run spends its minute)."""

    def __init__(self) -> None:
        self.durations: dict[str, float] = {}
        self._last = time.monotonic()

    def mark(self, name: str) -> None:
        now = time.monotonic()
        self.durations[name] = round(now - self._last, 1)
        self._last = now


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)
