"""Events are append-only: the database itself refuses UPDATE and DELETE of ``ledger_event``.

A trigger, not application discipline, so a bug, a shell session or a careless migration
cannot rewrite history. TRUNCATE stays possible for the table owner (test teardown).
"""

from django.db import migrations

POSTGRES_UP = """
CREATE OR REPLACE FUNCTION ledger_event_immutable() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'ledger_event rows are immutable (% refused)', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER ledger_event_no_update_delete
    BEFORE UPDATE OR DELETE ON ledger_event
    FOR EACH ROW EXECUTE FUNCTION ledger_event_immutable();
"""
POSTGRES_DOWN = """
DROP TRIGGER IF EXISTS ledger_event_no_update_delete ON ledger_event;
DROP FUNCTION IF EXISTS ledger_event_immutable();
"""
SQLITE_UP = [
    "CREATE TRIGGER ledger_event_no_update BEFORE UPDATE ON ledger_event "
    "BEGIN SELECT RAISE(ABORT, 'ledger_event rows are immutable'); END;",
    "CREATE TRIGGER ledger_event_no_delete BEFORE DELETE ON ledger_event "
    "BEGIN SELECT RAISE(ABORT, 'ledger_event rows are immutable'); END;",
]
SQLITE_DOWN = [
    "DROP TRIGGER IF EXISTS ledger_event_no_update;",
    "DROP TRIGGER IF EXISTS ledger_event_no_delete;",
]


def install(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRES_UP, params=None)
    else:
        for statement in SQLITE_UP:
            schema_editor.execute(statement)


def uninstall(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRES_DOWN)
    else:
        for statement in SQLITE_DOWN:
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("ledger", "0001_initial")]
    operations = [migrations.RunPython(install, uninstall)]
