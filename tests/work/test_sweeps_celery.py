"""The lease sweep run by real Celery processes (R11.3-09, R11.5-01, R11.5-02, R11.5-03).

No eager mode, no mock clock: ``celery beat`` processes enqueue ``sweep_due_work`` every
0.5 s on the test run's Redis and ``celery worker`` processes run it against the test
database (``tests/celery_processes.py``); leases run out by the database clock. In the
SIGSTOP test the worker agent is a process of its own, talking HTTP to a real server
(``tests/live_server.py``) and signing with its own key (``tests/work/late_agent.py``).
"""

from __future__ import annotations

import ast
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from apps.work.models import WorkItem
from missionweave.protocol.identifiers import AUTHORITY
from missionweave.protocol.signing import b64url_encode, private_key_seed
from missionweave.protocol.timefmt import parse_timestamp
from missionweave.protocol.work.leases import reassign_command_id
from tests import factories
from tests.celery_processes import CeleryProcesses
from tests.factories import mission_body
from tests.ledger.checks import assert_log_consistent, event_documents
from tests.live_server import LiveServer, live_asgi_server
from tests.work.expiring import lease_cast, start_expiring_leases
from tests.work.lifecycle import contract, offer_body, offer_entry, submit

__all__ = ["live_asgi_server"]

pytestmark = [pytest.mark.e2e, pytest.mark.proof]

BASE_DIR = Path(__file__).resolve().parents[2]
AGENT_SCRIPT = Path(__file__).resolve().parent / "late_agent.py"
SWEEP_REPORT = re.compile(
    r"Task apps\.work\.tasks\.sweep_due_work\[[^\]]+\] succeeded in [^:]+: (\{[^}]*\})"
)
ITEMS = 200

StartCelery = Callable[..., AbstractContextManager[CeleryProcesses]]


def _sweep_reports(processes: CeleryProcesses) -> list[dict[str, int]]:
    """The counts every sweep task returned, as the workers logged them."""
    return [ast.literal_eval(found) for found in SWEEP_REPORT.findall(processes.log())]


def _reassigned(groups: list[str]) -> int:
    """How many items of ``groups`` were reassigned (once or more) and are due no more."""
    return WorkItem.objects.filter(
        group_id__in=groups, data__reassignments__gte=1, due_at__isnull=True
    ).count()


def _wait(
    condition: Callable[[], bool], what: str, processes: CeleryProcesses, timeout: float
) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        dead = [p.name for p in processes.processes if not p.running()]
        if dead or time.monotonic() > deadline:
            pytest.fail(f"{what} (exited: {dead or 'none'}):\n{processes.log()}")
        time.sleep(0.1)


def test_two_beats_and_two_workers_reassign_each_of_200_expired_leases_exactly_once(
    start_celery: StartCelery,
) -> None:
    """R11.3-09, R11.5-01: 200 leases of 1 s expire before the processes start; two
    ``celery beat`` processes each enqueue every sweep and two workers run them side by side.
    Every item gets exactly one ``lease.expired`` and one ``work.reassigned`` (one authority
    command, the deterministic id), however many sweeps selected it; the ``applied`` counts
    the workers returned add up to 200 and every other selection was skipped, replayed or
    refused; the logs are consistent with the projections."""
    started = time.monotonic()
    cast = lease_cast("celery", 2)
    leased = start_expiring_leases(cast, ITEMS, lease_ttl_s=1)
    built = time.monotonic() - started

    with start_celery(workers=2, beats=2, embedded_beat=False) as processes:
        _wait(
            lambda: _reassigned(cast.groups) == ITEMS,
            f"the {ITEMS} items were not all reassigned",
            processes,
            timeout=30,
        )
        done = len(_sweep_reports(processes))
        # a few more sweeps from both beats, so a second reassignment would have its chance
        processes.wait_for(SWEEP_REPORT.pattern, count=done + 4, timeout=10)
        reports = _sweep_reports(processes)

    assert sum(report["applied"] for report in reports) == ITEMS, reports
    busy = [report for report in reports if report["examined"]]
    others = sum(r["skipped"] + r["replayed"] + r["refused"] for r in busy)
    assert others == sum(r["examined"] for r in busy) - ITEMS, busy
    for group in cast.groups:
        documents = assert_log_consistent(group)
        kinds = Counter(
            (d["type"], d["payload"]["work_item"]) for d in documents if d["actor"] == AUTHORITY
        )
        items = {entry.item for entry in leased if entry.group == group}
        for item in items:
            assert kinds[("lease.expired", item)] == 1, item
            assert kinds[("work.reassigned", item)] == 1, item
        commands = {d["command_id"] for d in documents if d["actor"] == AUTHORITY}
        assert commands == {reassign_command_id(item, 1) for item in items}
    rows = WorkItem.objects.filter(group_id__in=cast.groups)
    by_key = {(row.group_id, row.work_item_id): row for row in rows}
    for entry in leased:
        row = by_key[(entry.group, entry.item)]
        assert row.state == ("open" if entry.next_worker is None else "offered"), entry
        assert row.data["reassignments"] == 1
    print(f"\n{ITEMS} leases built in {built:.1f} s; {len(busy)} sweeps found due work: {busy}")


def _read_line(process: subprocess.Popen, timeout: float = 30.0) -> dict[str, Any]:
    """The agent's next JSON line (it prints one per step), waiting at most ``timeout``."""
    assert process.stdout is not None
    with ThreadPoolExecutor(max_workers=1) as reader:
        try:
            line = reader.submit(process.stdout.readline).result(timeout=timeout)
        except TimeoutError:
            process.kill()  # EOF for the reader thread
            line = ""
    if not line:
        process.wait(timeout=10)
        stderr = process.stderr.read() if process.stderr else ""
        pytest.fail(f"the agent printed nothing (exit {process.returncode}):\n{stderr}")
    return json.loads(line)


def test_a_frozen_worker_process_is_reassigned_by_celery_and_its_late_submit_is_audit_only(
    live_asgi_server: LiveServer, celery_processes: CeleryProcesses
) -> None:
    """R11.3-09, R11.5-01, R11.5-02, R11.5-03: a worker *process* starts a WorkItem over HTTP
    with a 2 s lease, and is frozen with SIGSTOP. Nothing renews the lease; the Celery sweep
    (a real worker and beat) expires it and reassigns the item to the next eligible worker.
    Thawed with SIGCONT, the agent submits its result as if nothing happened: the authority
    answers 202 with ``work.late_result_recorded``, keeps the result for audit in the log and
    in the projection's ``late_result_log``, and the item stays reassigned — never
    submitted, never verified."""
    org = factories.organization("org-late")
    alice = factories.human("alice-late", staff=True)
    group = factories.group("g-late", org)
    coordinator = factories.agent("late-coord", org)
    frozen = factories.agent("late-worker", org)  # its process opens its own session
    successor = factories.agent("late-next", org)
    factories.grant(alice, group, coordinator, "coordinator")
    factories.grant(alice, group, frozen, "worker")
    factories.grant(alice, group, successor, "worker")
    coordinator.open_session()
    submit(coordinator, group, "mission.create", mission_body("m-late"))
    item = "wi-late"
    authorize = {"work_item": item, "mission": "m-late", "contract": contract(), "depends_on": []}
    submit(coordinator, group, "work.authorize", authorize)
    offers = [offer_entry("o-frozen", frozen), offer_entry("o-next", successor)]
    submit(coordinator, group, "work.offer", offer_body(item, offers, mode="urgent"))

    def row() -> WorkItem:
        return WorkItem.objects.get(group_id=group, work_item_id=item)

    agent = subprocess.Popen(
        [
            sys.executable,
            str(AGENT_SCRIPT),
            live_asgi_server.url,
            frozen.id,
            group,
            item,
            "o-frozen",
        ],
        cwd=BASE_DIR,
        env={
            **os.environ,
            "PYTHONPATH": str(BASE_DIR),
            "MWP_AGENT_KEY_SEED": b64url_encode(private_key_seed(frozen.key)),
        },
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        started = _read_line(agent)
        assert started["status"] == 201, started
        lease_id = started["body"]["result"]["lease"]["lease_id"]
        expires_at = started["body"]["result"]["lease"]["expires_at"]
        agent.send_signal(signal.SIGSTOP)  # frozen: no renewal, no submit

        _wait(
            lambda: row().data["reassignments"] == 1,
            "the Celery sweep did not reassign the frozen worker's item",
            celery_processes,
            timeout=20,
        )
        assert agent.poll() is None  # still there, still frozen
        reassigned = row()
        assert (reassigned.state, reassigned.owner) == ("offered", "")
        assert reassigned.data["lease"]["status"] == "expired"
        head_before = len(event_documents(group))

        agent.send_signal(signal.SIGCONT)
        assert agent.stdin is not None
        agent.stdin.write("submit\n")
        agent.stdin.flush()
        answer = _read_line(agent)
        assert agent.wait(timeout=10) == 0
    finally:
        if agent.poll() is None:
            agent.send_signal(signal.SIGCONT)
            agent.kill()
            agent.wait(timeout=10)

    assert answer["status"] == 202, answer
    body = answer["body"]
    assert [event["type"] for event in body["events"]] == ["work.late_result_recorded"]
    assert body["result"] == {"late_result": True, "state": "offered"}

    documents = assert_log_consistent(group)
    assert len(documents) == head_before + 1
    late = documents[-1]
    assert (late["type"], late["actor"]) == ("work.late_result_recorded", frozen.principal)
    assert late["payload"]["lease_id"] == lease_id
    assert late["payload"]["former_owner"] == frozen.principal
    # kept once per (the epoch it held, the content): a retry of it would only be answered
    assert late["payload"]["former_ownership_epoch"] == 1
    assert late["payload"]["late_result_key"]
    swept = [d for d in documents if d["actor"] == AUTHORITY]
    assert [d["type"] for d in swept] == ["lease.expired", "work.reassigned", "work.offered"]
    assert swept[0]["payload"]["lease_id"] == lease_id
    # the sweep acted on the database clock, only once the lease had run out (R11.3-09)
    assert parse_timestamp(swept[0]["recorded_at"]) >= parse_timestamp(expires_at)
    reassigned_event = next(d for d in documents if d["type"] == "work.reassigned")
    assert reassigned_event["payload"]["offered_to"] == successor.principal

    final = row()
    assert final.state == "offered"  # R11.5-03: not submitted, not verified
    assert final.data["submission"] is None
    assert final.data["late_results"] == 1
    (entry,) = final.data["late_result_log"]
    assert (entry["former_owner"], entry["lease_id"]) == (frozen.principal, lease_id)
    assert entry["sequence"] == late["sequence"]
    open_offers = [o["worker"] for o in final.data["offers"] if o["status"] == "open"]
    assert open_offers == [successor.principal]
    reports = _sweep_reports(celery_processes)
    assert sum(report["applied"] for report in reports) == 1, reports
