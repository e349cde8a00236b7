"""The archive (R16-08, R16-10): ``ArchivedEvent`` and the per-group online floor.

Archiving moves events 1..S of a group out of the online log ``ledger_event`` into
``ledger_archivedevent`` in one transaction; it never deletes history. The immutability
trigger of ``0002_events_are_immutable`` is narrowed by exactly one case: a DELETE of an
online row is allowed only when a row with identical content (every column: group,
sequence, event id, type, command id, actor, recorded_at, hash and the stored document) is
already in the archive. UPDATE stays refused, and the archive table gets the same
unconditional UPDATE/DELETE refusal, so a row can leave the online log only by being
copied, unchanged, into a table nothing can change.
"""

import django.db.models.deletion
from django.db import migrations, models

POSTGRES_UP = """
CREATE OR REPLACE FUNCTION ledger_event_immutable() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE' AND EXISTS (
        SELECT 1 FROM ledger_archivedevent a
        WHERE a.group_id = OLD.group_id AND a.sequence = OLD.sequence
          AND a.event_id = OLD.event_id AND a.type = OLD.type
          AND a.command_id = OLD.command_id AND a.actor = OLD.actor
          AND a.recorded_at = OLD.recorded_at AND a.hash = OLD.hash
          AND a.document = OLD.document
    ) THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'ledger_event rows are immutable (% refused)', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;
CREATE OR REPLACE FUNCTION ledger_archivedevent_immutable() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'ledger_archivedevent rows are immutable (% refused)', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER ledger_archivedevent_no_update_delete
    BEFORE UPDATE OR DELETE ON ledger_archivedevent
    FOR EACH ROW EXECUTE FUNCTION ledger_archivedevent_immutable();
"""
POSTGRES_DOWN = """
DROP TRIGGER IF EXISTS ledger_archivedevent_no_update_delete ON ledger_archivedevent;
DROP FUNCTION IF EXISTS ledger_archivedevent_immutable();
CREATE OR REPLACE FUNCTION ledger_event_immutable() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'ledger_event rows are immutable (% refused)', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;
"""
SQLITE_UP = [
    "DROP TRIGGER IF EXISTS ledger_event_no_delete;",
    "CREATE TRIGGER ledger_event_no_delete BEFORE DELETE ON ledger_event "
    "WHEN NOT EXISTS (SELECT 1 FROM ledger_archivedevent a WHERE "
    "a.group_id = OLD.group_id AND a.sequence = OLD.sequence AND a.event_id = OLD.event_id "
    "AND a.type = OLD.type AND a.command_id = OLD.command_id AND a.actor = OLD.actor "
    "AND a.recorded_at = OLD.recorded_at AND a.hash = OLD.hash AND a.document = OLD.document) "
    "BEGIN SELECT RAISE(ABORT, 'ledger_event rows are immutable'); END;",
    "CREATE TRIGGER ledger_archivedevent_no_update BEFORE UPDATE ON ledger_archivedevent "
    "BEGIN SELECT RAISE(ABORT, 'ledger_archivedevent rows are immutable'); END;",
    "CREATE TRIGGER ledger_archivedevent_no_delete BEFORE DELETE ON ledger_archivedevent "
    "BEGIN SELECT RAISE(ABORT, 'ledger_archivedevent rows are immutable'); END;",
]
SQLITE_DOWN = [
    "DROP TRIGGER IF EXISTS ledger_archivedevent_no_update;",
    "DROP TRIGGER IF EXISTS ledger_archivedevent_no_delete;",
    "DROP TRIGGER IF EXISTS ledger_event_no_delete;",
    "CREATE TRIGGER ledger_event_no_delete BEFORE DELETE ON ledger_event "
    "BEGIN SELECT RAISE(ABORT, 'ledger_event rows are immutable'); END;",
]


def install(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRES_UP, params=None)
    else:
        for statement in SQLITE_UP:
            schema_editor.execute(statement)


def uninstall(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRES_DOWN, params=None)
    else:
        for statement in SQLITE_DOWN:
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("ledger", "0004_snapshots"),
        ("registry", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="grouplog",
            name="archived_through",
            field=models.PositiveBigIntegerField(default=0),
        ),
        migrations.CreateModel(
            name="ArchivedEvent",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("sequence", models.PositiveBigIntegerField()),
                ("event_id", models.CharField(max_length=64, unique=True)),
                ("type", models.CharField(max_length=100)),
                ("command_id", models.CharField(max_length=128)),
                ("actor", models.CharField(max_length=160)),
                ("recorded_at", models.DateTimeField()),
                ("hash", models.CharField(max_length=71)),
                ("document", models.TextField()),
                (
                    "group",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="archived_events",
                        to="registry.group",
                    ),
                ),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("group", "sequence"), name="archived_sequence_slot"
                    )
                ],
            },
        ),
        migrations.RunPython(install, uninstall),
    ]
