"""A write's transaction begun by its first query (``statements.opens_its_transaction``,
issue 15 §1: as few round trips as the semantics allow).

These run in real transactions (not a test's atomic block, where the write path neither
begins nor commits), and count what the client sends with libpq's own protocol trace: a
round trip is a simple ``Query`` message or the ``Sync`` that ends an extended one.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.db import IntegrityError, connection, transaction
from psycopg import pq

from apps.ledger.models import CommandRecord, GroupLog
from apps.ledger.write_path import submit_command
from apps.work.models import Mission
from missionweave.protocol.errors import ErrorCode, ProtocolError
from tests.factories import World, build_world, mission_body, unique
from tests.ledger.checks import assert_log_consistent, take_the_next_event_slot

#: a message the client sends that the server answers before the client goes on
_ROUND_TRIP = re.compile(r"F\t\d+\t(Query|Sync)\b(.*)", re.DOTALL)
#: where a traced message starts (a query's text may hold newlines of its own)
_MESSAGE = re.compile(r"\n(?=[FB]\t\d+\t)")


@pytest.fixture
def live_world(transactional_db: None) -> World:
    return build_world()


@contextmanager
def round_trips() -> Iterator[list[str]]:
    """The round trips this thread's connection makes inside: each ``Query``'s text, or
    ``"Sync"``, in order."""
    connection.ensure_connection()
    pgconn = connection.connection.pgconn
    trips: list[str] = []
    with tempfile.TemporaryFile("w+") as trace:
        pgconn.trace(trace.fileno())
        pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)
        try:
            yield trips
        finally:
            pgconn.untrace()
            trace.seek(0)
            for message in _MESSAGE.split(trace.read()):
                match = _ROUND_TRIP.fullmatch(message.strip())
                if match:
                    trips.append(match[2].strip().strip('"') if match[1] == "Query" else "Sync")


def _create(world: World, mission: str | None = None) -> dict[str, object]:
    return world.w1.command(world.group, "mission.create", mission_body(mission or unique("m")))


def test_a_command_costs_two_round_trips_begin_and_commit_inside_them(live_world: World) -> None:
    """issue 15 §1: the lock and the reads begin the transaction, the writes end it; no
    ``BEGIN`` of the driver's own before them, no ``COMMIT`` after."""
    world = live_world
    submit_command(group_id=world.group, document=_create(world), caller=world.w1.caller)
    mission = unique("m")

    with round_trips() as trips:
        outcome = submit_command(
            group_id=world.group, document=_create(world, mission), caller=world.w1.caller
        )

    assert outcome.status == 201
    assert len(trips) == 2, trips
    assert trips[0].startswith("BEGIN;")
    assert "FOR UPDATE" in trips[0]
    assert trips[1].endswith("COMMIT")
    assert Mission.objects.filter(group_id=world.group, mission_id=mission).exists()
    assert connection.connection.info.transaction_status == pq.TransactionStatus.IDLE
    assert connection.get_autocommit()
    assert connection.connection.autocommit
    assert_log_consistent(world.group)


def test_a_command_refused_under_the_lock_ends_its_transaction(live_world: World) -> None:
    """R11.1-03: a refusal decided under the lock (the mission id is taken) rolls the
    begun transaction back — nothing written, the head where it was, the connection idle
    and in autocommit — and the next command on the connection is accepted."""
    world = live_world
    mission = unique("m")
    submit_command(group_id=world.group, document=_create(world, mission), caller=world.w1.caller)
    head = GroupLog.objects.get(group_id=world.group).head_sequence
    taken = _create(world, mission)

    with round_trips() as trips, pytest.raises(ProtocolError) as refused:
        submit_command(group_id=world.group, document=taken, caller=world.w1.caller)

    assert refused.value.code == ErrorCode.ILLEGAL_TRANSITION
    assert trips[0].startswith("BEGIN;")
    assert trips[-1] == "ROLLBACK"
    assert not CommandRecord.objects.filter(command_id=taken["id"]).exists()
    assert GroupLog.objects.get(group_id=world.group).head_sequence == head
    assert connection.connection.info.transaction_status == pq.TransactionStatus.IDLE
    assert connection.connection.autocommit
    accepted = submit_command(group_id=world.group, document=_create(world), caller=world.w1.caller)
    assert accepted.status == 201
    assert_log_consistent(world.group)


def test_a_write_that_fails_rolls_back_the_transaction_its_query_began(
    live_world: World,
) -> None:
    """R11.1-03, R16-10: the event slot the flush needs is taken behind the write path's
    back; the transaction the reads began is rolled back whole — no mission, no record, no
    moved head — and the connection serves the next command."""
    world = live_world
    head = take_the_next_event_slot(world.group, unique("evt"))
    mission = unique("m")
    document = _create(world, mission)

    with pytest.raises(IntegrityError):
        submit_command(group_id=world.group, document=document, caller=world.w1.caller)

    assert connection.connection.info.transaction_status == pq.TransactionStatus.IDLE
    assert not Mission.objects.filter(group_id=world.group, mission_id=mission).exists()
    assert not CommandRecord.objects.filter(command_id=document["id"]).exists()
    assert GroupLog.objects.get(group_id=world.group).head_sequence == head


def test_inside_a_callers_transaction_the_write_path_neither_begins_nor_commits(
    live_world: World,
) -> None:
    """A caller's atomic block owns its transaction (a sweep's group, a session's leases):
    the write path sends no ``BEGIN`` or ``COMMIT`` of its own, and the caller's rollback
    undoes the command."""
    world = live_world
    mission = unique("m")

    with round_trips() as trips, transaction.atomic():
        outcome = submit_command(
            group_id=world.group, document=_create(world, mission), caller=world.w1.caller
        )
        transaction.set_rollback(True)

    assert outcome.status == 201
    assert not any(trip.startswith("BEGIN;") or trip.endswith("COMMIT") for trip in trips)
    assert not Mission.objects.filter(group_id=world.group, mission_id=mission).exists()
