"""Every group-scoped table's keys lead with its group (issue 15 §6, docs/deploy.md).

A distributed PostgreSQL that shards the log by group enforces a primary key or a unique
constraint only when it holds the group column, and a key that starts with the group keeps a
group's rows together in every index. The tables are found in PostgreSQL's catalog, not
listed here, so a table added later is held to the same rule: any table with a ``group_id``
column, or with a column named ``…_group``, must keep the rule or be named below with the
reason it does not.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.db import connection

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="the rule is enforced on PostgreSQL; SQLite, one file on one host, keeps "
        "PRIMARY KEY (id) (apps.ledger.group_keys)",
    ),
]

#: tables whose rows belong to a group named by another column: that column
GROUP_COLUMN_OF: dict[str, str] = {
    # an outbox row is written in its source group's append transaction (outbox.enqueue), so
    # it is sharded with that group's rows; ``target_group`` is only where it is carried
    "ledger_pendingfollowup": "source_group",
}

#: tables with a group column that are not group-scoped, and why
NOT_GROUP_SCOPED: dict[str, str] = {
    "auth_group_permissions": "Django's permission groups (auth.Group), not Mission Groups",
    "auth_user_groups": "Django's permission groups (auth.Group), not Mission Groups",
    "notifications_notification": "a person's notifications (issue 36), read per person (the "
    "bell, the digest) and kept with the person; its group only says what it is about",
    "dashboard_inboxsnooze": "a person's snoozed inbox entries (issue 37 §5): view state read "
    "per person, kept with the person like notifications; its group only names the entry",
    "notifications_grouphook": "a group's chat and webhook settings (issue 36): a few rows of "
    "configuration an admin edits, neither log nor projection, kept with the site's other "
    "settings rather than sharded with the group's log",
}

#: the tables of this database's schema with a column whose name is LIKE the parameter
_TABLES_WITH_COLUMN = """
SELECT DISTINCT table_name FROM information_schema.columns
WHERE table_schema = current_schema() AND column_name LIKE %s
"""
_GROUP_ID = r"group\_id"
#: ``source_group``, ``target_group``…: a group under another name
_ANOTHER_NAME = r"%\_group"

#: every unique index of a table (its primary key among them) with its first column
#: (``NULL`` for an expression)
_UNIQUE_INDEXES = """
SELECT index.relname, ix.indisprimary, first.attname,
       pg_get_indexdef(ix.indexrelid)
FROM pg_index ix
JOIN pg_class index ON index.oid = ix.indexrelid
LEFT JOIN pg_attribute first ON first.attrelid = ix.indrelid AND first.attnum = ix.indkey[0]
WHERE ix.indrelid = %s::regclass AND ix.indisunique
"""

#: every foreign key that points at a table, with the first column it references
_FOREIGN_KEYS_TO = """
SELECT con.conname, con.conrelid::regclass::text, referenced.attname
FROM pg_constraint con
JOIN pg_attribute referenced
  ON referenced.attrelid = con.confrelid AND referenced.attnum = con.confkey[1]
WHERE con.contype = 'f' AND con.confrelid = %s::regclass
"""


@dataclass(frozen=True)
class UniqueIndex:
    name: str
    primary: bool
    first_column: str | None
    definition: str


def _rows(sql: str, params: list[object] | None = None) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _tables_with_column(pattern: str) -> set[str]:
    return {name for (name,) in _rows(_TABLES_WITH_COLUMN, [pattern])}


def _tables_naming_a_group() -> set[str]:
    return _tables_with_column(_GROUP_ID) | _tables_with_column(_ANOTHER_NAME)


def _group_scoped() -> dict[str, str]:
    """Each group-scoped table and the column that holds its group."""
    return {
        table: GROUP_COLUMN_OF.get(table, "group_id")
        for table in _tables_naming_a_group()
        if table not in NOT_GROUP_SCOPED
    }


def _unique_indexes(table: str) -> list[UniqueIndex]:
    return [UniqueIndex(*row) for row in _rows(_UNIQUE_INDEXES, [table])]


def test_the_group_scoped_tables_are_found_in_the_catalog() -> None:
    """The discovery sees the log, its head, a projection of each app and the cursors, so
    the checks below cannot pass on an empty list."""
    assert {
        "ledger_grouplog",
        "ledger_event",
        "ledger_commandrecord",
        "registry_membership",
        "work_workitem",
        "artifacts_groupartifact",
        "stream_cursor",
        "ledger_pendingfollowup",
    } <= set(_group_scoped())


def test_every_table_that_names_a_group_is_judged() -> None:
    """A table with a ``…_group`` column but no ``group_id`` is group-scoped under another
    name, or not group-scoped: either way it is named here, never passed over in silence;
    and every table named here still exists."""
    found = _tables_naming_a_group()
    unjudged = found - _tables_with_column(_GROUP_ID) - set(GROUP_COLUMN_OF) - set(NOT_GROUP_SCOPED)
    assert not unjudged, f"name the group column of {sorted(unjudged)}, or say why it has none"
    stale = (set(GROUP_COLUMN_OF) | set(NOT_GROUP_SCOPED)) - found
    assert not stale, f"{sorted(stale)} no longer exist: drop them from the lists"


def test_every_group_scoped_primary_key_leads_with_the_group() -> None:
    """Issue 15 §6: ``PRIMARY KEY (group_id, …)`` (``ledger_grouplog``: ``group_id`` alone)."""
    wrong: dict[str, object] = {}
    for table, column in sorted(_group_scoped().items()):
        primary = [index for index in _unique_indexes(table) if index.primary]
        if len(primary) != 1 or primary[0].first_column != column:
            wrong[table] = [index.definition for index in primary] or "no primary key"
    assert not wrong, wrong


def test_every_group_scoped_unique_index_leads_with_the_group() -> None:
    """Issue 15 §6: every unique constraint and unique index, not only the primary key,
    starts with the group column (an expression first counts as not)."""
    wrong = {
        index.name: index.definition
        for table, column in sorted(_group_scoped().items())
        for index in _unique_indexes(table)
        if index.first_column != column
    }
    assert not wrong, wrong


def test_no_foreign_key_points_at_a_group_scoped_table_but_by_its_group() -> None:
    """A foreign key into a group-scoped table must reference a key that starts with the
    group: sharded, both rows then live together (and nothing may lean on ``id`` alone,
    which the database no longer keeps unique by itself, ``apps.ledger.group_keys``)."""
    wrong = [
        f"{referencing}.{name} → {table}({first})"
        for table, column in sorted(_group_scoped().items())
        for name, referencing, first in _rows(_FOREIGN_KEYS_TO, [table])
        if first != column
    ]
    assert not wrong, wrong


#: every index of a table that covers exactly one column, with that column, and whether it
#: is unique (the primary key of ``ledger_grouplog`` is one)
_SINGLE_COLUMN_INDEXES = """
SELECT index.relname, ix.indisunique, only_column.attname
FROM pg_index ix
JOIN pg_class index ON index.oid = ix.indexrelid
JOIN pg_attribute only_column
  ON only_column.attrelid = ix.indrelid AND only_column.attnum = ix.indkey[0]
WHERE ix.indrelid = %s::regclass AND ix.indnatts = 1
"""


def test_no_group_scoped_table_keeps_an_index_on_its_group_alone() -> None:
    """The keys lead with the group, so an index on the group column alone (Django's
    default for a foreign key, and its ``varchar_pattern_ops`` twin) serves nothing they do
    not and costs every insert (``apps.ledger.group_keys.DropGroupOnlyIndex``). A table
    keyed by its group alone (``ledger_grouplog``, one row per group) is left its key."""
    redundant = {
        name
        for table, column in sorted(_group_scoped().items())
        if not _keyed_by_alone(table, column)
        for name, unique, only in _rows(_SINGLE_COLUMN_INDEXES, [table])
        if only == column and not unique
    }
    assert not redundant, redundant


def _keyed_by_alone(table: str, column: str) -> bool:
    return any(
        index.primary and index.definition.endswith(f"({column})")
        for index in _unique_indexes(table)
    )
