"""Appended events cannot be rewritten or removed, not even by the runtime role (wire.md §6).

The refusal comes from a database trigger, so it holds for the ORM, raw SQL and any shell.
Each attempt runs in its own savepoint so the failed statement does not poison the test.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.db import DatabaseError, connection, transaction

from apps.ledger.models import Event
from apps.ledger.write_path import submit_command
from tests.factories import World, mission_body
from tests.ledger.checks import assert_log_consistent


def _snapshot(event: Event) -> tuple:
    event.refresh_from_db()
    return (event.sequence, event.type, event.actor, event.hash, event.document)


def _refused(attempt: Callable[[], object]) -> str:
    with pytest.raises(DatabaseError) as error, transaction.atomic():
        attempt()
    return str(error.value)


@pytest.fixture
def event(world: World) -> Event:
    document = world.w1.command(world.group, "mission.create", mission_body("m-kept"))
    submit_command(group_id=world.group, document=document, caller=world.w1.caller)
    return Event.objects.get(group_id=world.group, command_id=document["id"])


def _raw(sql: str, params: list[object]) -> Callable[[], None]:
    def run() -> None:
        with connection.cursor() as cursor:
            cursor.execute(sql, params)

    return run


@pytest.mark.django_db
def test_events_cannot_be_updated_or_deleted_through_the_orm_or_raw_sql(
    world: World, event: Event
) -> None:
    """wire§6: queryset update/delete, instance save/delete and raw UPDATE/DELETE all fail
    and the row stays exactly as appended."""
    before = _snapshot(event)
    attempts: dict[str, Callable[[], object]] = {
        "queryset update": lambda: Event.objects.filter(pk=event.pk).update(type="forged"),
        "queryset delete": lambda: Event.objects.filter(pk=event.pk).delete(),
        "instance save": lambda: Event.objects.get(pk=event.pk).save(update_fields=["actor"]),
        "instance delete": lambda: Event.objects.get(pk=event.pk).delete(),
        "raw update": _raw("UPDATE ledger_event SET document = %s WHERE id = %s", ["{}", event.pk]),
        "raw delete": _raw("DELETE FROM ledger_event WHERE id = %s", [event.pk]),
        "raw delete all": _raw("DELETE FROM ledger_event", []),
    }
    for name, attempt in attempts.items():
        message = _refused(attempt)
        assert "immutable" in message, name
        assert _snapshot(event) == before, name
    assert Event.objects.filter(group_id=world.group).count() == event.sequence
    assert_log_consistent(world.group)


@pytest.mark.django_db
def test_the_head_row_and_projections_stay_writable(world: World, event: Event) -> None:
    """wire§6: only events are frozen; the trigger does not refuse the rows the write path
    must keep updating (head row, projections), so the next command still appends."""
    document = world.w1.command(world.group, "mission.create", mission_body("m-next"))
    outcome = submit_command(group_id=world.group, document=document, caller=world.w1.caller)
    assert outcome.body["events"][0]["sequence"] == event.sequence + 1
    assert_log_consistent(world.group)
