"""What the fault tests assert about the logs, read over a connection of their own — so the
same checks serve the test database and a private cluster the test's Django connection does
not point at (``tests/faults/private_postgres.py``).

The same facts as ``tests/ledger/checks.assert_log_consistent``, from outside: every
acknowledged command appended exactly once and nothing else, no gap in any log, every head
row at its last event, and ``manage.py rebuild_projections --verify`` — the hash chains and
the projections equal to a replay — run as a process on that database.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

import psycopg
from django.db import connection

from apps.ledger.models import Event, GroupLog

BASE_DIR = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class LogFigures:
    acknowledged: int
    found: int  # acknowledged commands with their event in the log
    duplicates: int  # events beyond the first for one command id
    unacknowledged: int  # commands in the log that nobody acknowledged
    gaps: int  # sequence numbers past the archive, up to the head, with no event
    heads_behind: int  # head rows that do not name their log's last event
    groups_verified: int  # groups whose chain and projections ``--verify`` matched


def log_figures(
    database: psycopg.Connection,
    database_url: str,
    *,
    groups: Collection[str],
    acknowledged: Collection[str],
    event_type: str = "mission.created",
    verify: bool = True,
) -> LogFigures:
    """Count, in ``database``, what became of the ``acknowledged`` command ids in ``groups``."""
    events, heads = Event._meta.db_table, GroupLog._meta.db_table
    created = Counter(
        command_id
        for (command_id,) in database.execute(
            f"SELECT command_id FROM {events} WHERE group_id = ANY(%s) AND type = %s",
            [list(groups), event_type],
        )
    )
    wanted = set(acknowledged)
    gaps = database.execute(
        "SELECT coalesce(sum(h.head_sequence - h.archived_through - "
        f"(SELECT count(*) FROM {events} e WHERE e.group_id = h.group_id)), 0) "
        f"FROM {heads} h WHERE h.group_id = ANY(%s)",
        [list(groups)],
    ).fetchone()[0]
    heads_behind = database.execute(
        f"SELECT count(*) FROM {heads} h WHERE h.group_id = ANY(%s) AND h.head_sequence > 0 "
        f"AND NOT EXISTS (SELECT 1 FROM {events} e WHERE e.group_id = h.group_id "
        "AND e.sequence = h.head_sequence AND e.hash = h.head_hash)",
        [list(groups)],
    ).fetchone()[0]
    return LogFigures(
        acknowledged=len(wanted),
        found=sum(1 for command_id in wanted if created[command_id] >= 1),
        duplicates=sum(count - 1 for count in created.values() if count > 1),
        unacknowledged=len(set(created) - wanted),
        gaps=int(gaps),
        heads_behind=heads_behind,
        groups_verified=verify_rebuild(database_url) if verify else 0,
    )


def suite_database_url() -> str:
    """``DATABASE_URL`` of the pytest-django test database (for a connection of one's own,
    ``psycopg.connect(url)``, or a process)."""
    params = connection.settings_dict
    host, port = params["HOST"] or "127.0.0.1", params["PORT"] or 5432
    return f"postgres://{params['USER'] or 'postgres'}@{host}:{port}/{params['NAME']}"


def verify_rebuild(database_url: str) -> int:
    """``manage.py rebuild_projections --verify`` over every group of ``database_url``; the
    number of groups that matched (it fails the test on any difference)."""
    env = {**os.environ, "DATABASE_URL": database_url, "MWP_DB_POOL": "0"}
    env.pop("MWP_TEST_DB_NAME", None)
    result = subprocess.run(
        [sys.executable, "manage.py", "rebuild_projections", "--verify"],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.count("projections match")
