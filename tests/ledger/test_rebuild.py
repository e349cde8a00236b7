"""``manage.py rebuild_projections [--group G] [--verify]``: projections are disposable.

``--verify`` compares a replay of the log with the live rows and exits non-zero on any
difference; a plain run replaces the rows from the log. Projection rows are tampered with
directly here (only a test may) to prove the comparison sees it.

These tests are transactional: ``--verify`` reads in its own REPEATABLE READ transaction, as
it does when run from the shell.
"""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command
from django.db import connection, transaction

from apps.ledger.models import Event
from apps.ledger.write_path import submit_batch, submit_command
from apps.registry.models import Membership
from apps.work.models import Mission
from tests import factories
from tests.factories import World, mission_body
from tests.ledger.checks import assert_log_consistent


def _run(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("rebuild_projections", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def _refused(*args: str) -> tuple[str, str, CommandError]:
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError) as failure:
        call_command("rebuild_projections", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue(), failure.value


def _create_missions(world: World, *ids: str, group: str | None = None) -> None:
    group = group or world.group
    for mission_id in ids:
        document = world.olga.command(group, "mission.create", mission_body(mission_id))
        submit_command(group_id=group, document=document, caller=world.olga.caller)


@pytest.mark.django_db(transaction=True)
def test_verify_passes_on_a_consistent_log(world: World) -> None:
    """R16 (projections equal a replay of the log): nothing to report."""
    _create_missions(world, "m-1", "m-2")
    _create_missions(world, "m-3")

    out, err = _run("--verify")

    assert out == f"{world.group}: 6 events, projections match\n"  # 3 grants, 3 missions
    assert err == ""


@pytest.mark.django_db(transaction=True)
def test_verify_reports_a_tampered_mission_and_a_plain_rebuild_repairs_it(world: World) -> None:
    """R16: a projection row that differs from the log is reported, the command exits
    non-zero, and a rebuild restores the row from the log."""
    _create_missions(world, "m-1", "m-2")
    Mission.objects.filter(group_id=world.group, mission_id="m-2").update(goal="forged goal")

    out, _, failure = _refused("--verify")

    assert "1 group differs from its log" in str(failure)
    (line,) = out.splitlines()
    assert line.startswith(f"{world.group}: mission m-2: live ")
    assert "forged goal" in line
    assert Mission.objects.get(group_id=world.group, mission_id="m-2").goal == "forged goal"

    out, _ = _run()

    assert out == f"{world.group}: rebuilt from 5 events\n"
    assert (
        Mission.objects.get(group_id=world.group, mission_id="m-2").goal == mission_body()["goal"]
    )
    _run("--verify")
    assert_log_consistent(world.group)


@pytest.mark.django_db(transaction=True)
def test_verify_reports_tampered_missing_and_extra_membership_rows(world: World) -> None:
    """R16: a changed epoch, a row deleted and a row the log never created are each named."""
    Membership.objects.filter(group_id=world.group, principal=world.w1.principal).update(epoch=9)
    Membership.objects.filter(group_id=world.group, principal=world.w2.principal).delete()
    Membership.objects.create(
        group_id=world.group, principal="agent:intruder", roles=["admin"], epoch=1
    )

    out, _, _ = _refused("--verify")

    lines = sorted(out.splitlines())
    assert len(lines) == 3
    assert (
        lines[0]
        == f"{world.group}: membership agent:intruder: in the live projection but not in the log"
    )
    assert lines[1].startswith(f"{world.group}: membership agent:w1: live ")
    assert "epoch=9" in lines[1]
    assert lines[2] == f"{world.group}: membership agent:w2: missing from the live projection"

    _run()

    assert not Membership.objects.filter(principal="agent:intruder").exists()
    assert Membership.objects.get(group_id=world.group, principal=world.w1.principal).epoch == 1
    assert Membership.objects.filter(group_id=world.group, principal=world.w2.principal).exists()
    _run("--verify")


@pytest.mark.django_db(transaction=True)
def test_group_option_limits_verify_and_rebuild_to_the_named_groups(world: World) -> None:
    """R16: ``--group`` checks and rebuilds only the groups named (repeatable)."""
    other = factories.group("g-other", world.org)
    factories.grant(world.alice, other, world.olga, "mission_owner")
    _create_missions(world, "m-here")
    _create_missions(world, "m-there", group=other)
    Mission.objects.filter(group_id=other, mission_id="m-there").update(state="approved")

    out, _ = _run("--verify", "--group", world.group)
    assert out == f"{world.group}: 4 events, projections match\n"
    _refused("--verify", "--group", other)
    _refused("--verify", "--group", world.group, "--group", other)

    out, _ = _run("--group", world.group)
    assert out == f"{world.group}: rebuilt from 4 events\n"
    _refused("--verify", "--group", other)  # not repaired: not named

    _run("--group", other)
    out, _ = _run("--verify")
    assert out.splitlines() == [
        f"{other}: 2 events, projections match",
        f"{world.group}: 4 events, projections match",
    ]
    _, _, failure = _refused("--verify", "--group", "g-nowhere")
    assert "no group 'g-nowhere'" in str(failure)


@pytest.mark.django_db(transaction=True)
def test_verify_detects_a_rewritten_event_in_the_log(world: World) -> None:
    """wire§6: an event edited behind the trigger's back (replication role, superuser only)
    breaks the hash chain; verify and rebuild both refuse and name the sequence."""
    _create_missions(world, "m-1", "m-2")
    victim = Event.objects.get(group_id=world.group, sequence=4)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL session_replication_role = replica")
        cursor.execute(
            "UPDATE ledger_event SET document = replace(document, %s, %s) WHERE id = %s",
            ["m-1", "m-X", victim.pk],
        )

    _, err, _ = _refused("--verify")
    assert err == f"{world.group}: hash chain breaks at sequence 4\n"
    _, err, _ = _refused()
    assert err == f"{world.group}: hash chain breaks at sequence 4\n"
    assert Mission.objects.filter(group_id=world.group, mission_id="m-1").exists()


@pytest.mark.django_db(transaction=True)
def test_progress_bar_is_shown_for_logs_over_1000_events_only(world: World) -> None:
    """R16 operability: a long replay shows progress on stderr; a short one stays quiet."""
    _, err = _run("--verify")
    assert err == ""

    for start in range(0, 1000, 500):
        documents = [
            world.olga.command(world.group, "mission.create", mission_body(f"m-{n}"))
            for n in range(start, start + 500)
        ]
        results = submit_batch(group_id=world.group, documents=documents, caller=world.olga.caller)
        assert all(not isinstance(result, Exception) for result in results)
    total = Event.objects.filter(group_id=world.group).count()
    assert total == 1003  # 3 grants, 1000 missions

    out, err = _run("--verify")

    assert out == f"{world.group}: {total} events, projections match\n"
    assert world.group in err
    assert f"{total}/{total}" in err
    assert "ev" in err


@pytest.mark.django_db
def test_verify_also_runs_inside_a_callers_transaction(world: World) -> None:
    """R16: called from code that already holds a transaction (a task, a test), ``--verify``
    cannot choose its isolation level, so it locks the head instead — and still compares."""
    _create_missions(world, "m-1")
    assert connection.in_atomic_block

    out, _ = _run("--verify")
    assert out == f"{world.group}: 4 events, projections match\n"

    Mission.objects.filter(group_id=world.group, mission_id="m-1").update(goal="forged")
    out, _, _ = _refused("--verify")
    assert "forged" in out
