"""Two indexes for dashboard reads in a group of ~100,000 WorkItems (issue 13), PostgreSQL only.

- ``work_item_depends_on``: GIN (``jsonb_path_ops``) on the expression ``data -> 'depends_on'``.
  The WorkItem page's "needed by" list asks ``data__depends_on__contains=[id]``
  (``apps.dashboard.work._needed_by``); without it that containment reads every item of the
  table, ~2 s at 100,000 items.
- ``work_item_waiting_approval``: a partial btree on ``(group_id, id)`` holding exactly the
  items that wait for an execution approval (R10.2-06): queued, gated, short of their quorum.
  The group page counts them and shows the oldest (``apps.dashboard.work._waiting_rows``);
  without it both read the contract of every queued item (~0.2–0.6 s for 10,000 waiting).
  Its predicate repeats that query's expressions, which the planner must match to use it:
  change one, change the other (``tests/dashboard/test_work_reads.py`` checks the plans).
  Contract validation keeps ``approvals_required`` an integer below 2**53, so the ``bigint``
  cast the predicate evaluates on every write of a WorkItem cannot fail.

Raw SQL run only when the database is PostgreSQL, and not in ``WorkItem.Meta.indexes``: the
GIN operator class on a JSON key expression and the JSON predicate are PostgreSQL's, while the
demo runs on SQLite (no JSON containment; its small groups need neither index). Django's
autodetector does not see what ``RunPython`` creates, so ``makemigrations`` neither adds nor
drops these indexes; the reverse drops them.

Both are built with a plain ``CREATE INDEX`` inside the migration's transaction, which holds
off writes to WorkItems while it runs: ~4 s for the GIN index at 100,000 items on a 2-core
machine.
"""

from typing import Any

from django.db import migrations

TABLE = "work_workitem"

INDEXES = {
    "work_item_depends_on": (
        f"CREATE INDEX IF NOT EXISTS work_item_depends_on ON {TABLE} "
        "USING gin ((data -> 'depends_on') jsonb_path_ops)"
    ),
    "work_item_waiting_approval": (
        f"CREATE INDEX IF NOT EXISTS work_item_waiting_approval ON {TABLE} (group_id, id) "
        "WHERE state = 'queued' "
        "AND (data #> '{contract,risk,requires_execution_approval}') = 'true'::jsonb "
        "AND jsonb_array_length(data -> 'approvals') "
        "< COALESCE((data #>> '{contract,risk,approvals_required}')::bigint, 1)"
    ),
}


def create_indexes(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for statement in INDEXES.values():
        schema_editor.execute(statement)


def drop_indexes(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for name in reversed(INDEXES):
        schema_editor.execute(f"DROP INDEX IF EXISTS {name}")


class Migration(migrations.Migration):
    dependencies = [
        ("work", "0007_dashboard_lists"),
    ]

    operations = [
        migrations.RunPython(create_indexes, drop_indexes),
    ]
