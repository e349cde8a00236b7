"""The §10.2 state machine through the real write path, on PostgreSQL.

The same generated (state, command) matrix as ``tests/protocol/test_state_machine.py``, but
every state is built by submitting real, signed commands (``submit_command``; the
authority's ``link.*`` through ``submit_authority_command``), and every refusal is checked
where it matters: the group's log head, the WorkItem projection row and the count of
command records are exactly as before — nothing was appended, projected or recorded.

The write path's clock is the database's, so an owner cannot be made to lapse here: the
``OWNER_HELD`` pairs are the refusal ``R10.2-03`` (their allowed, lapsed side is covered by
the pure matrix and, for a passed start deadline, by a test below).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import transaction

from apps.ledger.models import CommandRecord, GroupLog
from apps.ledger.write_path import submit_authority_command, submit_command
from apps.work.models import Mission, WorkItem, WorkProposal
from missionweave.protocol import states as S
from missionweave.protocol.artifacts.citations import named_by
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.identifiers import AUTHORITY
from missionweave.protocol.timefmt import parse_timestamp
from tests import factories
from tests.factories import AgentPersona, HumanPersona, World
from tests.protocol.test_state_machine import OWNER_HELD, expected, targets
from tests.protocol.work_scenarios import (
    ARTIFACT_BYTES,
    LINK_COMMANDS,
    OTHER_WORKER,
    SECOND_OWNER,
    STORY_STATES,
    TABLE_COMMANDS,
    WORKER,
    Call,
    Ran,
    WorkStory,
    check_issuer,
    story_in,
    work_contract,
)

pytestmark = pytest.mark.django_db


@dataclass
class WritePathDriver:
    """Runs a story's commands through the one door for writes, as the personas."""

    group: str
    personas: dict[str, AgentPersona | HumanPersona]

    def now(self) -> datetime:
        return datetime.now(UTC)

    def run(self, call: Call) -> Ran:
        check_issuer(call.type, call.actor)
        if call.actor == AUTHORITY:
            outcome = submit_authority_command(
                group_id=self.group,
                type_=call.type,
                body=call.body,
                command_id=factories.unique("authority"),
            )
        else:
            persona = self.personas[call.actor]
            for _path, digest in named_by(call.type, call.body):  # uploaded by its sender
                if digest in ARTIFACT_BYTES:
                    factories.store_bytes(persona.principal, ARTIFACT_BYTES[digest])
            outcome = submit_command(
                group_id=self.group,
                document=persona.command(self.group, call.type, call.body),
                caller=persona.caller,
            )
        events = [(event["type"], event["payload"]) for event in outcome.events]
        return Ran(outcome.status, events, outcome.body["result"])

    def work_item(self, item_id: str) -> dict[str, Any] | None:
        row = WorkItem.objects.filter(group_id=self.group, work_item_id=item_id).first()
        return row.data if row is not None else None

    def proposal(self, proposal_id: str) -> dict[str, Any] | None:
        row = WorkProposal.objects.filter(group_id=self.group, proposal_id=proposal_id).first()
        return row.data if row is not None else None

    def mission(self, mission_id: str) -> dict[str, Any] | None:
        row = Mission.objects.filter(group_id=self.group, mission_id=mission_id).first()
        return row.to_state().as_dict() if row is not None else None


@pytest.fixture
def driver(world: World) -> WritePathDriver:
    """The world's personas plus a second worker (w3) and a second mission owner (mona)."""
    w3 = factories.agent("w3", world.org)
    factories.grant(world.alice, world.group, w3, "worker")
    w3.open_session()
    mona = factories.human("mona")
    factories.grant(world.alice, world.group, mona, "mission_owner")
    personas = {p.principal: p for p in (world.w1, world.w2, w3, world.olga, mona)}
    return WritePathDriver(world.group, personas)


def trace(story: WorkStory) -> tuple[Any, ...]:
    """Everything a refused command must leave alone."""
    head = GroupLog.objects.get(group_id=story.driver.group)
    row = (
        WorkItem.objects.filter(group_id=story.driver.group, work_item_id=story.item)
        .values_list("state", "owner", "data")
        .first()
    )
    records = CommandRecord.objects.filter(group_id=story.driver.group).count()
    return head.head_sequence, head.head_hash, row, records


def refused(story: WorkStory, call: Call) -> ProtocolError:
    before = trace(story)
    with pytest.raises(ProtocolError) as caught:
        story.driver.run(call)
    assert trace(story) == before, "a refused command appended, projected or recorded"
    return caught.value


class _Undo(Exception):
    """Raised to roll a savepoint back once a pair has been checked."""


@contextmanager
def undone() -> Iterator[None]:
    """Run the block in a savepoint that is always rolled back, so every command of a case
    meets the same state (and a wrongly accepted command cannot leak into the next check)."""
    try:
        with transaction.atomic():
            yield
            raise _Undo
    except _Undo:
        pass


def check_pair(story: WorkStory, state: str, command: str) -> None:
    """One pair of the matrix against ``story`` (which is in ``state``)."""
    call = story.call(command)
    expect = expected(state, command, owner_lapsed=False)
    item_before = story.view()

    if expect.kind == "refused":
        error = refused(story, call)
        assert (error.code, error.requirement) == (expect.code, expect.requirement)
        return

    records = CommandRecord.objects.filter(group_id=story.driver.group).count()
    ran = story.driver.run(call)
    assert ran.types == list(expect.events)
    assert CommandRecord.objects.filter(group_id=story.driver.group).count() == records + 1
    if expect.kind == "moves":
        assert ran.status == 201
        assert story.state in targets(command, state)
    elif expect.kind == "late_result":
        assert ran.status == 202
        assert story.state == state
        assert story.view()["submission"] is None
    else:  # mission_only
        assert story.view() == item_before


#: one case per state and history; each checks its commands as subtests ("queued-work.start")
CASES = [(state, False) for state in STORY_STATES] + [(state, True) for state in STORY_STATES]


@pytest.mark.parametrize(
    ("state", "linked"),
    CASES,
    ids=[f"{state}{'-linked' if linked else ''}" for state, linked in CASES],
)
def test_every_state_and_command_pair_on_the_write_path(
    driver: WritePathDriver, subtests: pytest.Subtests, state: str, linked: bool
) -> None:
    """R10.2-01, R10.2-02, R10.2-03, R10.2-04, R10.2-06 … R10.2-18 (each pair cites its row),
    R10.2-22: refused pairs are ILLEGAL_TRANSITION (or the listed wire§8 precedence code) with
    the log head, the WorkItem row and the command records unchanged; allowed pairs append
    the command's events and land in one of the row's targets. The ``link.*`` commands run
    against the linked history, every other command against the default one."""
    story = story_in(state, driver, linked=linked)
    commands = [c for c in TABLE_COMMANDS if (c in LINK_COMMANDS) == linked]
    for command in commands:
        with subtests.test(msg=f"{state}-{command}"), undone():
            check_pair(story, state, command)


@pytest.mark.parametrize("state", sorted({state for state, _ in OWNER_HELD}))
def test_work_offer_while_the_owner_holds_the_item_changes_nothing(
    driver: WritePathDriver, state: str
) -> None:
    """R10.2-03: with an active owner the offer is ILLEGAL_TRANSITION, nothing appended."""
    story = story_in(state, driver)
    error = refused(story, story.call("work.offer", workers=(OTHER_WORKER,)))
    assert (error.code, error.requirement) == (ErrorCode.ILLEGAL_TRANSITION, "R10.2-03")
    assert error.details["owner"] == WORKER


def test_an_owner_past_its_start_deadline_is_fenced_by_a_new_offer(
    driver: WritePathDriver,
) -> None:
    """R10.2-03, R11.3-02, R11.5-01: the start deadline (capped by a contract deadline that
    has passed) lets the coordinator re-offer; the old owner is STALE_OWNERSHIP and nothing
    of its refused start is recorded; the new owner gets a higher epoch."""
    past = "2026-01-01T00:00:00Z"
    story = story_in(S.OFFERED, driver, contract=work_contract(deadline=past))
    accepted = story.do("work.accept_offer")
    assert accepted.result["ownership_epoch"] == 1
    assert parse_timestamp(accepted.result["start_deadline"]) == parse_timestamp(past)
    old_start = story.call("work.start")
    offered = story.do("work.offer", workers=(OTHER_WORKER,))
    assert offered.events[0][1]["fenced_owner"] == WORKER
    error = refused(story, old_start)
    assert (error.code, error.requirement) == (ErrorCode.STALE_OWNERSHIP, "R11.3-01")
    assert story.do("work.accept_offer", worker=OTHER_WORKER).result["ownership_epoch"] == 2
    story.do("work.start")
    assert story.view()["owner"] == OTHER_WORKER
    assert story.state == S.ACTIVE


def test_approvals_from_two_mission_owners_open_the_start_gate(driver: WritePathDriver) -> None:
    """R10.1-01(i), R10.2-06: APPROVAL_REQUIRED (nothing recorded) until two distinct human
    mission owners granted this revision; a repeated grant is DUPLICATE_APPROVAL."""
    risk = {"class": "high", "requires_execution_approval": True, "approvals_required": 2}
    story = story_in(S.OFFERED, driver, contract=work_contract(risk=risk))
    story.do("work.accept_offer")
    assert refused(story, story.call("work.start")).code is ErrorCode.APPROVAL_REQUIRED
    story.do("approval.grant_execution")
    assert refused(story, story.call("approval.grant_execution")).code is (
        ErrorCode.DUPLICATE_APPROVAL
    )
    assert refused(story, story.call("work.start")).code is ErrorCode.APPROVAL_REQUIRED
    story.do("approval.grant_execution", actor=SECOND_OWNER)
    story.do("work.start")
    assert story.state == S.ACTIVE
