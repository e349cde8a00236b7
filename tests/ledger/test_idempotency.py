"""Idempotent commands (wire.md §3 step 5): a command id is applied once per (group, actor)."""

from __future__ import annotations

import copy

import pytest

from apps.ledger.models import CommandRecord, Event
from apps.ledger.write_path import Outcome, submit_batch, submit_command
from apps.work.models import Mission
from missionweave.protocol.errors import ErrorCode, ProtocolError
from tests.factories import World, mission_body
from tests.ledger.checks import assert_log_consistent
from tests.ledger.concurrency import run_in_threads

COPIES = 200
THREADS = 20


@pytest.mark.django_db(transaction=True)
def test_same_signed_command_sent_200_times_concurrently_is_applied_once(world: World) -> None:
    """wire§3 step 5: one event, one CommandRecord; every answer has the same status and body,
    all but one marked replayed."""
    document = world.w1.command(world.group, "mission.create", mission_body("m-once"))
    head_before = len(assert_log_consistent(world.group))

    def work(thread: int) -> list[Outcome]:
        return [
            submit_command(
                group_id=world.group, document=copy.deepcopy(document), caller=world.w1.caller
            )
            for _ in range(COPIES // THREADS)
        ]

    outcomes = [outcome for batch in run_in_threads(THREADS, work) for outcome in batch]

    assert len(outcomes) == COPIES
    assert sum(not outcome.replayed for outcome in outcomes) == 1
    assert {outcome.status for outcome in outcomes} == {201}
    first = next(outcome for outcome in outcomes if not outcome.replayed)
    assert all(outcome.body == first.body for outcome in outcomes)
    assert Event.objects.filter(group_id=world.group, command_id=document["id"]).count() == 1
    assert (
        CommandRecord.objects.filter(group_id=world.group, command_id=document["id"]).count() == 1
    )
    assert Mission.objects.filter(group_id=world.group, mission_id="m-once").count() == 1
    assert len(assert_log_consistent(world.group)) == head_before + 1


@pytest.mark.django_db
def test_retry_resigned_with_new_issued_at_and_new_session_is_replayed(world: World) -> None:
    """wire§3 step 5, R11.5-09: signature, issued_at and the epochs are not part of the content,
    so a retry after reconnecting returns the stored answer and appends nothing."""
    original = world.w1.command(world.group, "mission.create", mission_body("m-retry"), id="c-1")
    accepted = submit_command(group_id=world.group, document=original, caller=world.w1.caller)
    world.w1.open_session()  # a new session epoch, a new token
    retry = world.w1.command(world.group, "mission.create", mission_body("m-retry"), id="c-1")
    assert retry["session_epoch"] != original["session_epoch"]
    assert retry["signature"] != original["signature"]

    replayed = submit_command(group_id=world.group, document=retry, caller=world.w1.caller)

    assert replayed.replayed
    assert (replayed.status, replayed.body) == (accepted.status, accepted.body)
    assert Event.objects.filter(group_id=world.group, command_id="c-1").count() == 1


@pytest.mark.django_db
def test_same_command_id_with_other_content_is_duplicate_command_id(world: World) -> None:
    """wire§3 step 5: the same id with other content is DUPLICATE_COMMAND_ID; nothing appended."""
    first = world.w1.command(world.group, "mission.create", mission_body("m-a"), id="c-dup")
    submit_command(group_id=world.group, document=first, caller=world.w1.caller)
    events_before = Event.objects.filter(group_id=world.group).count()
    other = world.w1.command(world.group, "mission.create", mission_body("m-b"), id="c-dup")

    with pytest.raises(ProtocolError) as refused:
        submit_command(group_id=world.group, document=other, caller=world.w1.caller)

    assert refused.value.code is ErrorCode.DUPLICATE_COMMAND_ID
    assert refused.value.status == 409
    assert Event.objects.filter(group_id=world.group).count() == events_before
    assert not Mission.objects.filter(group_id=world.group, mission_id="m-b").exists()
    assert CommandRecord.objects.get(group_id=world.group, command_id="c-dup").response == (
        submit_command(group_id=world.group, document=first, caller=world.w1.caller).body
    )


@pytest.mark.django_db
def test_same_command_id_from_another_actor_is_another_command(world: World) -> None:
    """wire§3 step 5: idempotency is per (group, actor): both commands are applied."""
    by_agent = world.w1.command(world.group, "mission.create", mission_body("m-w1"), id="c-same")
    by_human = world.olga.command(
        world.group, "mission.create", mission_body("m-olga"), id="c-same"
    )

    first = submit_command(group_id=world.group, document=by_agent, caller=world.w1.caller)
    second = submit_command(group_id=world.group, document=by_human, caller=world.olga.caller)

    assert not first.replayed
    assert not second.replayed
    assert first.body["events"][0]["sequence"] + 1 == second.body["events"][0]["sequence"]
    assert set(
        CommandRecord.objects.filter(group_id=world.group, command_id="c-same").values_list(
            "actor", flat=True
        )
    ) == {world.w1.principal, world.olga.principal}
    assert set(
        Mission.objects.filter(group_id=world.group).values_list("mission_id", flat=True)
    ) >= {"m-w1", "m-olga"}


@pytest.mark.django_db
def test_a_command_repeated_inside_one_batch_is_applied_once(world: World) -> None:
    """wire§4 batch, wire§3 step 5: a repeated item is answered from the record of the first."""
    document = world.w1.command(world.group, "mission.create", mission_body("m-batch"))
    conflicting = world.w1.command(
        world.group, "mission.create", mission_body("m-other"), id=document["id"]
    )

    results = submit_batch(
        group_id=world.group,
        documents=[document, copy.deepcopy(document), conflicting],
        caller=world.w1.caller,
    )

    first, again, clash = results
    assert isinstance(first, Outcome)
    assert not first.replayed
    assert isinstance(again, Outcome)
    assert again.replayed
    assert (again.status, again.body) == (first.status, first.body)
    assert isinstance(clash, ProtocolError)
    assert clash.code is ErrorCode.DUPLICATE_COMMAND_ID
    assert Event.objects.filter(group_id=world.group, command_id=document["id"]).count() == 1
    assert_log_consistent(world.group)
