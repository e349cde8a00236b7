"""The demo's agents, driven in-process for tests of their decisions.

The coordinator and the reviewer decide from a ``GroupState`` (the group's log folded with
the protocol core's ``decider.apply``) and act by sending ``Step``\\ s. Here their state is
folded from the test database's log (``Event.as_wire()``, the documents ``GET /events``
serves) and their steps go through the one write path as the same ``InProcessPersona`` the
seed uses — so a test sees what the agent would decide and what the authority answers,
without servers. The processes themselves run in ``test_organisation_live.py``.
"""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime

from apps.demo import cast
from apps.ledger.models import Event
from apps.ledger.write_path import submit_command
from missionweave.demo import coordinator
from missionweave.demo.organisation import GROUPS
from missionweave.demo.steps import Step
from missionweave.demo.view import GroupState
from missionweave.protocol.errors import ProtocolError


def state_of(group: str) -> GroupState:
    state = GroupState(group)
    for event in Event.objects.filter(group_id=group).order_by("sequence"):
        state.fold(event.as_wire())
    return state


def views() -> dict[str, GroupState]:
    return {group: state_of(group) for group in GROUPS}


def scene(rng: random.Random, **extra: object) -> coordinator.Scene:
    me = f"agent:{cast.COORDINATOR}"
    return coordinator.Scene(me, views(), datetime.now(UTC), rng, **extra)  # type: ignore[arg-type]


def run(persona: cast.DemoAgent, step: Step) -> str:
    """Send ``step`` as ``persona`` through the write path; ``ok <events>`` or the code."""
    for data in step.uploads:
        cast.upload_as(persona.principal, data)
    document = persona.command(step.group, step.type, step.body, id=f"t-{uuid.uuid4().hex}")
    try:
        outcome = submit_command(group_id=step.group, document=document, caller=persona.caller)
    except ProtocolError as refusal:
        return refusal.code.value
    return "ok " + ",".join(event["type"] for event in outcome.body["events"])


def beat(world: cast.DemoWorld, rng: random.Random) -> list[tuple[Step, str]]:
    """One coordinator beat: its plan, each step sent, with the authority's answer."""
    steps = coordinator.plan(scene(rng))
    world.coordinator.open_session()  # the epochs of now (a test may have granted since)
    return [(step, run(world.coordinator, step)) for step in steps]
