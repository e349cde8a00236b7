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
from apps.ledger.statements import COPY_FROM_ROWS, _Collected
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
def test_a_batch_costs_the_same_queries_however_many_commands_it_holds(world: World) -> None:
    """issue 15 §2: the lock with the reads under it in one query, every write of the batch
    in another, whether it holds one command or thirty (once the process knows the agent's
    keys, ``agents``); from ``COPY_FROM_ROWS`` commands on, the events, the missions and the
    records go by one ``COPY`` each before it, whether the batch holds 32 commands or 96."""
    submit_command(
        group_id=world.group,
        document=world.w1.command(world.group, "mission.create", mission_body()),
        caller=world.w1.caller,
    )
    queries = {}
    for size in (1, COPY_FROM_ROWS - 1, COPY_FROM_ROWS, 3 * COPY_FROM_ROWS):
        documents = [
            world.w1.command(world.group, "mission.create", mission_body()) for _ in range(size)
        ]
        with CaptureQueriesContext(connection) as captured:
            results = submit_batch(
                group_id=world.group, documents=documents, caller=world.w1.caller
            )

        assert all(isinstance(r, Outcome) and r.status == 201 for r in results)
        queries[size] = [query["sql"].partition(" FROM STDIN")[0] for query in captured]
    assert len(queries[1]) == len(queries[COPY_FROM_ROWS - 1]) == 2
    copies = [query for query in queries[COPY_FROM_ROWS] if "COPY " in query]
    assert sorted(query.partition("COPY ")[2].split(" ")[0] for query in copies) == [
        '"ledger_commandrecord"',
        '"work_mission"',
        "ledger_event",
    ]
    assert len(queries[COPY_FROM_ROWS]) == 5
    assert [q.partition("times: ")[2] for q in queries[3 * COPY_FROM_ROWS][1:4]] == [
        q.partition("times: ")[2] for q in queries[COPY_FROM_ROWS][1:4]
    ]
    assert_log_consistent(world.group)


@settings(
    max_examples=8,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(goals=st.lists(GOALS, min_size=COPY_FROM_ROWS, max_size=COPY_FROM_ROWS))
@example(goals=["it's \\'; \\N \t\n\r \\. \\\\ 😀 %s $1"] * COPY_FROM_ROWS)
@pytest.mark.django_db
def test_any_text_copied_in_a_batch_is_stored_exactly_as_sent(
    world: World, goals: list[str]
) -> None:
    """wire§3, R16-10: a batch large enough to go by ``COPY`` stores each goal byte for
    byte in the mission row and the event document — COPY's own escapes (backslashes,
    ``\\N``, tabs, newlines, ``\\.``) included — and the chain holds."""
    missions = [unique("m") for _ in goals]
    documents = [
        world.w1.command(world.group, "mission.create", mission_body(mission, goal=goal))
        for mission, goal in zip(missions, goals, strict=True)
    ]

    results = submit_batch(group_id=world.group, documents=documents, caller=world.w1.caller)

    assert [r.status for r in results] == [201] * len(goals)
    stored = dict(
        Mission.objects.filter(group_id=world.group, mission_id__in=missions).values_list(
            "mission_id", "goal"
        )
    )
    assert [stored[mission] for mission in missions] == goals
    events = Event.objects.filter(group_id=world.group, command_id__in=[d["id"] for d in documents])
    assert sorted(e.as_wire()["payload"]["goal"] for e in events) == sorted(goals)
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


def test_an_insert_of_many_rows_is_kept_for_copy() -> None:
    """From ``COPY_FROM_ROWS`` rows an ``INSERT`` is kept as a ``COPY`` of its columns, its
    rows unquoted; fewer rows, or an ``INSERT`` that is not a plain row of placeholders,
    stays in the text."""
    collected = _Collected(lambda sql, params: sql.replace("%s", repr(params[0])))
    rows = [[index] for index in range(COPY_FROM_ROWS)]

    collected.executemany('INSERT INTO "t" ("a") VALUES (%s)', rows)
    collected.executemany("INSERT INTO t (a) VALUES (%s) ON CONFLICT DO NOTHING", rows[:1] * 40)

    assert collected.copies == [('COPY "t" ("a") FROM STDIN', rows)]
    assert collected.texts == ["INSERT INTO t (a) VALUES (0) ON CONFLICT DO NOTHING"] * 40


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
