"""The evolver registry: one evolver per (event type, aggregate kind), refused twice at import,
and every event the deciders emit either changes an aggregate or is declared audit-only."""

from __future__ import annotations

import contextlib
import importlib
import sys
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from textwrap import dedent
from typing import Any

import pytest

from missionweave.protocol import decider
from missionweave.protocol import states as S
from missionweave.protocol.budgets import USAGE_RECORDED
from missionweave.protocol.errors import ProtocolError
from missionweave.protocol.evolvers import (
    REGISTRY,
    DuplicateAggregate,
    DuplicateEvolver,
    EvolverRegistry,
)
from missionweave.protocol.facts import Fact, StateKey
from missionweave.protocol.memberships import GRANT, REVOKE
from missionweave.protocol.snapshots import CREATE as SNAPSHOT_CREATE
from missionweave.protocol.snapshots import CREATED as SNAPSHOT_CREATED

from .deciders import GROUP, NOW, Scenario
from .lease_stories import owner_fail, reassign
from .offline_stories import MINUTE, binding, buffered, reconnect
from .work_scenarios import (
    CALLS,
    STORY_STATES,
    Call,
    PureDriver,
    Ran,
    story_in,
    work_contract,
)

_RETRYING = work_contract(
    retry={
        "max_attempts": 2,
        "initial_backoff_s": 30,
        "backoff_multiplier": 2.0,
        "max_backoff_s": 60,
    }
)

_DUPLICATE = """
from missionweave.protocol.evolvers import evolves
from missionweave.protocol.work.item_evolvers import WORK_ITEM


@evolves({events}, aggregate=WORK_ITEM)
def _offered_again(item, fact, key):
    return item
"""


def _fact(type_: str, payload: dict[str, Any]) -> Fact:
    return Fact(type_, payload, "user:alice", 1, "c1", "2026-11-30T10:00:00Z", GROUP)


def _import_from(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, source: str) -> None:
    (tmp_path / f"{name}.py").write_text(dedent(source))
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        importlib.import_module(name)
    finally:
        sys.modules.pop(name, None)


def test_importing_a_second_work_item_evolver_for_an_event_fails_and_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A module that registers another ``work.offered`` evolver for the WorkItem cannot be
    imported: the first evolver stays the only one and routing is unchanged."""
    before = REGISTRY.evolvers()
    routes_before = decider.routes(_fact("work.offered", {"work_item": "wi-1"}))
    source = _DUPLICATE.format(events='"work.offered"')
    with pytest.raises(DuplicateEvolver, match=r"work\.offered already has a work_item evolver"):
        _import_from(tmp_path, monkeypatch, "duplicate_offered_evolver", source)
    assert REGISTRY.evolvers() == before
    assert decider.routes(_fact("work.offered", {"work_item": "wi-1"})) == routes_before


def test_a_registration_naming_one_taken_event_registers_none_of_its_events(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Registration is all or nothing: the free event of a refused registration stays
    unrouted."""
    before = REGISTRY.evolvers()
    source = _DUPLICATE.format(events='"work.never_emitted", "work.offered"')
    with pytest.raises(DuplicateEvolver):
        _import_from(tmp_path, monkeypatch, "duplicate_pair_evolver", source)
    assert REGISTRY.evolvers() == before
    assert decider.routes(_fact("work.never_emitted", {"work_item": "wi-1"})) == []


def test_an_aggregate_kind_is_declared_once() -> None:
    """Declaring the WorkItem aggregate again would split what its evolvers share."""
    with pytest.raises(DuplicateAggregate):
        REGISTRY.aggregate("work_item")


def test_an_event_touching_several_aggregates_routes_in_aggregate_kind_order() -> None:
    """Whatever order evolvers register in, ``routes`` lists keys kind by kind (WorkItem,
    dependencies, mission, proposal), so every run and every replay agree."""
    registry = EvolverRegistry()
    kinds = ("proposal", "mission", "dependencies", "work_item")
    for kind in kinds:
        aggregate = registry.aggregate(kind)

        def keys(fact: Fact, kind: str = kind) -> list[StateKey]:
            return [(kind, fact.payload["id"])]

        registry.evolves("thing.happened", aggregate=aggregate, keys=keys)(
            lambda current, fact, key: current
        )
    routed = registry.routes(_fact("thing.happened", {"id": "x"}))
    assert [kind for kind, _ in routed] == ["work_item", "dependencies", "mission", "proposal"]


def test_work_authorized_changes_item_graph_mission_and_proposal_in_that_order() -> None:
    """One event, one evolver per aggregate it touches (R10.2-03, R10.4-01)."""
    fact = _fact("work.authorized", {"work_item": "wi-1", "mission": "m-1", "proposal": "p-1"})
    assert decider.routes(fact) == [
        ("work_item", "wi-1"),
        ("dependencies", "graph"),
        ("mission", "m-1"),
        ("proposal", "p-1"),
    ]


def test_a_usage_charge_changes_the_item_then_each_charged_mission() -> None:
    """R11.5-12: a charge reaches the WorkItem and its whole same-group ancestry."""
    payload = {"work_item": "wi-1", "usage": {}, "charged_missions": ["m-2", "m-1"]}
    assert decider.routes(_fact("work.usage_recorded", payload)) == [
        ("work_item", "wi-1"),
        ("mission", "m-2"),
        ("mission", "m-1"),
    ]


def test_the_events_changing_a_work_item_include_charges_but_not_mission_creation() -> None:
    """The registry answers which events change a kind of aggregate."""
    changing = decider.events_changing("work_item")
    assert {"work.offered", "mission.child_created", "work.usage_recorded"} <= changing
    assert "mission.created" not in changing
    assert "mission.created" in decider.events_changing("mission")


# --- every event the shared scenarios emit is routed or audit-only -----------------------


@dataclass
class _RecordingDriver(PureDriver):
    """A pure driver that notes the type of every event it appends."""

    emitted: set[str] = field(default_factory=set)

    def run(self, call: Call, *, at: datetime | None = None) -> Ran:
        ran = super().run(call, at=at)
        self.emitted.update(ran.types)
        return ran


def _scenario_event_types() -> set[str]:
    """The event types the deciders emit when every scenario command is tried in every state
    a story reaches, plus memberships, a snapshot, an offline reconciliation, a reassignment
    after the lease ran out and a retried failure."""
    emitted: set[str] = set()
    for linked in (False, True):
        for state in STORY_STATES if linked is False else S.STATES:
            for command in CALLS:
                driver = _RecordingDriver(emitted=emitted)
                story = story_in(state, driver, linked=linked)
                with contextlib.suppress(ProtocolError, AssertionError):
                    story.do(command)
    group = Scenario()
    for type_, body in (
        (GRANT, {"principal": "agent:w9", "roles": ["worker"]}),
        (GRANT, {"principal": "agent:w9", "roles": ["reviewer"]}),
        (REVOKE, {"principal": "agent:w9"}),
        (SNAPSHOT_CREATE, {"sequence": 3, "digest": "sha256:" + "0" * 64}),
    ):
        emitted.update(type_ for type_, _payload in group.then(group.when(type_, body)))
    story = story_in(S.ACTIVE, _RecordingDriver(emitted=emitted))
    reconnect(story, NOW + 3 * MINUTE)
    story.run(buffered(story, "work.progress", binding(story)))
    driver = _RecordingDriver(emitted=emitted)
    expired = story_in(S.ACTIVE, driver)
    driver.at = NOW + timedelta(hours=1)  # long after the lease ran out
    expired.run(reassign(expired, "lease_expired"))
    retried = story_in(S.ACTIVE, _RecordingDriver(emitted=emitted), contract=_RETRYING)
    retried.run(owner_fail(retried))
    return emitted


def test_every_event_the_scenarios_emit_changes_an_aggregate_or_is_declared_audit_only() -> None:
    """An event that routes nowhere must say so (``REGISTRY.audit_only``): a forgotten
    evolver cannot pass for an audit-only event."""
    emitted = _scenario_event_types()
    audit_only = REGISTRY.audit_only_events()
    routed = {evolver.event for evolver in REGISTRY.evolvers()}
    assert emitted - routed - audit_only == set()
    assert {SNAPSHOT_CREATED, USAGE_RECORDED, "membership.changed", "work.reassigned"} <= emitted
    assert routed.isdisjoint(audit_only)
    assert decider.routes(_fact(SNAPSHOT_CREATED, {"sequence": 4})) == []
