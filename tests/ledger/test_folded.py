"""A run's writes folded into one data-modifying ``WITH`` (``folded``, issue 38 §1): one
statement for the event, the projection rows, the record and the head, with the same rows
as the statements it replaces, and the runs it cannot fold sent as before."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from apps.ledger.folded import Folded
from apps.ledger.models import CommandRecord, Event, GroupLog
from apps.ledger.statements import COPY_FROM_ROWS, statements_of
from apps.ledger.write_path import submit_command
from apps.work.models import Mission
from tests.factories import World, grant, group, mission_body, unique
from tests.ledger.checks import assert_log_consistent


def test_statements_fold_into_one_with_in_the_order_issued() -> None:
    """Each statement becomes a sub-statement, the last the main one, the parameters in the
    order the statements were issued; an ``executemany`` of a plain ``INSERT`` one
    ``VALUES`` list; the trailing ``COMMIT`` is kept apart."""
    kept = Folded()
    kept.executemany("INSERT INTO e (a, b) VALUES (%s, %s)", [[1, 2], [3, 4]])
    kept.executemany('INSERT INTO "m" ("c") VALUES (%s)', [[5]])
    kept.executemany("UPDATE m SET c = %s WHERE k = %s", [[6, "x"], [7, "y"]])
    kept.execute("UPDATE h SET s = %s WHERE g = %s", [8, "g"])
    kept.execute("COMMIT")

    assert kept.fold(most_rows=COPY_FROM_ROWS) == (
        "WITH w0 AS (INSERT INTO e (a, b) VALUES (%s, %s), (%s, %s)), "
        'w1 AS (INSERT INTO "m" ("c") VALUES (%s)), '
        "w2 AS (UPDATE m SET c = %s WHERE k = %s), "
        "w3 AS (UPDATE m SET c = %s WHERE k = %s) "
        "UPDATE h SET s = %s WHERE g = %s",
        [1, 2, 3, 4, 5, 6, "x", 7, "y", 8, "g"],
        True,
    )


def test_one_statement_is_sent_as_itself() -> None:
    kept = Folded()
    kept.execute("UPDATE h SET s = %s WHERE g = %s", [8, "g"])

    assert kept.fold(most_rows=COPY_FROM_ROWS) == (
        "UPDATE h SET s = %s WHERE g = %s",
        [8, "g"],
        False,
    )


def test_a_copy_sized_insert_or_a_read_is_handed_back() -> None:
    """A batch's ``COPY``-sized insert or a statement that modifies nothing does not fold:
    ``None``, and ``sent_as_one`` sends the kept statements as before (``replay``)."""
    copy_sized, read = Folded(), Folded()
    for kept in (copy_sized, read):
        kept.execute("UPDATE h SET s = %s WHERE g = %s", [8, "g"])
    copy_sized.executemany("INSERT INTO e (a) VALUES (%s)", [[n] for n in range(COPY_FROM_ROWS)])
    read.execute("SELECT 1")

    assert copy_sized.fold(most_rows=COPY_FROM_ROWS) is None
    assert read.fold(most_rows=COPY_FROM_ROWS) is None


def test_nothing_kept_or_only_the_commit_folds_to_nothing() -> None:
    only_commit = Folded()
    only_commit.execute("COMMIT")

    assert Folded().fold(most_rows=COPY_FROM_ROWS) is None
    assert only_commit.fold(most_rows=COPY_FROM_ROWS) is None


@pytest.mark.django_db
def test_a_commands_writes_are_one_statement(world: World) -> None:
    """issue 38 §1: the event, the mission row, the record and the head in one ``WITH``."""
    if connection.vendor != "postgresql":
        pytest.skip("SQLite runs the statements one by one")
    submit_command(
        group_id=world.group,
        document=world.w1.command(world.group, "mission.create", mission_body()),
        caller=world.w1.caller,
    )
    document = world.w1.command(world.group, "mission.create", mission_body())

    with CaptureQueriesContext(connection) as captured:
        submit_command(group_id=world.group, document=document, caller=world.w1.caller)

    writes = [q["sql"] for q in captured if "INSERT INTO ledger_event" in q["sql"]]
    assert len(writes) == 1
    (statement,) = statements_of(writes[0])
    assert statement.startswith("WITH w0 AS (INSERT INTO ledger_event ")
    assert '"work_mission"' in statement
    assert '"ledger_commandrecord"' in statement
    assert statement.rstrip().endswith(f"WHERE group_id = '{world.group}'")
    assert_log_consistent(world.group)


def _rows_written(group_id: str) -> dict[str, object]:
    """What a group holds, without what differs by group and run (ids, times, hashes)."""
    missions = Mission.objects.filter(group_id=group_id).order_by("created_sequence")
    return {
        "missions": [
            {k: v for k, v in row.items() if k not in {"id", "group_id"}}
            for row in missions.values()
        ],
        "records": sorted(
            (row.actor, row.command_id, row.status, repr(row.response["result"]))
            for row in CommandRecord.objects.filter(group_id=group_id, command_id__startswith="c-")
        ),
        "events": list(
            Event.objects.filter(group_id=group_id)
            .order_by("sequence")
            .values_list("sequence", "type", "actor")
        ),
        "head": GroupLog.objects.get(group_id=group_id).head_sequence,
    }


@pytest.mark.django_db
def test_folded_and_unfolded_writes_leave_the_same_rows(world: World) -> None:
    """R16-10: the same commands into two groups, one with its writes folded and one
    without, leave the same missions, records, events and head (ids, times and hashes
    aside), and each log replays to its projections."""
    folded, unfolded = (group(f"g-{name}", world.org) for name in ("folded", "unfolded"))
    for group_id in (folded, unfolded):
        grant(world.alice, group_id, world.w1, "coordinator")
    for folded_writes, group_id in ((True, folded), (False, unfolded)):
        with override_settings(MWP_FOLDED_WRITES=folded_writes):
            for index in range(3):
                body = mission_body(f"m-same-{index}")
                if index:
                    body["parent"] = "m-same-0"
                submit_command(
                    group_id=group_id,
                    document=world.w1.command(group_id, "mission.create", body, id=f"c-{index}"),
                    caller=world.w1.caller,
                )
        assert_log_consistent(group_id)

    assert _rows_written(folded) == _rows_written(unfolded)


@pytest.mark.django_db
def test_a_command_id_sent_again_is_answered_from_its_record(world: World) -> None:
    """wire§3 step 5: the record the folded statement wrote answers the same command again,
    and nothing more is appended."""
    document = world.w1.command(world.group, "mission.create", mission_body(unique("m")))
    first = submit_command(group_id=world.group, document=document, caller=world.w1.caller)
    head = GroupLog.objects.get(group_id=world.group).head_sequence

    again = submit_command(group_id=world.group, document=document, caller=world.w1.caller)

    assert again.replayed
    assert (again.status, again.body) == (first.status, first.body)
    assert GroupLog.objects.get(group_id=world.group).head_sequence == head
