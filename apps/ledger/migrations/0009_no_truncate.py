"""``TRUNCATE`` of the log and its archive is refused by a trigger too (issue 16 §4).

The row triggers of ``0002_events_are_immutable`` and ``0005_archive`` refuse UPDATE and
DELETE of an event, but ``TRUNCATE`` fires no row trigger: the table's owner could empty the
log in one statement. A statement trigger now refuses it on both tables, for every role.

One switch is left, for the test suite only: Django empties a test database between
transactional tests with ``TRUNCATE``, so the trigger lets it through when the session's
``mwp.allow_truncate`` is ``on``, which ``tests/conftest.py`` sets on the test database alone
(``ALTER DATABASE … SET``). Setting it needs no privilege, which is why the application's
own role is not granted ``TRUNCATE`` at all (``apps.ledger.db_roles``): for that role the
statement is refused before any trigger runs. SQLite has no ``TRUNCATE``; its ``DELETE``
triggers already cover a ``DELETE`` without ``WHERE``.
"""

from django.db import migrations

TABLES = ("ledger_event", "ledger_archivedevent")

POSTGRES_UP = """
CREATE OR REPLACE FUNCTION ledger_refuse_truncate() RETURNS trigger AS $$
BEGIN
    IF current_setting('mwp.allow_truncate', true) = 'on' THEN
        RETURN NULL;
    END IF;
    RAISE EXCEPTION '% is append-only: TRUNCATE refused', TG_TABLE_NAME
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;
""" + "".join(
    f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
    "FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_truncate();\n"
    for table in TABLES
)
POSTGRES_DOWN = "".join(
    f"DROP TRIGGER IF EXISTS {table}_no_truncate ON {table};\n" for table in TABLES
) + ("DROP FUNCTION IF EXISTS ledger_refuse_truncate();\n")


def install(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRES_UP, params=None)


def uninstall(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(POSTGRES_DOWN, params=None)


class Migration(migrations.Migration):
    dependencies = [("ledger", "0008_no_group_only_index")]
    operations = [migrations.RunPython(install, uninstall)]
