"""The write path's frozen floor still runs against today's schema (issue 38).

``benchmarks/pgbench/write_path_statements.sql`` is the SQL one ``mission.create`` sent when the
performance issue was blocked, kept unchanged as the reference every write-path ratio is taken
against. Columns added since must not break it: its ``INSERT`` into ``work_mission`` names only
the columns of its day, so a newer column needs a database default (``change_requests``:
``[]``, migration ``work.0015``). The statement is read from the frozen file itself.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.db import connection

from apps.work.models import Mission
from tests.factories import World

FLOOR = Path(__file__).resolve().parents[2] / "benchmarks" / "pgbench" / "write_path_statements.sql"

pytestmark = pytest.mark.django_db


def test_the_frozen_floors_mission_insert_runs_and_leaves_no_change_requests(
    world: World,
) -> None:
    insert = next(
        line
        for line in FLOOR.read_text().splitlines()
        if line.startswith('INSERT INTO "work_mission"')
    )
    # pgbench's variables, and the benchmark's group replaced by this test's own
    statement = (
        insert.replace("'bench-g00'", f"'{world.group}'").replace(":r", "7").replace(":next", "99")
    )
    with connection.cursor() as cursor:
        cursor.execute(statement)
    mission = Mission.objects.get(group_id=world.group, mission_id="m-x-7-99")
    assert mission.change_requests == []
    assert mission.goal.startswith("Summarise the incident reports of November")
