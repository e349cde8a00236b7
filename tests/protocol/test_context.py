"""Context packages in the pure core (R13.3): ``context.publish``, ``context.forward`` and the
authority's ``context.receive``, as given/when/then, and their aggregate.

The write path signs each recorded package (``NewEvent.authority_signs``); here the tests sign
it the same way with a test key (``_as_recorded``), so what the evolvers fold is what a log
holds.

Not enforced by code, so no test here cites them: R13.3-06 (reusable knowledge published as
an organisation-approved, classified artifact) is a rule for an organisation's catalogue of
artifacts, which does not exist; a context package stays scoped to one mission of one group
and never becomes reusable knowledge by itself. R13.3-08 (the global scheduler must not read
confidential mission content) is not the authority's: it has no global scheduler, and packages
are only served to members (``tests/api/test_contexts.py``). The scheduler is the worker's,
fed scheduling metadata only (``tests/worker/test_scheduler_metadata.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from missionweave.protocol import context, decider
from missionweave.protocol.artifacts.records import StoredArtifact, stored_artifact_key
from missionweave.protocol.commands import COMMANDS, PUBLIC_COMMAND_TYPES
from missionweave.protocol.context import (
    FORWARD,
    PUBLISH,
    RECEIVE,
    ContextPackage,
    context_key,
    package_digest,
    receive_command_id,
)
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.evolvers import REGISTRY
from missionweave.protocol.examples import example_contract
from missionweave.protocol.facts import Command, Decision, Fact, NewEvent, StateKey
from missionweave.protocol.signing import (
    document_signature_holds,
    generate_private_key,
    sign_document,
)
from missionweave.protocol.timefmt import format_timestamp

from .deciders import GROUP, NOW, Scenario

COORDINATOR = "agent:w1"
GENERATOR = "agent:summariser"
OTHER = "g-ops"
ROLES = frozenset({"coordinator"})
STORED = "sha256:" + "ab" * 32
NEVER_STORED = "sha256:" + "cd" * 32
AUTHORITY_KEY = generate_private_key()


def _as_recorded(decision: Decision) -> Decision:
    """The decision as the write path appends it: each named document signed by the
    authority unless it carries a signature (``apps/ledger/signatures.py``)."""
    events = []
    for event in decision.events:
        payload = dict(event.payload)
        for key in event.authority_signs:
            if "signature" not in payload[key]:
                payload[key] = sign_document(AUTHORITY_KEY, payload[key])
        events.append(NewEvent(event.type, payload))
    return replace(decision, events=events)


@dataclass
class GroupLog(Scenario):
    """``Scenario`` for one named group whose commands know the head (an event range is
    bounded by it, R13.3-02) and whose sender may name the ``STORED`` artifact."""

    group: str = GROUP
    #: every fact appended, in order (what a replay folds)
    log: list[Fact] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.state[stored_artifact_key(STORED)] = StoredArtifact(STORED, 10)

    def given(
        self, *events: tuple[str, dict[str, Any]], actor: str = COORDINATOR, at: datetime = NOW
    ) -> GroupLog:
        for type_, payload in events:
            self.sequence += 1
            fact = Fact(
                type_,
                payload,
                actor,
                self.sequence,
                f"c{self.sequence}",
                format_timestamp(at),
                self.group,
            )
            decider.apply(self.state, fact)
            self.log.append(fact)
        return self

    def when(  # type: ignore[override]
        self,
        type_: str,
        body: dict[str, Any],
        *,
        actor: str = COORDINATOR,
        command_id: str | None = None,
    ) -> Decision:
        spec = COMMANDS[type_]
        spec.validate(body)
        command = Command(
            id=command_id or f"cmd-{self.sequence + 1}",
            type=type_,
            group=self.group,
            actor=actor,
            body=body,
            now=NOW,
            actor_roles=ROLES,
            head_sequence=self.sequence,
        )
        view: dict[StateKey, Any] = {}
        for _ in range(8):
            missing = spec.keys(command, view) - view.keys()
            if not missing:
                break
            view.update({key: self.state.get(key) for key in missing})
        return _as_recorded(decider.decide(view, command))

    def then(  # type: ignore[override]
        self, decision: Decision, *, actor: str = COORDINATOR, at: datetime = NOW
    ) -> list[tuple[str, dict]]:
        events = [(event.type, event.payload) for event in decision.events]
        self.given(*events, actor=actor, at=at)
        return events

    def ok(self, type_: str, body: dict[str, Any], **kwargs: Any) -> list[tuple[str, dict]]:
        return self.then(self.when(type_, body, **kwargs), actor=kwargs.get("actor", COORDINATOR))

    def package(self, package_id: str, from_group: str | None = None) -> ContextPackage:
        return self.state[context_key(package_id, from_group)]


def _with_mission(group: GroupLog | None = None) -> GroupLog:
    """``m-1`` with WorkItems ``wi-1`` and ``wi-2``, ``m-2`` with ``wi-9``: 5 events."""
    group = group or GroupLog()
    for mission in ("m-1", "m-2"):
        body = {"mission": mission, "goal": "Summarise", "budgets": {"money": 5.0}}
        group.ok("mission.create", body)
    for item, mission in (("wi-1", "m-1"), ("wi-2", "m-1"), ("wi-9", "m-2")):
        body = {
            "work_item": item,
            "mission": mission,
            "contract": example_contract(inputs=[]),
            "depends_on": [],
        }
        group.ok("work.authorize", body)
    return group


def package(version: int = 1, **overrides: Any) -> dict[str, Any]:
    """A package body as wire.md §9 writes it (R13.3-02), citing events 1..5."""
    value: dict[str, Any] = {
        "id": "ctx-1",
        "version": version,
        "mission": "m-1",
        "work_items": ["wi-1", "wi-2"],
        "event_range": [1, 5],
        "artifacts": [STORED],
        "decisions": ["summaries are per incident"],
        "constraints": ["no customer names"],
        "open_questions": ["include October?"],
        "generator": GENERATOR,
        "created_at": "2026-11-30T09:59:00Z",
    }
    value.update(overrides)
    return value


def _refused(group: GroupLog, type_: str, body: dict[str, Any], **kwargs: Any) -> ProtocolError:
    before = dict(group.state)
    with pytest.raises(ProtocolError) as caught:
        group.when(type_, body, **kwargs)
    assert group.state == before
    return caught.value


# --- context.publish ------------------------------------------------------------------------


def test_publish_records_the_package_with_no_predecessor_and_its_digest() -> None:
    """R13.3-01, R13.3-02, wire§6: context.publish → context.published carrying every field
    of the package, ``previous: null`` for version 1, and the digest of the canonical package
    without its signature; the authority is asked to sign it."""
    group = _with_mission()
    decision = decider.decide(
        {
            context_key("ctx-1"): None,
            ("mission", "m-1"): group.state[("mission", "m-1")],
            ("work_item", "wi-1"): group.state[("work_item", "wi-1")],
            ("work_item", "wi-2"): group.state[("work_item", "wi-2")],
            stored_artifact_key(STORED): StoredArtifact(STORED, 10),
        },
        Command("c", PUBLISH, GROUP, COORDINATOR, {"package": package()}, NOW, head_sequence=5),
    )
    (event,) = decision.events
    assert (event.type, event.authority_signs) == ("context.published", ("package",))
    assert event.payload["package"] == {**package(), "previous": None}
    assert event.payload["digest"] == package_digest({**package(), "previous": None})
    assert decision.result == {"package": "ctx-1", "version": 1, "digest": event.payload["digest"]}


def test_the_recorded_package_is_signed_and_its_digest_ignores_the_signature() -> None:
    """R13.3-01, R13.3-02: the signature verifies under the authority key over the package
    without it, and the digest recorded beside it is of the same bytes."""
    group = _with_mission()
    ((_, payload),) = group.ok(PUBLISH, {"package": package()})
    recorded = payload["package"]
    assert document_signature_holds(AUTHORITY_KEY.public_key(), recorded)
    assert package_digest(recorded) == payload["digest"]
    assert "signature" not in package()


def test_each_new_version_names_the_digest_of_the_one_before() -> None:
    """R13.3-04: version n + 1 carries ``previous`` = the digest of version n, inside what the
    authority signs; the aggregate keeps every version in order."""
    group = _with_mission()
    group.ok(PUBLISH, {"package": package()})
    group.ok(PUBLISH, {"package": package(2, decisions=["per incident", "weekly digest"])})
    group.ok(PUBLISH, {"package": package(3, event_range=[3, 7])})
    versions = group.package("ctx-1").versions
    assert [v["version"] for v in versions] == [1, 2, 3]
    assert [v["package"]["previous"] for v in versions] == [
        None,
        versions[0]["digest"],
        versions[1]["digest"],
    ]
    assert [v["sequence"] for v in versions] == [6, 7, 8]
    for entry in versions:
        assert document_signature_holds(AUTHORITY_KEY.public_key(), entry["package"])
        assert package_digest(entry["package"]) == entry["digest"]


def test_the_aggregate_of_a_published_package() -> None:
    """R13.3-01: the package's group is its source; nothing is forwarded yet."""
    group = _with_mission()
    group.ok(PUBLISH, {"package": package()})
    aggregate = group.package("ctx-1")
    (entry,) = aggregate.versions
    assert aggregate.as_dict() == {
        "id": "ctx-1",
        "source_group": GROUP,
        "versions": [entry],
        "forwarded": [],
        "received_from": None,
        "forwarded_by": None,
    }
    assert entry["recorded_at"] == format_timestamp(NOW)
    assert set(entry) == {"version", "digest", "package", "sequence", "recorded_at"}
    assert ContextPackage.from_dict(aggregate.as_dict()) == aggregate


@pytest.mark.parametrize(
    ("existing", "version", "latest"),
    [
        (0, 2, 0),  # a new id starts at 1
        (1, 1, 1),  # a recorded version is never replaced
        (1, 3, 1),  # no gaps
        (2, 1, 2),  # no going back
    ],
)
def test_a_version_other_than_the_next_is_an_illegal_transition(
    existing: int, version: int, latest: int
) -> None:
    """R13.3-04: a new id is version 1, an existing one exactly latest + 1 (409 with
    ``details.latest``)."""
    group = _with_mission()
    for number in range(1, existing + 1):
        group.ok(PUBLISH, {"package": package(number)})
    error = _refused(group, PUBLISH, {"package": package(version)})
    assert (error.code, error.status, error.requirement) == (
        ErrorCode.ILLEGAL_TRANSITION,
        409,
        "R13.3-04",
    )
    assert error.details == {"package": "ctx-1", "latest": latest}


def test_the_same_version_again_with_other_content_is_refused_the_same_way() -> None:
    """R13.3-04: version 1 once recorded is its provenance; other content under the same
    number is a conflict, not an update."""
    group = _with_mission()
    group.ok(PUBLISH, {"package": package()})
    error = _refused(group, PUBLISH, {"package": package(decisions=["something else"])})
    assert (error.code, error.details) == (
        ErrorCode.ILLEGAL_TRANSITION,
        {"package": "ctx-1", "latest": 1},
    )


def test_packages_of_different_ids_have_their_own_versions() -> None:
    """R13.3-04: versions count per package id."""
    group = _with_mission()
    group.ok(PUBLISH, {"package": package()})
    group.ok(PUBLISH, {"package": package(id="ctx-2")})
    assert group.package("ctx-2").latest == 1
    assert group.package("ctx-2").versions[0]["package"]["previous"] is None


@pytest.mark.parametrize("event_range", [[1, 5], [5, 5], [1, 1], [3, 4]])
def test_an_event_range_within_the_head_is_accepted(event_range: list[int]) -> None:
    """R13.3-02: 1 ≤ from ≤ to ≤ head (the head before this command: 5)."""
    group = _with_mission()
    group.ok(PUBLISH, {"package": package(event_range=event_range)})
    assert group.package("ctx-1").versions[0]["package"]["event_range"] == event_range


def test_an_event_range_past_the_head_is_malformed() -> None:
    """R13.3-02: the source range cites events that exist."""
    group = _with_mission()
    error = _refused(group, PUBLISH, {"package": package(event_range=[1, 6])})
    assert (error.code, error.requirement) == (ErrorCode.MALFORMED, "R13.3-02")
    assert error.details == {"path": "$.package.event_range"}


def _missing_field(name: str) -> dict[str, Any]:
    body = package()
    del body[name]
    return {"package": body}


@pytest.mark.parametrize("name", context.PACKAGE_FIELDS)
def test_every_field_of_r13_3_02_is_required(name: str) -> None:
    """R13.3-02: mission, WorkItem scope, source event range, artifact hashes, decisions,
    constraints, unresolved questions, generator and time — none may be left out."""
    error = _refused(_with_mission(), PUBLISH, _missing_field(name))
    assert error.code is ErrorCode.MALFORMED
    assert error.details == {"path": f"$.package.{name}"}


BAD_FIELDS = [
    ({"id": "ctx 1"}, "$.package.id"),
    ({"id": "a/b"}, "$.package.id"),
    ({"id": ""}, "$.package.id"),
    ({"version": 0}, "$.package.version"),
    ({"version": -1}, "$.package.version"),
    ({"version": "1"}, "$.package.version"),
    ({"version": True}, "$.package.version"),
    ({"version": 1.0}, "$.package.version"),
    ({"mission": 7}, "$.package.mission"),
    ({"work_items": "wi-1"}, "$.package.work_items"),
    ({"work_items": ["wi-1", "wi 2"]}, "$.package.work_items[1]"),
    ({"work_items": ["wi-1", "wi-1"]}, "$.package.work_items[1]"),
    ({"event_range": "1-5"}, "$.package.event_range"),
    ({"event_range": []}, "$.package.event_range"),
    ({"event_range": [1]}, "$.package.event_range"),
    ({"event_range": [1, 2, 3]}, "$.package.event_range"),
    ({"event_range": [0, 3]}, "$.package.event_range"),
    ({"event_range": [4, 3]}, "$.package.event_range"),
    ({"event_range": [1, "3"]}, "$.package.event_range"),
    ({"event_range": [1.0, 3]}, "$.package.event_range"),
    ({"event_range": [True, 3]}, "$.package.event_range"),
    ({"artifacts": STORED}, "$.package.artifacts"),
    ({"artifacts": ["sha256:AB"]}, "$.package.artifacts[0]"),
    ({"artifacts": [STORED, STORED]}, "$.package.artifacts[1]"),
    ({"decisions": "one"}, "$.package.decisions"),
    ({"constraints": [1]}, "$.package.constraints"),
    ({"open_questions": None}, "$.package.open_questions"),
    ({"generator": "w1"}, "$.package.generator"),
    ({"generator": "robot:w1"}, "$.package.generator"),
    ({"created_at": "yesterday"}, "$.package.created_at"),
    ({"created_at": "2026-11-30T10:00:00+01:00"}, "$.package.created_at"),
    ({"created_at": 1764496800}, "$.package.created_at"),
    ({"signature": "c2ln"}, "$.package.signature"),
    ({"previous": None}, "$.package.previous"),
]


@pytest.mark.parametrize(("overrides", "path"), BAD_FIELDS)
def test_a_bad_field_is_malformed_naming_it(overrides: dict[str, Any], path: str) -> None:
    """R13.3-02, wire§9: each field has its type; the refusal names the field by JSON path.
    The authority adds ``previous`` and ``signature``: a client may send neither."""
    error = _refused(_with_mission(), PUBLISH, {"package": package(**overrides)})
    assert error.code is ErrorCode.MALFORMED
    assert error.details == {"path": path}


@pytest.mark.parametrize("body", [{"package": "ctx-1"}, {"package": None}, {}, {"package": {}}])
def test_a_body_that_is_not_a_package_is_malformed(body: dict[str, Any]) -> None:
    """wire§9: ``context.publish``'s body is ``{"package": {...}}``."""
    assert _refused(_with_mission(), PUBLISH, body).code is ErrorCode.MALFORMED


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"package": package(reasoning="I thought hard")}, "$.package.reasoning"),
        ({"package": package(), "chain_of_thought": ["a", "b"]}, "$.chain_of_thought"),
    ],
)
def test_private_reasoning_is_never_recorded_in_a_package(body: dict[str, Any], path: str) -> None:
    """R13.3-01 (as R13.2-05 for evidence): a summary carries decisions, never the private
    reasoning behind them."""
    error = _refused(_with_mission(), PUBLISH, body)
    assert (error.code, error.requirement, error.details) == (
        ErrorCode.MALFORMED,
        "R13.3-01",
        {"path": path},
    )


def test_the_mission_must_exist_in_this_group() -> None:
    """R13.3-02: a package is scoped to one of this group's missions."""
    error = _refused(_with_mission(), PUBLISH, {"package": package(mission="m-404")})
    assert (error.code, error.status) == (ErrorCode.NOT_FOUND, 404)
    assert error.details == {"path": "$.package.mission", "mission": "m-404"}


def test_every_work_item_must_exist_in_this_group() -> None:
    """R13.3-02: the WorkItem scope names WorkItems that exist."""
    body = {"package": package(work_items=["wi-1", "wi-404"])}
    error = _refused(_with_mission(), PUBLISH, body)
    assert error.code is ErrorCode.NOT_FOUND
    assert error.details == {"path": "$.package.work_items[1]", "work_item": "wi-404"}


def test_a_work_item_of_another_mission_is_outside_the_scope() -> None:
    """R13.3-02, R13.3-05: the WorkItem scope lies within the package's mission, so one
    mission's package cannot carry another mission's work."""
    error = _refused(_with_mission(), PUBLISH, {"package": package(work_items=["wi-9"])})
    assert (error.code, error.requirement) == (ErrorCode.MALFORMED, "R13.3-02")
    assert error.details == {
        "path": "$.package.work_items[0]",
        "work_item": "wi-9",
        "mission": "m-2",
    }


def test_an_empty_scope_is_a_package_about_the_mission_alone() -> None:
    """R13.3-02: the lists are required, not required to be non-empty."""
    group = _with_mission()
    body = package(work_items=[], artifacts=[], decisions=[], constraints=[], open_questions=[])
    group.ok(PUBLISH, {"package": body})
    assert group.package("ctx-1").latest == 1


def test_an_artifact_the_sender_may_not_name_is_not_found_naming_the_digest() -> None:
    """R13.3-02, wire§9: a package's artifact hashes must be nameable by the sender; any other
    digest is refused exactly like one never stored."""
    body = {"package": package(artifacts=[STORED, NEVER_STORED])}
    error = _refused(_with_mission(), PUBLISH, body)
    assert (error.code, error.status) == (ErrorCode.NOT_FOUND, 404)
    assert error.details == {"path": "$.package.artifacts[1]", "digest": NEVER_STORED}


def test_publish_reads_the_package_its_scope_and_the_named_artifacts() -> None:
    """R13.3-02: the state keys the write path loads for the command."""
    body = {"package": package()}
    command = Command("c", PUBLISH, GROUP, COORDINATOR, body, NOW, head_sequence=5)
    assert COMMANDS[PUBLISH].keys(command, {}) == {
        context_key("ctx-1"),
        ("mission", "m-1"),
        ("work_item", "wi-1"),
        ("work_item", "wi-2"),
        stored_artifact_key(STORED),
    }


# --- context.forward and context.receive -----------------------------------------------------


def _published(versions: int = 1) -> GroupLog:
    group = _with_mission()
    for number in range(1, versions + 1):
        group.ok(PUBLISH, {"package": package(number)})
    return group


def forward(version: int = 1, to_group: str = OTHER, package_id: str = "ctx-1") -> dict[str, Any]:
    return {"package": {"id": package_id, "version": version}, "to_group": to_group}


def test_forward_records_the_crossing_and_hands_the_signed_version_to_the_other_group() -> None:
    """R13.3-07, wire§6: ``context.forwarded`` in this group; the other group gets the signed
    package as recorded through an authority follow-up ``context.receive`` whose id is
    derived from this command's, with where it comes from and who forwarded it."""
    group = _published(2)
    decision = group.when(FORWARD, forward(1), command_id="cmd-fwd")
    v1 = group.package("ctx-1").version(1)
    assert v1 is not None
    ((type_, payload),) = [(e.type, e.payload) for e in decision.events]
    assert (type_, payload) == (
        "context.forwarded",
        {"package": {"id": "ctx-1", "version": 1}, "digest": v1["digest"], "to_group": OTHER},
    )
    (follow_up,) = decision.follow_ups
    assert (follow_up.group, follow_up.type) == (OTHER, RECEIVE)
    assert follow_up.command_id == receive_command_id(GROUP, "cmd-fwd")
    assert follow_up.body == {
        "package": v1["package"],
        "digest": v1["digest"],
        "from_group": GROUP,
        "forwarded_by": COORDINATOR,
        "source_sequence": v1["sequence"],
    }
    assert decision.result["receive_command"] == follow_up.command_id


def test_the_receive_command_id_is_deterministic_and_a_wire_id() -> None:
    """R13.3-07, wire§1: the same forward always hands on the same command id (a resend is
    an idempotent replay there), different forwards different ones, each a valid id."""
    ids = {
        receive_command_id(group, command)
        for group in ("g-a", "g-b", "g" * 128)
        for command in ("c-1", "c-2", "c" * 128)
    }
    assert len(ids) == 9
    assert receive_command_id("g-a", "c-1") == receive_command_id("g-a", "c-1")
    assert all(re.fullmatch(r"[A-Za-z0-9._:-]{1,128}", command_id) for command_id in ids)


def test_the_source_aggregate_lists_each_crossing() -> None:
    """R13.3-07: the crossing is auditable from the package itself."""
    group = _published(2)
    group.ok(FORWARD, forward(1))
    group.ok(FORWARD, forward(2))
    group.ok(FORWARD, forward(2, to_group="g-archive"))
    assert group.package("ctx-1").forwarded == (
        {"version": 1, "to_group": OTHER, "sequence": 8, "forwarded_by": COORDINATOR},
        {"version": 2, "to_group": OTHER, "sequence": 9, "forwarded_by": COORDINATOR},
        {"version": 2, "to_group": "g-archive", "sequence": 10, "forwarded_by": COORDINATOR},
    )


def test_a_version_crosses_to_a_group_once() -> None:
    """R13.3-07: a second forward of the same version to the same group would append a
    crossing the other group never receives; it is refused naming the first."""
    group = _published()
    group.ok(FORWARD, forward(1))
    error = _refused(group, FORWARD, forward(1))
    assert (error.code, error.requirement) == (ErrorCode.ILLEGAL_TRANSITION, "R13.3-07")
    assert error.details == {"package": "ctx-1", "version": 1, "to_group": OTHER, "sequence": 7}


def test_forwarding_to_this_very_group_is_malformed() -> None:
    """R13.3-07: forwarding is a crossing between groups."""
    error = _refused(_published(), FORWARD, forward(1, to_group=GROUP))
    assert (error.code, error.details) == (ErrorCode.MALFORMED, {"path": "$.to_group"})


@pytest.mark.parametrize(("package_id", "version"), [("ctx-404", 1), ("ctx-1", 2)])
def test_forwarding_a_version_that_is_not_here_is_not_found(package_id: str, version: int) -> None:
    """R13.3-05, R13.3-07: only a version published in this group can leave it."""
    error = _refused(_published(), FORWARD, forward(version, package_id=package_id))
    assert error.code is ErrorCode.NOT_FOUND
    assert error.details == {"path": "$.package", "package": package_id, "version": version}


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"package": "ctx-1", "to_group": OTHER}, "$.package"),
        ({"package": {"id": "ctx-1"}, "to_group": OTHER}, "$.package.version"),
        ({"package": {"id": "ctx 1", "version": 1}, "to_group": OTHER}, "$.package.id"),
        ({"package": {"id": "ctx-1", "version": 0}, "to_group": OTHER}, "$.package.version"),
        ({"package": {"id": "ctx-1", "version": 1, "x": 1}, "to_group": OTHER}, "$.package.x"),
        ({"package": {"id": "ctx-1", "version": 1}}, "$.to_group"),
        ({"package": {"id": "ctx-1", "version": 1}, "to_group": "g/ops"}, "$.to_group"),
    ],
)
def test_a_bad_forward_body_is_malformed_naming_the_field(body: dict[str, Any], path: str) -> None:
    """R13.3-07, wire§9: ``package`` {id, version} and ``to_group``."""
    error = _refused(_published(), FORWARD, body)
    assert (error.code, error.details) == (ErrorCode.MALFORMED, {"path": path})


def _received_in_other(source: GroupLog, *versions: int) -> GroupLog:
    """The other group after the authority ran the follow-ups of forwarding ``versions``."""
    target = GroupLog(group=OTHER)
    for number in versions:
        decision = source.when(FORWARD, forward(number))
        source.then(decision)
        (follow_up,) = decision.follow_ups
        target.ok(RECEIVE, follow_up.body, actor="authority", command_id=follow_up.command_id)
    return target


def test_receive_records_the_package_in_the_other_group_under_its_source() -> None:
    """R13.3-05, R13.3-07, wire§6: ``context.received`` carries the signed package as the
    source recorded it; the other group keys it ``<from_group>/<id>`` and can verify it."""
    source = _published(1)
    target = _received_in_other(source, 1)
    received = target.package("ctx-1", GROUP)
    (entry,) = received.versions
    published = source.package("ctx-1").versions[0]
    assert (received.id, received.source_group, received.received_from) == ("ctx-1", GROUP, GROUP)
    assert received.forwarded_by == COORDINATOR
    assert entry["package"] == published["package"]
    assert entry["digest"] == published["digest"] == package_digest(entry["package"])
    assert (entry["source_sequence"], entry["sequence"]) == (published["sequence"], 1)
    assert document_signature_holds(AUTHORITY_KEY.public_key(), entry["package"])
    assert context_key("ctx-1") not in target.state


def test_a_received_package_never_mixes_with_a_local_one_of_the_same_id() -> None:
    """R13.3-05: another group's content does not enter this group's own package."""
    source = _published(1)
    target = _with_mission(GroupLog(group=OTHER))
    target.ok(PUBLISH, {"package": package()})
    (follow_up,) = source.when(FORWARD, forward(1)).follow_ups
    target.ok(RECEIVE, follow_up.body, actor="authority")
    assert target.package("ctx-1").latest == 1
    assert target.package("ctx-1").received_from is None
    assert target.package("ctx-1", GROUP).received_from == GROUP


def test_received_versions_are_kept_in_version_order_whatever_the_arrival() -> None:
    """R13.3-04: the provenance chain reads in order in the receiving group too."""
    source = _published(2)
    target = _received_in_other(source, 2, 1)
    versions = target.package("ctx-1", GROUP).versions
    assert [v["version"] for v in versions] == [1, 2]
    assert versions[1]["package"]["previous"] == versions[0]["digest"]


def test_the_same_version_is_never_received_twice() -> None:
    """R13.3-07: one recorded crossing, one recorded arrival."""
    source = _published(1)
    (follow_up,) = source.when(FORWARD, forward(1)).follow_ups
    target = GroupLog(group=OTHER)
    target.ok(RECEIVE, follow_up.body, actor="authority")
    error = _refused(target, RECEIVE, follow_up.body, actor="authority")
    assert error.code is ErrorCode.ILLEGAL_TRANSITION
    assert error.details == {"package": "ctx-1", "version": 1, "from_group": GROUP}


def test_the_command_table_names_who_may_publish_forward_and_receive() -> None:
    """R13.3-07, wire§9: coordinators publish and forward (a forward names its other group,
    where the write path checks the role too); only the authority receives."""
    publish, fwd, receive = COMMANDS[PUBLISH], COMMANDS[FORWARD], COMMANDS[RECEIVE]
    assert publish.roles == fwd.roles == frozenset({"coordinator"})
    assert publish.other_groups is None
    assert fwd.other_groups is not None
    assert fwd.other_groups(forward(1)) == [OTHER]
    assert receive.authority_only
    assert {PUBLISH, FORWARD} <= PUBLIC_COMMAND_TYPES
    assert RECEIVE not in PUBLIC_COMMAND_TYPES


def test_the_context_events_change_the_context_aggregate() -> None:
    """R13.3-01: every context event has an evolver (none is silently audit-only)."""
    assert context in decider.EVOLVER_MODULES
    assert REGISTRY.events_changing("context") == {
        "context.published",
        "context.forwarded",
        "context.received",
    }


# --- replay ----------------------------------------------------------------------------------

#: (command, package id, version relative to the latest, decision text or target group, width)
#: — mostly the next version and versions that exist, with some that are refused
steps = st.lists(
    st.one_of(
        st.tuples(
            st.just(PUBLISH),
            st.sampled_from(["ctx-1", "ctx-2"]),
            st.sampled_from([1, 1, 1, 0, 2, -1]),
            st.integers(1, 9),
            st.integers(0, 3),
        ),
        st.tuples(
            st.just(FORWARD),
            st.sampled_from(["ctx-1", "ctx-2"]),
            st.sampled_from([0, 0, -1, -2, 1]),
            st.sampled_from([OTHER, "g-archive"]),
            st.just(0),
        ),
    ),
    min_size=4,
    max_size=24,
)


def _replayed(events: list[Fact]) -> dict[StateKey, Any]:
    state: dict[StateKey, Any] = {}
    for fact in events:
        decider.apply(state, fact)
    return {key: value for key, value in state.items() if key[0] == "context"}


@settings(max_examples=80, deadline=None)  # each example decides a whole story
@given(steps)
def test_replaying_the_log_rebuilds_the_same_packages(program: list[tuple[Any, ...]]) -> None:
    """R13.3-01, R13.3-04: whatever mix of publications (valid or not) and forwards runs,
    folding the appended events from scratch gives the aggregates the live path built, in
    both groups; every version chains to the one before; ``as_dict`` round-trips."""
    source = _with_mission()
    target = GroupLog(group=OTHER)
    for type_, package_id, offset, extra, width in program:
        current = source.state.get(context_key(package_id))
        version = max(1, (current.latest if current is not None else 0) + offset)
        if type_ == PUBLISH:
            body = {"package": package(version, id=package_id, event_range=[1, 1 + width])}
            body["package"]["decisions"] = [f"decision {extra}"]
        else:
            body = forward(version, to_group=extra, package_id=package_id)
        try:
            decision = source.when(type_, body)
        except ProtocolError:
            continue
        source.then(decision)
        for follow_up in decision.follow_ups:
            if follow_up.group == OTHER:
                target.ok(RECEIVE, follow_up.body, actor="authority")
    for live in (source, target):
        rebuilt = _replayed(live.log)
        assert rebuilt == {k: v for k, v in live.state.items() if k[0] == "context"}
        for aggregate in rebuilt.values():
            assert ContextPackage.from_dict(aggregate.as_dict()) == aggregate
            numbers = [entry["version"] for entry in aggregate.versions]
            assert numbers == sorted(set(numbers))
            if aggregate.received_from is None:
                assert numbers == list(range(1, len(numbers) + 1))
            digests = {entry["version"]: entry["digest"] for entry in aggregate.versions}
            for entry in aggregate.versions:
                if entry["version"] - 1 in digests or aggregate.received_from is None:
                    # a received package may lack the versions that were never forwarded
                    assert entry["package"]["previous"] == digests.get(entry["version"] - 1)
                assert package_digest(entry["package"]) == entry["digest"]
