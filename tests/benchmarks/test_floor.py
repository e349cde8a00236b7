"""``benchmarks/floor.py``: PostgreSQL running the write path's own SQL, with no Python."""

from __future__ import annotations

import pytest
from django.db import connection

from apps.ledger.models import Event, GroupLog
from benchmarks.floor import SEQUENCE_BASE, capture, run_floor, script, write_scripts
from benchmarks.world import build_world


def _database_url() -> str:
    settings = connection.settings_dict
    host, port = settings["HOST"] or "127.0.0.1", settings["PORT"] or "5432"
    return f"postgres://{settings['USER']}@{host}:{port}/{settings['NAME']}"


@pytest.mark.django_db(transaction=True)
def test_the_floor_runs_the_commands_sql_without_moving_any_real_head(tmp_path):
    """issue 15: the captured queries run again and again under pgbench — new ids each time,
    reads by literal (so by index), events far above the head — and the real heads, which
    the in-process and HTTP figures append at next, stay where they were."""
    world = build_world(groups=2, agents=1, prefix="flr")
    command = capture(world)
    write_scripts(command, world.groups, tmp_path)
    heads = {log.group_id: log.head_sequence for log in GroupLog.objects.all()}

    measurement = run_floor(_database_url(), tmp_path, clients=2, groups=2, seconds=1)

    assert measurement.operations > 0
    assert 0 < measurement.latency_p50_ms <= measurement.latency_p99_ms
    assert {log.group_id: log.head_sequence for log in GroupLog.objects.all()} == heads
    floor_events = Event.objects.filter(sequence__gt=SEQUENCE_BASE)
    assert floor_events.count() == measurement.requests  # one event per transaction logged
    assert set(floor_events.values_list("group_id", flat=True)) == set(world.groups)
    text = script(command, world.groups[1])
    for captured in (command.command_id, command.mission_id, command.event_id, world.groups[0]):
        assert f"'{captured}'" not in text  # as SQL literals (the JSON documents keep them)
    assert "SET head_sequence = head_sequence, head_hash = head_hash" in text
    assert text.rstrip().endswith("COMMIT;")
