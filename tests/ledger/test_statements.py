"""The write path's statements sent as one query (``statements.sent_as_one``, issue 15 §1):
what the server stores is what was sent, a run costs two queries however many commands it
holds, and a statement that fails leaves nothing of its run behind (R11.1-03: the log is
authoritative, so its projections change with it or not at all)."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from apps.ledger.models import CommandRecord, Event, GroupLog
from apps.ledger.statements import _Collected
from apps.ledger.write_path import Outcome, submit_batch, submit_command
from apps.work.models import Mission
from tests.factories import World, mission_body, unique
from tests.ledger.checks import assert_log_consistent

#: any text a goal may hold: every character but U+0000 (refused at the edge, wire.md §8)
#: and lone surrogates (not text)
GOALS = st.text(
    alphabet=st.characters(exclude_categories=("Cs",), exclude_characters="\x00"),
    min_size=1,
    max_size=300,
).filter(str.strip)


@settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(goal=GOALS)
@example(goal="it's \\'; DROP TABLE ledger_event; -- %s %(x)s $1 ? E'\\x00'")
@example(goal='"}]) \\u0000 \\\\ \n\t\r 😀 ﬀ')
@pytest.mark.django_db
def test_any_text_is_stored_exactly_as_sent(world: World, goal: str) -> None:
    """wire§3, R16-10: parameters quoted into the query text by the client reach the
    projection row, the event document and the record byte for byte, and the chain holds."""
    mission = unique("m")
    document = world.w1.command(world.group, "mission.create", mission_body(mission, goal=goal))

    outcome = submit_command(group_id=world.group, document=document, caller=world.w1.caller)

    assert outcome.status == 201
    assert Mission.objects.get(group_id=world.group, mission_id=mission).goal == goal
    event = Event.objects.get(group_id=world.group, command_id=document["id"])
    assert event.as_wire()["payload"]["goal"] == goal
    assert CommandRecord.objects.get(group_id=world.group, command_id=document["id"]).response[
        "result"
    ] == {"mission": mission}
    assert_log_consistent(world.group)


@pytest.mark.django_db
def test_a_batch_costs_two_queries_however_many_commands_it_holds(world: World) -> None:
    """issue 15 §2: the lock with the reads under it in one query, every write of the batch
    in another, whether it holds one command or forty (once the process knows the agent's
    keys, ``agents``)."""
    submit_command(
        group_id=world.group,
        document=world.w1.command(world.group, "mission.create", mission_body()),
        caller=world.w1.caller,
    )
    for size in (1, 40):
        documents = [
            world.w1.command(world.group, "mission.create", mission_body()) for _ in range(size)
        ]
        with CaptureQueriesContext(connection) as captured:
            results = submit_batch(
                group_id=world.group, documents=documents, caller=world.w1.caller
            )

        assert all(isinstance(r, Outcome) and r.status == 201 for r in results)
        assert len(captured.captured_queries) == 2, [q["sql"][:80] for q in captured]
    assert_log_consistent(world.group)


@pytest.mark.django_db
def test_a_statement_that_fails_leaves_nothing_of_its_run(world: World) -> None:
    """R11.1-03, R16-10: the event slot the flush needs is taken behind the write path's back;
    its INSERT fails, the statements after it are not run, and the transaction leaves no
    mission, no record and no moved head."""
    head = GroupLog.objects.get(group_id=world.group)
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO ledger_event (group_id, sequence, event_id, type, command_id, actor, "
            "recorded_at, hash, document) VALUES (%s, %s, %s, 'x', 'x', 'x', now(), 'x', '{}')",
            [world.group, head.head_sequence + 1, unique("evt")],
        )
    mission = unique("m")
    document = world.w1.command(world.group, "mission.create", mission_body(mission))

    with pytest.raises(IntegrityError):
        submit_command(group_id=world.group, document=document, caller=world.w1.caller)

    assert not Mission.objects.filter(group_id=world.group, mission_id=mission).exists()
    assert not CommandRecord.objects.filter(command_id=document["id"]).exists()
    assert GroupLog.objects.get(group_id=world.group).head_sequence == head.head_sequence


def test_many_rows_of_an_insert_become_one_statement_and_others_stay_one_each() -> None:
    """issue 15 §2: a batch's rows of one table are one ``INSERT … VALUES (…), (…)``, which
    the server parses once; an UPDATE stays one statement per row."""
    collected = _Collected(lambda sql, params: sql.replace("%s", repr(params[0])))

    collected.executemany("INSERT INTO t (a) VALUES (%s)", [[1], [2], [3]])
    collected.executemany("UPDATE t SET a = %s", [[4], [5]])
    collected.executemany("INSERT INTO t (a) VALUES (%s)", [])

    assert collected.texts == [
        "INSERT INTO t (a) VALUES (1), (2), (3)",
        "UPDATE t SET a = 4",
        "UPDATE t SET a = 5",
    ]
