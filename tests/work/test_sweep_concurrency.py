"""The lease sweep under real concurrency on PostgreSQL (R11.3-09, R11.5-01, R11.5-03).

``apps.work.sweeps.sweep_due`` is safe to run twice at once (two beats, a retried task): the
reassignment's command id is derived from (WorkItem, ownership epoch), so a second
submission is an idempotent replay, and under the group lock the decider re-checks that the
item is still due. These tests run the real function in real threads, each with its own
database connection, over leases that really expired by the database clock.
"""

from __future__ import annotations

import io
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection, transaction

from apps.ledger.write_path import AuthorityCommand, submit_authority_batch
from apps.work.models import WorkItem
from apps.work.sweeps import DEFAULT_LIMIT, SweepReport, due_work_items, sweep_due
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.identifiers import AUTHORITY
from missionweave.protocol.timefmt import parse_timestamp
from missionweave.protocol.work.leases import REASSIGN, reassign_command_id
from tests.ledger.checks import assert_log_consistent, event_documents
from tests.ledger.concurrency import run_in_threads
from tests.work.expiring import (
    Leased,
    lease_cast,
    start_expiring_leases,
    wait_until_expired,
)
from tests.work.lifecycle import submit

ITEMS = 1000
GROUPS = 4

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.proof]


def _events_by_item(groups: list[str]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """Every WorkItem event of ``groups`` by (group, work item), in log order."""
    found: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for group in groups:
        for document in event_documents(group):
            item = document["payload"].get("work_item")
            if item is not None:
                found.setdefault((group, item), []).append(document)
    return found


def _assert_reassigned_once(leased: list[Leased], groups: list[str]) -> None:
    """Per item: one ``lease.expired`` and one ``work.reassigned``, in one authority command
    with the deterministic id, followed by ``work.offered`` to the next eligible worker when
    there is one (R11.5-01); the projection agrees (offered/open, no owner, nothing due)."""
    events = _events_by_item(groups)
    rows = {
        (row.group_id, row.work_item_id): row
        for row in WorkItem.objects.filter(group_id__in=groups)
    }
    for entry in leased:
        documents = events[(entry.group, entry.item)]
        kinds = Counter(document["type"] for document in documents)
        assert kinds["lease.expired"] == 1, (entry, kinds)
        assert kinds["work.reassigned"] == 1, (entry, kinds)
        swept = [d for d in documents if d["actor"] == AUTHORITY]
        expected = ["lease.expired", "work.reassigned"]
        if entry.next_worker is not None:
            expected.append("work.offered")
        assert [d["type"] for d in swept] == expected, (entry, swept)
        assert {d["command_id"] for d in swept} == {reassign_command_id(entry.item, 1)}
        first = swept[0]["sequence"]
        assert [d["sequence"] for d in swept] == list(range(first, first + len(swept)))
        expired, reassigned = swept[0]["payload"], swept[1]["payload"]
        assert (expired["lease_id"], expired["agent"]) == (entry.lease_id, entry.owner)
        assert expired["expires_at"] == entry.expires_at
        assert parse_timestamp(swept[0]["recorded_at"]) >= parse_timestamp(entry.expires_at)
        assert reassigned["reason"] == "lease_expired"
        assert reassigned["from_owner"] == entry.owner
        assert reassigned["offered_to"] == entry.next_worker

        row = rows[(entry.group, entry.item)]
        assert row.state == ("open" if entry.next_worker is None else "offered"), entry
        assert (row.owner, row.lease_holder, row.due_at, row.due_reason) == ("", "", None, "")
        assert row.data["reassignments"] == 1
        assert entry.owner in row.data["former_owners"]
        lease = row.data["lease"]  # kept, closed, until the next start moves it to history
        assert (lease["lease_id"], lease["status"]) == (entry.lease_id, "expired")
        assert lease["closed_by"] == "lease.expired"
        open_offers = [o["worker"] for o in row.data["offers"] if o["status"] == "open"]
        assert open_offers == ([entry.next_worker] if entry.next_worker else [])


def _assert_rebuild_agrees(groups: list[str]) -> None:
    """R16: ``manage.py rebuild_projections --verify`` finds the live rows equal to a replay."""
    for group in groups:
        assert_log_consistent(group)
    out, err = io.StringIO(), io.StringIO()
    call_command("rebuild_projections", "--verify", stdout=out, stderr=err)
    lines = out.getvalue().splitlines()
    assert len(lines) == len(groups), lines
    assert all(line.endswith("projections match") for line in lines), lines


def test_two_sweeps_at_once_reassign_each_of_1000_expired_leases_exactly_once() -> None:
    """R11.3-09, R11.5-01: 1,000 leases of 1 s in four groups expire; two ``sweep_due()``
    run at the same moment in two threads (each its own connection). Every lease is expired
    and its item reassigned exactly once — one ``lease.expired`` and one ``work.reassigned``
    per item, in one authority command — and offered to the next eligible worker (or left
    ``open`` when there is none); the two reports' ``applied`` sum to 1,000 and whatever the
    other sweep also selected was skipped (no longer due when re-read under the group lock),
    replayed or refused — never applied twice; the logs are gapless and chained and a rebuild
    agrees."""
    started = time.perf_counter()
    cast = lease_cast("sweep", GROUPS)
    leased = start_expiring_leases(cast, ITEMS, lease_ttl_s=1)
    built = time.perf_counter() - started
    assert len(leased) == ITEMS
    assert WorkItem.objects.filter(state="active", due_reason="lease_expired").count() == ITEMS
    wait_until_expired(leased)

    connection.close()  # the threads take their own connections
    mark = time.perf_counter()
    durations = [0.0, 0.0]

    def sweep(index: int) -> SweepReport:
        report = sweep_due()
        durations[index] = time.perf_counter() - mark
        return report

    reports: list[SweepReport] = run_in_threads(2, sweep)

    assert sum(report.applied for report in reports) == ITEMS, reports
    examined = sum(report.examined for report in reports)
    others = sum(r.skipped + r.replayed + r.refused for r in reports)
    assert others == examined - ITEMS, reports
    assert all(report.examined > 0 for report in reports), reports  # both sweeps saw due work
    assert WorkItem.objects.filter(due_at__isnull=False).count() == 0
    assert sweep_due() == SweepReport()  # nothing left due

    _assert_reassigned_once(leased, cast.groups)
    _assert_rebuild_agrees(cast.groups)
    print(
        f"\n{ITEMS} leases built in {built:.1f} s, then two sweeps at once: "
        + "; ".join(
            f"{report.as_dict()} in {seconds:.1f} s"
            for report, seconds in zip(reports, durations, strict=True)
        )
    )


def _wait_until_blocked_by_this_connection(timeout_s: float = 10.0) -> None:
    """Wait until another session waits for a lock this connection holds (the group head)."""
    deadline = time.monotonic() + timeout_s
    with connection.cursor() as cursor:
        while True:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE pg_backend_pid() = ANY(pg_blocking_pids(pid))"
            )
            if cursor.fetchone()[0] > 0:
                return
            assert time.monotonic() < deadline, "the sweep never waited for the group lock"
            time.sleep(0.02)


def test_a_lease_renewed_between_the_sweeps_selection_and_its_lock_is_not_reassigned() -> None:
    """R11.5-01, R11.3-03: the sweep selects on the committed projection and only then takes
    the group lock. A renewal decided while the lease was live, but committed after the lease's
    old expiry (its transaction still open when the sweep selected), puts the sweep's
    candidate out of date. Both safeguards under the lock hold:

    1. ``sweep_due`` reads its candidates again under the lock, sees the renewal and submits
       nothing (``skipped``);
    2. the stale ``work.reassign`` submitted anyway (as a sweep that did not re-read would)
       is re-checked by the decider on the authority clock and refused
       ``ILLEGAL_TRANSITION`` (R11.5-01), appending nothing.

    The renewed lease stands."""
    cast = lease_cast("renew", 1)
    group, owner = cast.groups[0], cast.workers[0]
    (entry,) = start_expiring_leases(cast, 1, lease_ttl_s=2, lonely_every=1)
    body = {"work_item": entry.item, "lease_id": entry.lease_id, "lease_ttl_s": 120}
    sweeps = ThreadPoolExecutor(max_workers=1)

    def sweep_in_own_connection() -> tuple[dict[str, list[AuthorityCommand]], SweepReport]:
        try:
            return due_work_items(DEFAULT_LIMIT), sweep_due()
        finally:
            connection.close()

    with transaction.atomic():  # holds the group's head lock until the block ends
        renewed = submit(owner, group, "lease.renew", body)
        wait_until_expired([entry])  # the old expiry passes, the renewal still uncommitted
        future = sweeps.submit(sweep_in_own_connection)
        _wait_until_blocked_by_this_connection()  # it selected the item; now it waits
    selected, report = future.result(timeout=30)
    sweeps.shutdown()

    stale = AuthorityCommand(
        REASSIGN,
        {"work_item": entry.item, "ownership_epoch": 1, "reason": "lease_expired"},
        reassign_command_id(entry.item, 1),
    )
    assert selected == {group: [stale]}  # what the sweep selected before the lock
    assert report == SweepReport(examined=1, groups=1, skipped=1)

    (refusal,) = submit_authority_batch(group_id=group, commands=[stale])
    assert isinstance(refusal, ProtocolError), refusal
    assert (refusal.code, refusal.requirement) == (ErrorCode.ILLEGAL_TRANSITION, "R11.5-01")

    documents = assert_log_consistent(group)
    assert [d["type"] for d in documents if d["actor"] == AUTHORITY] == []
    assert documents[-1]["type"] == "lease.renewed"
    row = WorkItem.objects.get(group_id=group, work_item_id=entry.item)
    new_expiry = renewed.body["result"]["lease"]["expires_at"]
    assert (row.state, row.owner, row.lease_holder) == ("active", entry.owner, entry.owner)
    assert row.data["lease"]["expires_at"] == new_expiry
    assert row.due_at == parse_timestamp(new_expiry)
    assert row.data["reassignments"] == 0
