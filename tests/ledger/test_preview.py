"""A preview asks the write path's questions without its effects: for each approval case the
dashboard meets, ``preview.refusal`` gives the answer the real submission then gives, and
writes nothing on the way.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from django.db import connection, transaction

from apps.ledger import head as heads
from apps.ledger import preview
from apps.ledger.models import CommandRecord, Event
from apps.ledger.write_path import submit_as_human
from missionweave.protocol.errors import ErrorCode, ProtocolError
from tests.dashboard import workflows as wf
from tests.factories import HumanPersona, World, grant, human, unique

GRANT = "approval.grant_execution"


@dataclass
class Approvals:
    world: World
    petra: HumanPersona  # a second mission_owner
    maria: HumanPersona  # an observer
    nina: HumanPersona  # in no group

    @property
    def group(self) -> str:
        return self.world.group


@pytest.fixture
def approvals(world: World) -> Approvals:
    petra, maria = human("petra"), human("maria")
    grant(world.alice, world.group, petra, "mission_owner")
    grant(world.alice, world.group, maria, "observer")
    return Approvals(world, petra, maria, human("nina"))


def written(group: str) -> tuple[int, int, int]:
    """What a command leaves behind: the head, the events and the idempotency records."""
    return (
        wf.head(group),
        Event.objects.filter(group_id=group).count(),
        CommandRecord.objects.filter(group_id=group).count(),
    )


def previewed_then_submitted(
    persona: HumanPersona, group: str, item: str
) -> tuple[ErrorCode | None, ErrorCode | None]:
    """The preview's refusal code, then the real submission's (``None``: accepted)."""
    body = {"work_item": item, "contract_revision": 1, "comment": ""}
    before = written(group)
    refused = preview.refusal(persona.caller, group, GRANT, body)
    assert written(group) == before, "a preview writes nothing"
    try:
        submit_as_human(
            caller=persona.caller, group_id=group, type_=GRANT, body=body, command_id=unique("c")
        )
    except ProtocolError as refusal:
        return (refused.code if refused else None), refusal.code
    return (refused.code if refused else None), None


def owner_of_a_gated_item(a: Approvals) -> tuple[HumanPersona, str]:
    return a.petra, wf.queued(a.world, wf.mission(a.world), contract=wf.gated_contract(2))


def requester_of_the_item(a: Approvals) -> tuple[HumanPersona, str]:
    proposal = unique("p")
    wf.submit(a.world.olga, a.group, "work.propose", {"proposal": proposal, "title": "Please"})
    item = wf.queued(a.world, wf.mission(a.world), contract=wf.gated_contract(2), proposal=proposal)
    return a.world.olga, item


def owner_who_already_approved(a: Approvals) -> tuple[HumanPersona, str]:
    item = wf.queued(a.world, wf.mission(a.world), contract=wf.gated_contract(2))
    wf.approve(a.world.olga, a.group, item)
    return a.world.olga, item


def observer(a: Approvals) -> tuple[HumanPersona, str]:
    return a.maria, wf.queued(a.world, wf.mission(a.world), contract=wf.gated_contract(2))


def stranger(a: Approvals) -> tuple[HumanPersona, str]:
    return a.nina, wf.queued(a.world, wf.mission(a.world), contract=wf.gated_contract(2))


def owner_of_an_item_not_yet_queued(a: Approvals) -> tuple[HumanPersona, str]:
    return a.petra, wf.authorize(a.world, wf.mission(a.world), contract=wf.gated_contract(2))


def owner_of_an_item_already_running(a: Approvals) -> tuple[HumanPersona, str]:
    item = wf.queued(a.world, wf.mission(a.world))
    wf.start(a.world, item)
    return a.petra, item


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("case", "expected"),
    [
        (owner_of_a_gated_item, None),
        (requester_of_the_item, ErrorCode.SELF_APPROVAL),
        (owner_who_already_approved, ErrorCode.DUPLICATE_APPROVAL),
        (observer, ErrorCode.FORBIDDEN),
        (stranger, ErrorCode.NOT_A_MEMBER),
        (owner_of_an_item_not_yet_queued, ErrorCode.ILLEGAL_TRANSITION),
        (owner_of_an_item_already_running, ErrorCode.ILLEGAL_TRANSITION),
    ],
    ids=lambda value: getattr(value, "__name__", str(value)),
)
def test_the_preview_of_a_grant_agrees_with_its_real_submission(
    approvals: Approvals,
    case: Callable[[Approvals], tuple[HumanPersona, str]],
    expected: ErrorCode | None,
) -> None:
    """R10.2-06, wire§9: mission owner, SELF_APPROVAL, DUPLICATE_APPROVAL, a role that may
    not, a non-member, an item not waiting: the screen's question has the door's answer."""
    persona, item = case(approvals)
    assert previewed_then_submitted(persona, approvals.group, item) == (expected, expected)


@pytest.mark.django_db
def test_mission_commands_are_permitted_as_the_command_table_s_roles_say(
    approvals: Approvals,
) -> None:
    """wire§9: mission_owners approve and cancel missions, coordinators only cancel them,
    observers and strangers neither; a person's kind is checked too (``humans_only``)."""
    carl = human("carl")
    grant(approvals.world.alice, approvals.group, carl, "coordinator")
    asked = ("mission.approve", "mission.cancel")

    def permitted(persona: HumanPersona) -> frozenset[str]:
        return preview.permitted(persona.caller, approvals.group, asked)

    assert permitted(approvals.world.olga) == {"mission.approve", "mission.cancel"}
    assert permitted(carl) == {"mission.cancel"}
    assert permitted(approvals.maria) == frozenset()
    assert permitted(approvals.nina) == frozenset()
    with pytest.raises(ValueError, match="not previewed"):
        preview.permitted(approvals.world.w1.caller, approvals.group, asked)


@pytest.mark.django_db(transaction=True)
def test_a_preview_neither_takes_nor_waits_for_the_head_lock(approvals: Approvals) -> None:
    """The group's writers are never held up by a page being rendered: while another
    transaction holds the head lock, a preview still answers at once."""
    persona, item = owner_of_a_gated_item(approvals)
    locked, release = threading.Event(), threading.Event()

    def hold_the_lock() -> None:
        try:
            with transaction.atomic():
                heads.lock_existing_head(approvals.group)
                locked.set()
                release.wait(10)
        finally:
            connection.close()

    holder = threading.Thread(target=hold_the_lock)
    holder.start()
    try:
        assert locked.wait(10)
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '2s'")
            body = {"work_item": item, "contract_revision": 1, "comment": ""}
            assert preview.refusal(persona.caller, approvals.group, GRANT, body) is None
    finally:
        release.set()
        holder.join()
