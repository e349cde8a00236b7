"""The floor guards the log (issue 33 §1; R16-08, R16-10).

``0005_archive`` let an online event be deleted whenever an identical copy was in the
archive, whatever the group's ``archived_through``: so a role that could write the archive and
delete from the log could copy the head event aside, delete it, insert a forged one at the
same sequence and serve it under a signed head. Four rules close that, each in the database,
where no code path can forget it:

1. an event may leave the online log only at or below its group's floor, and only with its
   identical copy archived;
2. an archived row may be inserted only at or below the floor (so the floor is raised first);
3. no event may be inserted into the online log at or below the floor: a sequence that was
   archived (and so deleted online) can never be taken again;
4. moving events is one function, ``ledger_archive_through``, owned by the schema owner and
   run with its rights (``SECURITY DEFINER``): it raises the floor, copies and deletes in one
   statement's transaction, and the application's role keeps no INSERT on the archive, no
   DELETE on the log and no UPDATE of ``archived_through`` (``apps.ledger.db_roles``).

The function checks what ``apps.ledger.archive.archive`` checks (a snapshot at or after the
new floor, R16-10; never past the head), so calling it directly grants nothing more. SQLite
(the embedded default) has no roles: it gets rules 1–3 as triggers and archives in Python.
"""

from django.db import migrations

# The schema is fixed into the function's search_path when the migration runs, so a caller
# cannot redirect its table names with a search_path of its own (the usual SECURITY DEFINER
# precaution).
POSTGRES_UP = """
CREATE OR REPLACE FUNCTION ledger_event_immutable() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE' AND OLD.sequence <= (
        SELECT g.archived_through FROM ledger_grouplog g WHERE g.group_id = OLD.group_id
    ) AND EXISTS (
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

CREATE OR REPLACE FUNCTION ledger_event_above_floor() RETURNS trigger AS $$
BEGIN
    IF NEW.sequence <= COALESCE(
        (SELECT g.archived_through FROM ledger_grouplog g WHERE g.group_id = NEW.group_id), 0
    ) THEN
        RAISE EXCEPTION 'ledger_event: sequence % of % is archived and cannot be taken again',
            NEW.sequence, NEW.group_id USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER ledger_event_insert_above_floor
    BEFORE INSERT ON ledger_event
    FOR EACH ROW EXECUTE FUNCTION ledger_event_above_floor();

CREATE OR REPLACE FUNCTION ledger_archivedevent_below_floor() RETURNS trigger AS $$
BEGIN
    IF NEW.sequence > COALESCE(
        (SELECT g.archived_through FROM ledger_grouplog g WHERE g.group_id = NEW.group_id), 0
    ) THEN
        RAISE EXCEPTION 'ledger_archivedevent: sequence % of % is above the floor',
            NEW.sequence, NEW.group_id USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER ledger_archivedevent_insert_below_floor
    BEFORE INSERT ON ledger_archivedevent
    FOR EACH ROW EXECUTE FUNCTION ledger_archivedevent_below_floor();

CREATE OR REPLACE FUNCTION ledger_archive_through(p_group text, p_through bigint)
RETURNS bigint AS $$
DECLARE
    v_floor bigint;
    v_head bigint;
    v_moved bigint;
BEGIN
    SELECT archived_through, head_sequence INTO v_floor, v_head
        FROM ledger_grouplog WHERE group_id = p_group FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no group %', p_group USING ERRCODE = 'no_data_found';
    END IF;
    IF p_through <= v_floor THEN
        RETURN v_floor;
    END IF;
    IF p_through > v_head THEN
        RAISE EXCEPTION 'cannot archive % through %: its head is %', p_group, p_through, v_head
            USING ERRCODE = 'check_violation';
    END IF;
    IF NOT EXISTS (
        SELECT 1 FROM ledger_snapshot s WHERE s.group_id = p_group AND s.sequence >= p_through
    ) THEN
        RAISE EXCEPTION 'archiving % through % needs a snapshot at or after it', p_group, p_through
            USING ERRCODE = 'check_violation';
    END IF;
    UPDATE ledger_grouplog SET archived_through = p_through WHERE group_id = p_group;
    INSERT INTO ledger_archivedevent
        (group_id, sequence, event_id, type, command_id, actor, recorded_at, hash, document)
    SELECT group_id, sequence, event_id, type, command_id, actor, recorded_at, hash, document
        FROM ledger_event
        WHERE group_id = p_group AND sequence > v_floor AND sequence <= p_through;
    GET DIAGNOSTICS v_moved = ROW_COUNT;
    IF v_moved <> p_through - v_floor THEN
        RAISE EXCEPTION 'cannot archive % through %: % of its % events are online',
            p_group, p_through, v_moved, p_through - v_floor USING ERRCODE = 'data_corrupted';
    END IF;
    DELETE FROM ledger_event
        WHERE group_id = p_group AND sequence > v_floor AND sequence <= p_through;
    RETURN p_through;
END;
$$ LANGUAGE plpgsql SECURITY DEFINER SET search_path = {schema}, pg_temp;
REVOKE ALL ON FUNCTION ledger_archive_through(text, bigint) FROM PUBLIC;
"""

POSTGRES_DOWN = """
DROP FUNCTION IF EXISTS ledger_archive_through(text, bigint);
DROP TRIGGER IF EXISTS ledger_archivedevent_insert_below_floor ON ledger_archivedevent;
DROP FUNCTION IF EXISTS ledger_archivedevent_below_floor();
DROP TRIGGER IF EXISTS ledger_event_insert_above_floor ON ledger_event;
DROP FUNCTION IF EXISTS ledger_event_above_floor();
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
"""

_FLOOR = "(SELECT g.archived_through FROM ledger_grouplog g WHERE g.group_id = NEW.group_id)"
SQLITE_UP = [
    "DROP TRIGGER IF EXISTS ledger_event_no_delete;",
    "CREATE TRIGGER ledger_event_no_delete BEFORE DELETE ON ledger_event "
    "WHEN OLD.sequence > (SELECT g.archived_through FROM ledger_grouplog g "
    "WHERE g.group_id = OLD.group_id) "
    "OR NOT EXISTS (SELECT 1 FROM ledger_archivedevent a WHERE "
    "a.group_id = OLD.group_id AND a.sequence = OLD.sequence AND a.event_id = OLD.event_id "
    "AND a.type = OLD.type AND a.command_id = OLD.command_id AND a.actor = OLD.actor "
    "AND a.recorded_at = OLD.recorded_at AND a.hash = OLD.hash AND a.document = OLD.document) "
    "BEGIN SELECT RAISE(ABORT, 'ledger_event rows are immutable'); END;",
    "CREATE TRIGGER ledger_event_insert_above_floor BEFORE INSERT ON ledger_event "
    f"WHEN NEW.sequence <= COALESCE({_FLOOR}, 0) "
    "BEGIN SELECT RAISE(ABORT, 'ledger_event: that sequence is archived'); END;",
    "CREATE TRIGGER ledger_archivedevent_insert_below_floor BEFORE INSERT ON "
    f"ledger_archivedevent WHEN NEW.sequence > COALESCE({_FLOOR}, 0) "
    "BEGIN SELECT RAISE(ABORT, 'ledger_archivedevent: sequence above the floor'); END;",
]
SQLITE_DOWN = [
    "DROP TRIGGER IF EXISTS ledger_archivedevent_insert_below_floor;",
    "DROP TRIGGER IF EXISTS ledger_event_insert_above_floor;",
    "DROP TRIGGER IF EXISTS ledger_event_no_delete;",
    "CREATE TRIGGER ledger_event_no_delete BEFORE DELETE ON ledger_event "
    "WHEN NOT EXISTS (SELECT 1 FROM ledger_archivedevent a WHERE "
    "a.group_id = OLD.group_id AND a.sequence = OLD.sequence AND a.event_id = OLD.event_id "
    "AND a.type = OLD.type AND a.command_id = OLD.command_id AND a.actor = OLD.actor "
    "AND a.recorded_at = OLD.recorded_at AND a.hash = OLD.hash AND a.document = OLD.document) "
    "BEGIN SELECT RAISE(ABORT, 'ledger_event rows are immutable'); END;",
]


def install(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_schema()")
            (schema,) = cursor.fetchone()
        sql = POSTGRES_UP.replace("{schema}", connection.ops.quote_name(schema))
        schema_editor.execute(sql, params=None)
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
    dependencies = [("ledger", "0009_no_truncate")]
    operations = [migrations.RunPython(install, uninstall)]
