"""The write path's statements sent as one query (``statements.sent_as_one``, issue 15 §1):
what the server stores is what was sent, a run costs two queries however many commands it
holds, and a statement that fails leaves nothing of its run behind (R11.1-03: the log is
authoritative, so its projections change with it or not at all)."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import DataError, IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from apps.ledger import statements as statements_module
from apps.ledger.models import CommandRecord, Event, GroupLog
from apps.ledger.statements import (
    COPY_FROM_ROWS,
    UPDATE_FROM_ROWS,
    _Collected,
    sent_as_one,
    statements_for,
)
from apps.ledger.write_path import Outcome, submit_batch, submit_command
from apps.work.models import Mission
from tests.factories import World, mission_body, unique
from tests.ledger.checks import assert_log_consistent, take_the_next_event_slot


def _database_examples(count: int) -> settings:
    """Hypothesis settings for a test that writes through a function-scoped fixture's world."""
    return settings(
        max_examples=count,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


#: any text a goal may hold: every character but U+0000 (refused at the edge, wire.md §8)
#: and lone surrogates (not text)
GOALS = st.text(
    alphabet=st.characters(exclude_categories=("Cs",), exclude_characters="\x00"),
    min_size=1,
    max_size=300,
).filter(str.strip)


@_database_examples(60)
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


@_database_examples(8)
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
    head = take_the_next_event_slot(world.group, unique("evt"))
    mission = unique("m")
    document = world.w1.command(world.group, "mission.create", mission_body(mission))

    with pytest.raises(IntegrityError):
        submit_command(group_id=world.group, document=document, caller=world.w1.caller)

    assert not Mission.objects.filter(group_id=world.group, mission_id=mission).exists()
    assert not CommandRecord.objects.filter(command_id=document["id"]).exists()
    assert GroupLog.objects.get(group_id=world.group).head_sequence == head


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


# --- many rows of an UPDATE: one set-based statement (statements.UPDATE_FROM_ROWS) ------------

#: a JSON member's name PostgreSQL's ``jsonb`` can hold (no U+0000, as the edge refuses)
NAMES = st.text(
    alphabet=st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=5
)
_MISSION_CHANGES = st.fixed_dictionaries(
    {
        "state": st.sampled_from(["draft", "approved", "cancelled"]),
        "goal": GOALS,
        "parent": st.one_of(st.none(), st.text(alphabet="abc-", min_size=1, max_size=10)),
        "link": st.one_of(st.none(), st.dictionaries(NAMES, GOALS, max_size=2)),
        "limits": st.dictionaries(st.sampled_from(["money", "tokens"]), st.integers(0, 10**6)),
    }
)


def _missions(group: str, count: int) -> list[str]:
    idents = [unique("m") for _ in range(count)]
    Mission.objects.bulk_create(
        Mission(
            group_id=group, mission_id=ident, state="draft", goal="g", created_by="x",
            created_sequence=index,
        )
        for index, ident in enumerate(idents)
    )  # fmt: skip
    return idents


def _rows_of(group: str, idents: list[str]) -> list[dict[str, Any]]:
    found = Mission.objects.filter(group_id=group, mission_id__in=idents)
    by_id = {row["mission_id"]: row for row in found.values()}
    return [{k: v for k, v in by_id[i].items() if k != "id"} for i in idents]


@_database_examples(25)
@given(changes=st.lists(_MISSION_CHANGES, min_size=UPDATE_FROM_ROWS, max_size=UPDATE_FROM_ROWS))
@example(changes=[{"state": "draft", "goal": "it's", "parent": None, "link": None, "limits": {}}])
@pytest.mark.django_db
def test_a_set_based_update_writes_what_one_update_per_row_writes(
    world: World, changes: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """R16-10: from ``UPDATE_FROM_ROWS`` rows the update is one ``UPDATE … FROM (VALUES
    …)``, and the rows it leaves are the rows one ``UPDATE`` per row leaves — text byte for
    byte, JSON, ``NULL`` in every row of a ``jsonb`` or text column."""
    # the same columns in the same order in every row, as a projection's ``to_fields`` gives
    changes = [dict(sorted(change.items())) for change in changes * UPDATE_FROM_ROWS]
    changes = changes[: max(len(changes) // UPDATE_FROM_ROWS, UPDATE_FROM_ROWS)]
    statements = statements_for(Mission, "mission_id")
    set_based, row_by_row = (
        _missions(world.group, len(changes)),
        _missions(world.group, len(changes)),
    )

    with CaptureQueriesContext(connection) as captured, sent_as_one():  # as the flush does
        statements.update_many(world.group, list(zip(set_based, changes, strict=True)))
    with monkeypatch.context() as patched:  # one UPDATE per row, as below the threshold
        patched.setattr(statements_module, "UPDATE_FROM_ROWS", len(changes) + 1)
        statements.update_many(world.group, list(zip(row_by_row, changes, strict=True)))

    assert [q["sql"].split(" FROM (VALUES ")[0][:26] for q in captured] == [
        'UPDATE "work_mission" AS t'
    ]
    expected = [{**row, "mission_id": None} for row in _rows_of(world.group, row_by_row)]
    got = [{**row, "mission_id": None} for row in _rows_of(world.group, set_based)]
    assert [{k: v for k, v in r.items() if k != "created_sequence"} for r in got] == [
        {k: v for k, v in r.items() if k != "created_sequence"} for r in expected
    ]
    assert [row["goal"] for row in got] == [change["goal"] for change in changes]


@pytest.mark.django_db
def test_a_set_based_update_refuses_a_value_too_long_as_one_update_per_row_does(
    world: World,
) -> None:
    """R16-10: the cast names the column's type without its length, so a state too long
    for ``varchar(16)`` is refused, not cut to fit, and no row changes."""
    idents = _missions(world.group, UPDATE_FROM_ROWS)
    changes = [{"state": "approved"}] * (UPDATE_FROM_ROWS - 1) + [{"state": "x" * 17}]

    with pytest.raises(DataError), transaction.atomic(), sent_as_one():
        statements_for(Mission, "mission_id").update_many(
            world.group, list(zip(idents, changes, strict=True))
        )

    assert {row["state"] for row in _rows_of(world.group, idents)} == {"draft"}


def test_the_rows_of_a_set_based_update_are_quoted_one_by_one_into_its_values() -> None:
    """``_update_from_values``'s one row becomes every row, each quoted on its own."""
    collected = _Collected(lambda sql, params: sql.replace("%s", repr(params[0]), 1))
    sql = 'UPDATE "t" AS t SET "a" = v."a"::integer FROM (VALUES (%s)) AS v ("a") WHERE x'

    collected.executemany(sql, [[1], [2], [3]])

    assert collected.texts == [
        'UPDATE "t" AS t SET "a" = v."a"::integer FROM (VALUES (1), (2), (3)) AS v ("a") WHERE x'
    ]
