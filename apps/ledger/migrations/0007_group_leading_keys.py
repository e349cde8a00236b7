"""Every key of the ledger's group-scoped tables leads with the group (issue 15 §6).

So the log can be sharded by group on a distributed PostgreSQL (docs/deploy.md), where a
primary key or unique constraint is enforced only if it holds the distribution column:

- ``event_id`` was unique on its own in ``ledger_event`` and ``ledger_archivedevent``; it is
  now unique within its group, ``(group_id, event_id)``, added before the old key goes. No
  query looks an event up by ``event_id`` alone (the admin's search is a substring match, which
  no B-tree serves), so no plain index replaces it. Event ids are ``evt_`` and a random UUID,
  unique across groups by construction.
- The primary keys of ``ledger_event``, ``ledger_archivedevent``, ``ledger_commandrecord``
  and ``ledger_snapshot`` become ``(group_id, id)`` on PostgreSQL, and the outbox
  ``ledger_pendingfollowup`` gets ``(source_group, id)``: it has no ``group_id`` column, but a
  follow-up is written in its source group's append transaction (``outbox.enqueue``), so it
  belongs with the source group's rows, like them keyed by it. The model state keeps ``id``
  as the ORM's primary key: see :mod:`apps.ledger.group_keys` for why, and why SQLite keeps
  ``PRIMARY KEY (id)``. ``ledger_grouplog`` is keyed by ``group_id`` alone already.

On SQLite, Django changes a column's or a table's unique keys by rebuilding the table, which
drops the table's triggers, and cannot drop ``ledger_archivedevent`` while the online log's
DELETE trigger names it. So the immutability triggers of ``0002_events_are_immutable`` and
``0005_archive`` are dropped before the rebuilds and installed again after them, in either
direction.
"""

from importlib import import_module

from django.db import migrations, models

from apps.ledger.group_keys import LeadPrimaryKeyWithGroup

_IMMUTABLE = import_module("apps.ledger.migrations.0002_events_are_immutable")
_ARCHIVE = import_module("apps.ledger.migrations.0005_archive")
_SQLITE_TRIGGERS = (
    "ledger_event_no_update",
    "ledger_event_no_delete",
    "ledger_archivedevent_no_update",
    "ledger_archivedevent_no_delete",
)


def drop_sqlite_triggers(apps, schema_editor):
    if schema_editor.connection.vendor != "sqlite":
        return
    for name in _SQLITE_TRIGGERS:
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {name};")


def reinstall_sqlite_triggers(apps, schema_editor):
    """The triggers as ``0005_archive`` left them: ``0002``'s UPDATE refusal on the online
    log, ``0005``'s DELETE refusal (unless archived) and the archive's two refusals."""
    if schema_editor.connection.vendor != "sqlite":
        return
    drop_sqlite_triggers(apps, schema_editor)
    schema_editor.execute(_IMMUTABLE.SQLITE_UP[0])
    for statement in _ARCHIVE.SQLITE_UP:
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("ledger", "0006_event_type_index"),
        ("registry", "0001_initial"),
    ]

    operations = [
        # SQLite: no triggers while the two tables are rebuilt, in either direction
        migrations.RunPython(drop_sqlite_triggers, reinstall_sqlite_triggers),
        migrations.AddConstraint(
            model_name="event",
            constraint=models.UniqueConstraint(
                fields=("group", "event_id"), name="event_id_once_per_group"
            ),
        ),
        migrations.AddConstraint(
            model_name="archivedevent",
            constraint=models.UniqueConstraint(
                fields=("group", "event_id"), name="archived_event_id_once_per_group"
            ),
        ),
        migrations.AlterField(
            model_name="event",
            name="event_id",
            field=models.CharField(max_length=64),
        ),
        migrations.AlterField(
            model_name="archivedevent",
            name="event_id",
            field=models.CharField(max_length=64),
        ),
        migrations.RunPython(reinstall_sqlite_triggers, drop_sqlite_triggers),
        LeadPrimaryKeyWithGroup("event"),
        LeadPrimaryKeyWithGroup("archivedevent"),
        LeadPrimaryKeyWithGroup("commandrecord"),
        LeadPrimaryKeyWithGroup("snapshot"),
        LeadPrimaryKeyWithGroup("pendingfollowup", group_field="source_group"),
    ]
