"""Archiving by retention (``apps/ledger/retention.py``; R16-08, R16-10).

Events recorded longer ago than the retention (by the database clock) leave the online log
for the archive; newer ones stay. The floor never passes a signed snapshot (a snapshot is
taken as the authority when none is recent enough), a repeated or concurrent run is a no-op,
and the whole history stays readable, exportable and verifiable. Real PostgreSQL with its
immutability triggers; the last test lets a real ``celery worker -B`` do it on its own.

Rows cannot be made old (the log refuses UPDATE), so the tests take the database clock
between two batches of events and pass it as the cutoff, or set a retention of a second and
let it pass.
"""

from __future__ import annotations

import io
import json
import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection

from apps.ledger import authority
from apps.ledger.head import authority_now
from apps.ledger.history import history
from apps.ledger.models import ArchivedEvent, Event, GroupLog, Snapshot
from apps.ledger.retention import archive_due_groups, archive_group
from apps.ledger.snapshots import ChainBroken, take_as_authority
from missionweave.protocol.events import first_chain_break
from tests import factories
from tests.celery_processes import CeleryProcesses
from tests.factories import World, mission_body
from tests.work.lifecycle import submit

StartCelery = Callable[..., AbstractContextManager[CeleryProcesses]]
ARCHIVE_REPORT = re.compile(
    r"Task apps\.ledger\.tasks\.archive_groups\[[^\]]+\] succeeded in [^:]+: (\{[^}]*\})"
)


def _missions(world: World, count: int) -> None:
    """``count`` more events through the write path."""
    for _ in range(count):
        submit(world.olga, world.group, "mission.create", mission_body())


def _log(group_id: str) -> tuple[int, int]:
    """(online floor, head)."""
    return GroupLog.objects.values_list("archived_through", "head_sequence").get(group_id=group_id)


def _sequences(model: type[Event] | type[ArchivedEvent], group_id: str) -> list[int]:
    rows = model.objects.filter(group_id=group_id).order_by("sequence")
    return list(rows.values_list("sequence", flat=True))


def _documents(group_id: str) -> dict[int, str]:
    """Every stored document of the group, wherever it is kept."""
    documents: dict[int, str] = {}
    for model in (ArchivedEvent, Event):
        documents.update(
            model.objects.filter(group_id=group_id).values_list("sequence", "document")
        )
    return documents


def _snapshots(group_id: str) -> list[int]:
    return list(
        Snapshot.objects.filter(group_id=group_id)
        .order_by("sequence")
        .values_list("sequence", flat=True)
    )


def _old_and_new(world: World, *, new: int = 3) -> tuple[int, datetime]:
    """The world's events, the database clock, then ``new`` more: (last old sequence, cutoff)."""
    _, old = _log(world.group)
    cutoff = authority_now()
    _missions(world, new)
    return old, cutoff


@pytest.mark.django_db
def test_events_recorded_before_the_cutoff_are_archived_and_newer_ones_stay_online(
    world: World,
) -> None:
    """R16-08, R16-10: events older than the cutoff move to the archive unchanged, the newer
    stay online; with no snapshot yet one is taken as the authority at the head, so the floor
    stays below a snapshot."""
    old, cutoff = _old_and_new(world)
    _, head = _log(world.group)
    before = _documents(world.group)

    assert archive_group(world.group, cutoff=cutoff) == old

    assert _snapshots(world.group) == [head]  # recorded by snapshot.created at head + 1
    assert _log(world.group) == (old, head + 1)
    assert _sequences(ArchivedEvent, world.group) == list(range(1, old + 1))
    assert _sequences(Event, world.group) == list(range(old + 1, head + 2))
    after = _documents(world.group)
    assert {s: after[s] for s in before} == before
    assert Event.objects.get(group_id=world.group, sequence=head + 1).actor == "authority"


@pytest.mark.django_db
def test_a_snapshot_at_or_after_the_target_is_used_and_no_new_one_is_taken(world: World) -> None:
    """R16-10: archive() needs a snapshot ≥ the floor; an existing one suffices."""
    old, cutoff = _old_and_new(world)
    taken = take_as_authority(world.group).snapshot.sequence

    assert archive_group(world.group, cutoff=cutoff) == old

    assert _snapshots(world.group) == [taken]
    assert _log(world.group)[0] == old


@pytest.mark.django_db
def test_old_events_beyond_the_latest_snapshot_take_a_new_snapshot_at_the_head(
    world: World,
) -> None:
    """R16-10: when the latest snapshot is older than the target, a new one is taken first;
    the floor is the target, below the new snapshot, never past it."""
    first = take_as_authority(world.group).snapshot.sequence
    _missions(world, 2)
    old, cutoff = _old_and_new(world)
    _, head = _log(world.group)

    assert archive_group(world.group, cutoff=cutoff) == old

    assert _snapshots(world.group) == [first, head]
    assert first < old < head


@pytest.mark.django_db
def test_an_idle_group_archives_up_to_its_snapshot_and_keeps_the_record_of_it(
    world: World,
) -> None:
    """R16-10: a snapshot's own snapshot.created (at S + 1) never needs a new snapshot, so a
    group with no new events settles with the floor at S and no snapshot is taken again."""
    taken = take_as_authority(world.group).snapshot.sequence
    cutoff = authority_now()  # everything is old, including snapshot.created at S + 1

    assert archive_group(world.group, cutoff=cutoff) == taken
    assert archive_group(world.group, cutoff=authority_now()) is None

    assert _log(world.group) == (taken, taken + 1)
    assert _snapshots(world.group) == [taken]


@pytest.mark.django_db
def test_the_newest_keep_events_stay_online(world: World) -> None:
    """``keep_events`` (MWP_ARCHIVE_KEEP_EVENTS): at least the newest N stay online."""
    _missions(world, 4)
    _, head = _log(world.group)

    assert archive_group(world.group, cutoff=authority_now(), keep_events=3) == head - 3

    assert _sequences(Event, world.group) == list(range(head - 2, head + 2))


@pytest.mark.django_db
def test_a_second_run_is_a_no_op(world: World) -> None:
    """Idempotent: the same cutoff again moves nothing and takes no snapshot."""
    old, cutoff = _old_and_new(world)
    assert archive_group(world.group, cutoff=cutoff) == old
    documents, snapshots, log = _documents(world.group), _snapshots(world.group), _log(world.group)

    assert archive_group(world.group, cutoff=cutoff) is None

    assert (_documents(world.group), _snapshots(world.group), _log(world.group)) == (
        documents,
        snapshots,
        log,
    )


@pytest.mark.django_db
def test_the_retention_is_read_from_settings_and_measured_by_the_database_clock(
    world: World, settings: Any
) -> None:
    """MWP_ARCHIVE_RETENTION_S: events recorded more than that many seconds ago are archived,
    newer ones are not; 0 turns archiving off."""
    _, old = _log(world.group)
    time.sleep(1.2)
    _missions(world, 2)

    settings.MWP_ARCHIVE_RETENTION_S = 0
    assert archive_due_groups() == {}
    assert _log(world.group)[0] == 0

    settings.MWP_ARCHIVE_RETENTION_S = 1
    assert archive_due_groups() == {world.group: old}
    assert archive_due_groups() == {}
    assert _sequences(Event, world.group)[0] == old + 1


@pytest.mark.django_db
def test_a_group_whose_log_does_not_chain_is_not_archived_and_fails_the_run_after_the_others(
    world: World,
) -> None:
    """R16-10: no snapshot is signed over a broken chain, so that group keeps its events
    online; the healthy groups are still archived (g-sound comes after it), then the run
    fails naming the broken one."""
    factories.group("g-sound", world.org)
    factories.grant(world.alice, "g-sound", world.olga, "mission_owner")
    _, healthy = _log("g-sound")
    _missions(world, 2)
    with connection.cursor() as cursor:  # corruption, undone with the test's transaction
        cursor.execute("SET LOCAL session_replication_role = replica")  # no triggers
        cursor.execute(
            "UPDATE ledger_event SET document = replace(document, 'Summarise', 'Summarize') "
            "WHERE group_id = %s AND sequence = %s",
            [world.group, _log(world.group)[1]],
        )
        cursor.execute("SET LOCAL session_replication_role = DEFAULT")

    with pytest.raises(ChainBroken, match=f"does not chain: {world.group}$"):
        archive_due_groups(retention_s=0.001)

    assert _log("g-sound")[0] == healthy
    assert _log(world.group)[0] == 0
    assert _snapshots(world.group) == []


@pytest.mark.django_db
def test_after_archiving_the_whole_history_is_exported_and_verifies(
    world: World, tmp_path: Path
) -> None:
    """R16-08: history is never deleted: history() reads 1..head across archive and online
    log, chained from the start, and the export verifies up to the signed head."""
    old, cutoff = _old_and_new(world)
    assert archive_group(world.group, cutoff=cutoff) == old
    assert ArchivedEvent.objects.filter(group_id=world.group).count() == old
    _, head = _log(world.group)

    documents = list(history(world.group, through=head))
    assert documents == [_documents(world.group)[s] for s in range(1, head + 1)]
    assert first_chain_break([json.loads(d) for d in documents]) is None

    path = tmp_path / "export.jsonl"
    call_command("export_group", world.group, "--output", str(path), stderr=io.StringIO())
    out = io.StringIO()
    call_command("verify_export", str(path), "--public-key", authority.public_key(), stdout=out)
    assert out.getvalue().startswith(
        f"{world.group}: {head} events, chain intact up to the signed head {head} "
    )


@pytest.mark.django_db(transaction=True)
def test_two_runs_at_once_archive_once_and_take_one_snapshot() -> None:
    """Two runs at the same moment (two beats, a redelivered task): one moves the events,
    the other skips or finds nothing left; exactly one snapshot is taken."""
    world = factories.build_world("g-retention-race")
    old, cutoff = _old_and_new(world)
    barrier = threading.Barrier(2)

    def run() -> int | None:
        try:
            barrier.wait(timeout=10)
            return archive_group(world.group, cutoff=cutoff)
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = [future.result() for future in [pool.submit(run), pool.submit(run)]]

    assert sorted(results, key=lambda r: r is None) == [old, None]
    assert len(_snapshots(world.group)) == 1
    assert _sequences(ArchivedEvent, world.group) == list(range(1, old + 1))


@pytest.mark.e2e
def test_celery_beat_and_a_worker_archive_old_events_on_their_own(
    start_celery: StartCelery, monkeypatch: pytest.MonkeyPatch
) -> None:
    """R16-08, R16-10: with MWP_ARCHIVE_RETENTION_S=1 a real ``celery worker -B`` archives
    the group's events once they are a second old (taking the snapshot it needs), and the
    runs after that change nothing."""
    world = factories.build_world("g-retention-celery")
    _, head = _log(world.group)
    before = _documents(world.group)
    monkeypatch.setenv("MWP_ARCHIVE_RETENTION_S", "1")
    monkeypatch.setenv("MWP_ARCHIVE_INTERVAL_S", "0.5")

    with start_celery() as processes:
        deadline = time.monotonic() + 30
        while _log(world.group)[0] < head:
            if time.monotonic() > deadline:
                pytest.fail(f"nothing archived in 30 s:\n{processes.log()}")
            time.sleep(0.2)
        runs = len(ARCHIVE_REPORT.findall(processes.log()))
        processes.wait_for(ARCHIVE_REPORT.pattern, count=runs + 3, timeout=20)

    reports = ARCHIVE_REPORT.findall(processes.log())
    assert f"{{'{world.group}': {head}}}" in reports
    assert reports.count(f"{{'{world.group}': {head}}}") == 1
    assert _log(world.group) == (head, head + 1)
    assert _snapshots(world.group) == [head]
    assert _sequences(ArchivedEvent, world.group) == list(range(1, head + 1))
    after = _documents(world.group)
    assert {s: after[s] for s in before} == before
