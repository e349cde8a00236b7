"""The log's last defences (issue 16 §4): a TRUNCATE trigger for every role, and an
application role that writes the log but cannot rewrite, empty or disable it.

Real PostgreSQL. The role is created inside the test's transaction (roles and grants are
transactional, so nothing outlives the test), granted by ``apps.ledger.db_roles``, and taken
with ``SET LOCAL ROLE``: every statement after it is checked against that role's privileges,
as a server connecting as it would be. Each forbidden statement runs in its own savepoint.
"""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import DatabaseError, connection, transaction

from apps.ledger.db_roles import grant_app_privileges
from apps.ledger.models import Event, GroupLog
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
