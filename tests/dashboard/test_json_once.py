"""``json_once.paths_once`` on the embedded default (SQLite): a JSON null, true and false come
back as JSON, not as the strings "null", "true", "false" Django's key transform gives there.

The suite runs on PostgreSQL, so this opens a SQLite connection of Django's own, in memory
(outside pytest-django's guard, which knows only the configured databases), and runs the
query there against a minimal ``work_workitem`` table.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connections
from django.db.backends.sqlite3.base import DatabaseWrapper

from apps.dashboard.json_once import paths_once
from apps.work.models import WorkItem

DATA = {
    "replaces": None,
    "contract": {"risk": {"class": "high", "requires_execution_approval": True}},
    "refusal": None,
    "history": [{"sequence": 3}, {"sequence": 9}],
    "title": "Summarise",
    "flag": False,
}


@pytest.fixture
def sqlite(django_db_blocker: Any) -> Iterator[DatabaseWrapper]:
    """A SQLite database in memory, known to Django's connections for the test's length
    (Django's JSON functions look their connection up by alias)."""
    settings = {**connections["default"].settings_dict, "NAME": ":memory:", "OPTIONS": {}}
    wrapper = DatabaseWrapper(settings, alias="sqlite-check")
    connections["sqlite-check"] = wrapper
    try:
        with django_db_blocker.unblock():
            yield wrapper
            wrapper.close()
    finally:
        del connections["sqlite-check"]


def test_on_sqlite_json_null_true_and_false_stay_json(sqlite: DatabaseWrapper) -> None:
    """The embedded default: the mission page read ``replaces`` as "null" and listed
    every WorkItem as "carries on the work of null"."""
    query = (
        WorkItem.objects.annotate(
            shown=paths_once(
                "replaces",
                "contract__risk__requires_execution_approval",
                "flag",
                "history__-1__sequence",
                "contract__risk",
                "missing",
                "title",
            )
        )
        .values_list("shown")
        .query
    )
    sql, params = query.get_compiler(connection=sqlite).as_sql()
    with sqlite.cursor() as cursor:
        cursor.execute('CREATE TABLE "work_workitem" ("id" integer, "data" text)')
        cursor.execute('INSERT INTO "work_workitem" VALUES (1, %s)', [json.dumps(DATA)])
        cursor.execute(sql, params)
        (shown,) = cursor.fetchone()

    assert json.loads(shown) == [
        None,
        True,
        False,
        9,
        {"class": "high", "requires_execution_approval": True},
        None,
        "Summarise",
    ]
