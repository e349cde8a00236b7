"""The log's last defences (issue 16 §4): a TRUNCATE trigger for every role, and an
application role that writes the log but cannot rewrite, empty or disable it.

Real PostgreSQL. The role is created inside the test's transaction (roles and grants are
transactional, so nothing outlives the test), granted by ``apps.ledger.db_roles``, and taken
with ``SET LOCAL ROLE``: every statement after it is checked against that role's privileges,
as a server connecting as it would be. Each forbidden statement runs in its own savepoint.
"""

from __future__ import annotations

import io
import tempfile

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import DatabaseError, connection, transaction

from apps.dashboard import timeline_reads
from apps.ledger.archive import archive
from apps.ledger.db_roles import grant_app_privileges
from apps.ledger.models import Event, GroupLog
from apps.ledger.snapshots import take_as_authority
from apps.ledger.storage_check import storage_problems
from apps.ledger.write_path import submit_command
from tests.factories import World, mission_body

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="roles, grants and TRUNCATE are PostgreSQL's"
    ),
]


def _sql(statement: str, params: list[object] | None = None) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return cursor.fetchall() if cursor.description else []


def _refused(statement: str) -> str:
    """Run ``statement`` in a savepoint; the database's refusal, or fail."""
    try:
        with transaction.atomic():
            _sql(statement)
    except DatabaseError as refusal:
        return str(refusal)
    raise AssertionError(f"{statement!r} was allowed")


@pytest.fixture
def app_role(world: World) -> str:
    """An ordinary role (owns nothing), granted the application's privileges."""
    name = f"mwp_app_{connection.settings_dict['NAME']}"[:63]
    _sql(f"CREATE ROLE {connection.ops.quote_name(name)} NOLOGIN")
    grant_app_privileges(name)
    return name


def _become(role: str) -> None:
    _sql(f"SET LOCAL ROLE {connection.ops.quote_name(role)}")


def _accept_one(world: World) -> int:
    document = world.w1.command(world.group, "mission.create", mission_body())
    submit_command(group_id=world.group, document=document, caller=world.w1.caller)
    return GroupLog.objects.get(group_id=world.group).head_sequence


def test_the_application_role_writes_through_the_write_path(world: World, app_role: str) -> None:
    """What the product does, it can still do as that role: commands are accepted, the
    event, the projection, the record and the head are written, and the log is read."""
    before = GroupLog.objects.get(group_id=world.group).head_sequence
    _become(app_role)
    assert _sql("SELECT current_user")[0][0] == app_role
    head = _accept_one(world)
    assert head == before + 1
    assert Event.objects.filter(group_id=world.group, sequence=head).exists()


def test_the_application_role_cannot_rewrite_empty_or_disable_the_log(
    world: World, app_role: str
) -> None:
    _accept_one(world)
    _become(app_role)
    refusals = {
        "rewrite": _refused("UPDATE ledger_event SET document = '{}'"),
        "delete": _refused("DELETE FROM ledger_event"),
        "empty": _refused("TRUNCATE ledger_event"),
        "empty the archive": _refused("TRUNCATE ledger_archivedevent"),
        "rewrite the archive": _refused("UPDATE ledger_archivedevent SET document = '{}'"),
        "delete from the archive": _refused("DELETE FROM ledger_archivedevent"),
        "disable": _refused("ALTER TABLE ledger_event DISABLE TRIGGER ALL"),
        "drop the trigger": _refused("DROP TRIGGER ledger_event_no_update_delete ON ledger_event"),
        "replica bypass": _refused("SET session_replication_role = replica"),
    }
    refused_because = ("permission denied", "immutable", "must be owner")
    for what, message in refusals.items():
        assert any(reason in message for reason in refused_because), (what, message)
    # granting itself more is not an error in PostgreSQL, only a warning that grants nothing
    _sql(f"GRANT UPDATE, TRUNCATE ON ledger_event TO {connection.ops.quote_name(app_role)}")
    assert "permission denied" in _refused("UPDATE ledger_event SET document = '{}'")
    # the test database's switch for Django's flush does not help a role without TRUNCATE
    _sql("SET LOCAL mwp.allow_truncate = 'on'")
    assert "permission denied" in _refused("TRUNCATE ledger_event")
    assert _sql("SELECT count(*) FROM ledger_event")[0][0] > 0


def test_truncate_of_the_log_is_refused_for_its_owner_too(world: World) -> None:
    """The statement trigger refuses ``TRUNCATE`` whoever sends it (here the owner and
    superuser that ran the migrations), unless the session says it is a test's flush."""
    _accept_one(world)
    _sql("SET CONSTRAINTS ALL IMMEDIATE")  # TRUNCATE waits for no deferred foreign-key check
    _sql("SET LOCAL mwp.allow_truncate = 'off'")
    for table in ("ledger_event", "ledger_archivedevent"):
        assert "append-only: TRUNCATE refused" in _refused(f"TRUNCATE {table} CASCADE")
    assert _sql("SELECT count(*) FROM ledger_event")[0][0] > 0


@pytest.mark.parametrize(
    ("attributes", "problem"), [("SUPERUSER", "superuser"), ("BYPASSRLS", "superuser")]
)
def test_a_role_that_could_undo_the_defences_is_not_granted(
    world: World, attributes: str, problem: str
) -> None:
    name = f"mwp_strong_{connection.settings_dict['NAME']}"[:63]
    _sql(f"CREATE ROLE {connection.ops.quote_name(name)} NOLOGIN {attributes}")
    with pytest.raises(ImproperlyConfigured, match=problem):
        grant_app_privileges(name)


def test_a_role_that_owns_a_table_is_not_granted(world: World, app_role: str) -> None:
    _sql(f"ALTER TABLE work_mission OWNER TO {connection.ops.quote_name(app_role)}")
    with pytest.raises(ImproperlyConfigured, match="owns work_mission"):
        grant_app_privileges(app_role)
    with pytest.raises(CommandError, match="owns work_mission"):
        call_command("grant_app_role", app_role)


def test_an_unknown_role_is_named(world: World) -> None:
    with pytest.raises(ImproperlyConfigured, match="no database role 'nobody-here'"):
        grant_app_privileges("nobody-here")


# --- issue 33 §1: the floor guards the log ---------------------------------------------------


def _head_row(group: str) -> tuple[int, str, int]:
    return _sql(
        "SELECT head_sequence, head_hash, archived_through FROM ledger_grouplog "
        "WHERE group_id = %s",
        [group],
    )[0]


def _snapshot_and_archive(world: World) -> int:
    """A signed snapshot at the head, then ``archive`` through it: what retention does."""
    sequence = take_as_authority(world.group).snapshot.sequence
    assert archive(world.group, sequence) == sequence
    return sequence


def test_the_probes_rewrite_is_refused_statement_by_statement(world: World, app_role: str) -> None:
    """The probe's four statements, as the application's role: copy the head event into the
    archive, delete it, insert a forged event at its sequence, move the head onto it. The
    first three are refused; the fourth alone forges nothing (the event is unchanged)."""
    for _ in range(3):
        _accept_one(world)
    head, head_hash, _floor = _head_row(world.group)
    group = world.group
    _become(app_role)
    columns = "group_id, sequence, event_id, type, command_id, actor, recorded_at, hash, document"
    copy = _refused(
        f"INSERT INTO ledger_archivedevent ({columns}) SELECT {columns} FROM ledger_event "
        f"WHERE group_id = '{group}' AND sequence = {head}"
    )
    delete = _refused(f"DELETE FROM ledger_event WHERE group_id = '{group}' AND sequence = {head}")
    forge = _refused(
        f"INSERT INTO ledger_event ({columns}) SELECT group_id, sequence, 'evt_forged', type, "
        "command_id, actor, recorded_at, hash, '{}' FROM ledger_event "
        f"WHERE group_id = '{group}' AND sequence = {head}"
    )
    for message in (copy, delete):
        assert "permission denied" in message
    assert "gapless_sequence_slot" in forge or "duplicate key" in forge
    _sql(
        "UPDATE ledger_grouplog SET head_hash = head_hash WHERE group_id = %s", [group]
    )  # the head is the write path's to move: allowed, and harmless alone
    assert _head_row(group)[:2] == (head, head_hash)
    document = _sql(
        "SELECT document FROM ledger_event WHERE group_id = %s AND sequence = %s", [group, head]
    )[0][0]
    assert '"evt_forged"' not in document


def test_no_path_changes_deletes_or_reinserts_an_event_above_the_floor(
    world: World, app_role: str
) -> None:
    """Every other door, as the application's role: the floor cannot be moved by hand, the
    head row cannot be deleted and re-created at 0, the archiving function moves nothing past
    a snapshot or the head, and a signed head cannot be changed or removed."""
    for _ in range(3):
        _accept_one(world)
    group = world.group
    head, _hash, floor = _head_row(group)
    _become(app_role)
    refusals = {
        "raise the floor by hand": _refused(
            f"UPDATE ledger_grouplog SET archived_through = {head} WHERE group_id = '{group}'"
        ),
        "delete the head row": _refused(f"DELETE FROM ledger_grouplog WHERE group_id = '{group}'"),
        "archive past every snapshot": _refused(
            f"SELECT ledger_archive_through('{group}', {head})"
        ),
        "archive past the head": _refused(f"SELECT ledger_archive_through('{group}', {head + 5})"),
        "rewrite an event": _refused(
            f"UPDATE ledger_event SET document = '{{}}' WHERE group_id = '{group}'"
        ),
        "delete from the archive": _refused("DELETE FROM ledger_archivedevent"),
        "change a signed head": _refused("UPDATE ledger_signedhead SET hash = 'x'"),
        "delete a signed head": _refused("DELETE FROM ledger_signedhead"),
    }
    for what, message in refusals.items():
        assert any(
            reason in message
            for reason in ("permission denied", "needs a snapshot", "its head is", "immutable")
        ), (what, message)
    assert _head_row(group) == (head, _hash, floor)


def test_archiving_works_as_the_role_and_an_archived_sequence_is_never_taken_again(
    world: World, app_role: str
) -> None:
    """R16-08: ``archive`` runs as the application's role (through the owner's function);
    afterwards no event can be inserted at an archived sequence, by the role or the owner,
    and no online row is left at or below the floor."""
    for _ in range(3):
        _accept_one(world)
    group = world.group
    _become(app_role)
    floor = _snapshot_and_archive(world)
    assert _head_row(group)[2] == floor
    assert _sql(
        "SELECT count(*) FROM ledger_event WHERE group_id = %s AND sequence <= %s", [group, floor]
    ) == [(0,)]
    assert _sql("SELECT count(*) FROM ledger_archivedevent WHERE group_id = %s", [group]) == [
        (floor,)
    ]
    columns = "group_id, sequence, event_id, type, command_id, actor, recorded_at, hash, document"
    reinsert = (
        f"INSERT INTO ledger_event ({columns}) SELECT group_id, sequence, 'evt_again', type, "
        f"command_id, actor, recorded_at, hash, document FROM ledger_archivedevent "
        f"WHERE group_id = '{group}' AND sequence = 1"
    )
    assert "is archived and cannot be taken again" in _refused(reinsert)
    _sql("RESET ROLE")
    assert "is archived and cannot be taken again" in _refused(reinsert)
    assert "above the floor" in _refused(
        f"INSERT INTO ledger_archivedevent ({columns}) SELECT {columns} FROM ledger_event "
        f"WHERE group_id = '{group}' AND sequence = {floor + 1}"
    )
    _accept_one(world)  # and the log goes on above the floor


def test_the_verifiers_catch_an_archive_that_disagrees_with_the_log(world: World) -> None:
    """A disagreement only the schema owner can make (triggers off): a stray archived copy
    above the floor. ``rebuild_projections --verify``, ``verify_export`` and the dashboard's
    chain check each fail on it."""
    for _ in range(3):
        _accept_one(world)
    group = world.group
    head = _head_row(group)[0]
    out = io.StringIO()
    call_command("rebuild_projections", "--group", group, "--verify", stdout=out)
    assert "projections match" in out.getvalue()
    assert _timeline(group).verified
    columns = "group_id, sequence, event_id, type, command_id, actor, recorded_at, hash, document"
    _sql("SET LOCAL session_replication_role = replica")
    _sql(
        f"INSERT INTO ledger_archivedevent ({columns}) SELECT group_id, sequence, "
        f"event_id || '_copy', type, command_id, actor, recorded_at, hash, document "
        f"FROM ledger_event WHERE group_id = %s AND sequence = %s",
        [group, head],
    )
    _sql("SET LOCAL session_replication_role = origin")

    problems = storage_problems(group)
    assert problems == [f"archived events above the floor 0: #{head}"]
    out = io.StringIO()
    with pytest.raises(CommandError, match="1 group differs from its log"):
        call_command("rebuild_projections", "--group", group, "--verify", stdout=out)
    assert f"storage: archived events above the floor 0: #{head}" in out.getvalue()
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as export:
        call_command("export_group", group, "--output", export.name)
        with pytest.raises(CommandError, match="archive and online log disagree"):
            call_command("verify_export", export.name)
    page = _timeline(group)
    assert not page.verified
    assert page.storage_problems == tuple(problems)


def _timeline(group: str) -> timeline_reads.Page:
    """The dashboard's Timeline, newest page: what a person reads the chain's verdict on."""
    return timeline_reads.timeline_page(group, timeline_reads.read_filters(group, {}))
