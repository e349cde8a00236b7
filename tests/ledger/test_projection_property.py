"""Property: whatever commands arrive, live projections equal a replay of the log (R16).

Hypothesis draws sequences of valid and invalid commands — missions with new, duplicate,
existing-parent and unknown-parent ids, bad bodies, stale membership epochs, commands by
non-members and revoked members, grants, role changes, revocations and re-grants by the
admin, batches mixing good and bad items, and re-sent commands — and sends them through the
real write path on PostgreSQL. A small model predicts each answer; after every command the
head moved exactly as the answer says (a refusal appends nothing), and after every run the
log is gapless and chained and its replay equals the live projection rows.

Each example uses a fresh group, so nothing has to be flushed between examples.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st

from apps.ledger.models import CommandRecord, Event, GroupLog
from apps.ledger.write_path import Outcome, submit_batch, submit_command
from apps.registry import services
from missionweave.protocol.errors import ErrorCode, ProtocolError
from tests import factories, proofs
from tests.factories import AgentPersona, HumanPersona
from tests.ledger.checks import assert_log_consistent

pytestmark = pytest.mark.proof

PRINCIPALS = ("a0", "a1", "olga")
MISSIONS = ("m0", "m1", "m2", "m3")
ROLES = ("mission_owner", "coordinator", "worker", "observer")
MAY_CREATE = {"mission_owner", "coordinator"}
BAD_BODIES = ("missing_goal", "blank_goal", "negative_budget", "unknown_budget", "extra", "bad_id")


@dataclass(frozen=True)
class Create:
    actor: str
    mission: str
    parent: str | None
    body: str  # "ok" or one of BAD_BODIES
    epoch_offset: int


@dataclass(frozen=True)
class Grant:
    principal: str
    roles: tuple[str, ...]  # empty: a malformed grant


@dataclass(frozen=True)
class Revoke:
    principal: str


@dataclass(frozen=True)
class Batch:
    actor: str
    items: tuple[Create | None, ...]  # None: an item signed for another actor


@dataclass(frozen=True)
class Resend:
    pick: int


creates = st.builds(
    Create,
    actor=st.sampled_from(PRINCIPALS),
    mission=st.sampled_from(MISSIONS),
    parent=st.sampled_from((None, None, *MISSIONS, "ghost")),
    body=st.sampled_from(("ok",) * 8 + BAD_BODIES),
    epoch_offset=st.sampled_from((0, 0, 0, 0, 0, -1, 1)),
)
# commands that pass the membership checks, so ids collide and parents resolve often
good_creates = st.builds(
    Create,
    actor=st.sampled_from(("a0", "olga")),
    mission=st.sampled_from(MISSIONS[1:]),
    parent=st.sampled_from((None, "m0", "m0", *MISSIONS[1:])),  # m0 exists: siblings are likely
    body=st.just("ok"),
    epoch_offset=st.just(0),
)
operations = st.lists(
    st.one_of(
        creates,
        st.builds(
            Grant,
            principal=st.sampled_from(PRINCIPALS),
            roles=st.one_of(
                st.sets(st.sampled_from(ROLES), min_size=1).map(lambda s: tuple(sorted(s))),
                st.just(()),
            ),
        ),
        st.builds(Revoke, principal=st.sampled_from(PRINCIPALS)),
        st.builds(
            Batch,
            actor=st.sampled_from(PRINCIPALS),
            items=st.lists(st.one_of(creates, st.none()), min_size=1, max_size=4).map(tuple),
        ),
        st.builds(Resend, pick=st.integers(0, 1000)),
    ),
    max_size=24,
)


def _body(create: Create) -> dict[str, Any]:
    body: dict[str, Any] = {"mission": create.mission, "goal": "a goal", "budgets": {"tokens": 9}}
    if create.parent is not None:
        body["parent"] = create.parent
    match create.body:
        case "missing_goal":
            del body["goal"]
        case "blank_goal":
            body["goal"] = "   "
        case "negative_budget":
            body["budgets"] = {"money": -1}
        case "unknown_budget":
            body["budgets"] = {"beer": 1}
        case "extra":
            body["colour"] = "red"
        case "bad_id":
            body["mission"] = "not an id!"
    return body


@dataclass
class Model:
    """What the authority should answer, from the rules of wire.md §3 and §9."""

    members: dict[str, tuple[tuple[str, ...], int, bool]] = field(default_factory=dict)
    missions: set[str] = field(default_factory=set)
    events: int = 0
    #: accepted commands that appended nothing (a re-grant of the same roles)
    silent: int = 0

    def epoch(self, principal: str) -> int:
        return self.members.get(principal, ((), 0, False))[1]

    def create(self, principal: str, create: Create) -> ErrorCode | None:
        roles, _, active = self.members.get(principal, ((), 0, False))
        if not active:
            return ErrorCode.NOT_A_MEMBER
        if not MAY_CREATE.intersection(roles):
            return ErrorCode.FORBIDDEN
        if create.epoch_offset:
            return ErrorCode.STALE_MEMBERSHIP
        if create.body != "ok":
            return ErrorCode.MALFORMED
        if create.mission in self.missions:
            return ErrorCode.ILLEGAL_TRANSITION
        if create.parent is not None and create.parent not in self.missions:
            return ErrorCode.NOT_FOUND
        self.missions.add(create.mission)
        self.events += 1
        return None

    def grant(self, grant: Grant) -> ErrorCode | None:
        if not grant.roles:
            return ErrorCode.MALFORMED
        current = self.members.get(grant.principal)
        if current is not None and current[2] and sorted(current[0]) == sorted(grant.roles):
            self.silent += 1  # re-granting the same roles appends nothing (issue 13 §1)
            return None
        self.members[grant.principal] = (grant.roles, self.epoch(grant.principal) + 1, True)
        self.events += 1
        return None

    def revoke(self, principal: str) -> ErrorCode | None:
        roles, epoch, active = self.members.get(principal, ((), 0, False))
        if not active:
            return ErrorCode.NOT_FOUND
        self.members[principal] = (roles, epoch + 1, False)
        self.events += 1
        return None


@dataclass
class Run:
    """One example: a fresh group, the personas, the model and what was sent."""

    group: str
    admin: HumanPersona
    personas: dict[str, AgentPersona | HumanPersona]
    model: Model = field(default_factory=Model)
    accepted: list[tuple[dict[str, Any], str, Outcome]] = field(default_factory=list)
    refused_ids: list[tuple[str, str]] = field(default_factory=list)  # (actor, command id)

    def head(self) -> int:
        return GroupLog.objects.get(group_id=self.group).head_sequence

    def document(self, principal: str, create: Create) -> dict[str, Any]:
        epoch = max(0, self.model.epoch(principal) + create.epoch_offset)
        return self.personas[principal].command(
            self.group, "mission.create", _body(create), membership_epoch=epoch
        )

    def judge(
        self,
        document: dict[str, Any],
        expected: ErrorCode | None,
        answer: Outcome | ProtocolError,
        head_before: int,
        *,
        resendable: bool = True,
    ) -> int:
        """Check one answer against the model; the head the answer implies."""
        if expected is None:
            assert isinstance(answer, Outcome), answer
            assert not answer.replayed
            sequences = [event["sequence"] for event in answer.body["events"]]
            assert sequences == list(range(head_before + 1, head_before + 1 + len(sequences)))
            if resendable:
                self.accepted.append((document, document["actor"], answer))
            event("accepted")
            return head_before + len(sequences)
        assert isinstance(answer, ProtocolError), (expected, answer)
        assert answer.code is expected, (answer, document)
        event(f"refused {expected.value}")
        if resendable:
            self.refused_ids.append((document["actor"], document["id"]))
        return head_before

    def one(self, principal: str, document: dict[str, Any], expected: ErrorCode | None) -> None:
        before = self.head()
        answer: Outcome | ProtocolError
        try:
            answer = submit_command(
                group_id=self.group, document=document, caller=self.personas[principal].caller
            )
        except ProtocolError as refusal:
            answer = refusal
        assert self.head() == self.judge(document, expected, answer, before)

    def admin_one(
        self, name: str, document_body: dict[str, Any], kind: str, expected: ErrorCode | None
    ) -> None:
        before = self.head()
        answer: Outcome | ProtocolError
        try:
            if kind == "grant":
                answer = services.membership_grant(
                    group_id=self.group, admin=self.admin.caller, body=document_body
                )
            else:
                answer = services.membership_revoke(
                    group_id=self.group,
                    admin=self.admin.caller,
                    principal=document_body["principal"],
                )
        except ProtocolError as refusal:
            answer = refusal
        if expected is None:
            assert isinstance(answer, Outcome), answer
            assert answer.body["result"]["epoch"] == self.model.epoch(name)
        # the service builds the admin's envelope itself: nothing to re-send or look up
        after = self.judge({}, expected, answer, before, resendable=False)
        assert self.head() == after

    def step(self, operation: Create | Grant | Revoke | Batch | Resend) -> None:
        match operation:
            case Create(actor=actor):
                document = self.document(actor, operation)
                self.one(actor, document, self.model.create(actor, operation))
            case Grant(principal=principal, roles=roles):
                body = {"principal": self.personas[principal].principal, "roles": list(roles)}
                self.admin_one(principal, body, "grant", self.model.grant(operation))
            case Revoke(principal=principal):
                body = {"principal": self.personas[principal].principal}
                self.admin_one(principal, body, "revoke", self.model.revoke(principal))
            case Batch(actor=actor, items=items):
                self.batch(actor, items)
            case Resend(pick=pick):
                if self.accepted:
                    self.resend(self.accepted[pick % len(self.accepted)])

    def batch(self, actor: str, items: tuple[Create | None, ...]) -> None:
        other = next(p for p in PRINCIPALS if p != actor)
        documents, expected = [], []
        for item in items:
            if item is None:
                documents.append(self.document(other, Create(other, "m0", None, "ok", 0)))
                expected.append(ErrorCode.FORBIDDEN)  # the token is not the actor's
            else:
                documents.append(self.document(actor, item))
                expected.append(self.model.create(actor, item))
        before = self.head()
        answers = submit_batch(
            group_id=self.group, documents=documents, caller=self.personas[actor].caller
        )
        head = before
        for document, want, answer in zip(documents, expected, answers, strict=True):
            head = self.judge(document, want, answer, head)
        assert self.head() == head

    def resend(self, accepted: tuple[dict[str, Any], str, Outcome]) -> None:
        document, actor_principal, first = accepted
        name = actor_principal.split(":", 1)[1]
        before = self.head()
        again = submit_command(
            group_id=self.group, document=document, caller=self.personas[name].caller
        )
        assert again.replayed
        assert (again.status, again.body) == (first.status, first.body)
        assert self.head() == before

    def check(self) -> None:
        documents = assert_log_consistent(self.group)
        assert len(documents) == self.model.events
        refused = [command_id for _, command_id in self.refused_ids]
        assert not Event.objects.filter(group_id=self.group, command_id__in=refused).exists()
        assert not CommandRecord.objects.filter(
            group_id=self.group, command_id__in=refused
        ).exists()
        assert (
            CommandRecord.objects.filter(group_id=self.group).count()
            == len({d["command_id"] for d in documents}) + self.model.silent
        )


@pytest.fixture
def cast(db) -> tuple[str, HumanPersona, dict[str, AgentPersona | HumanPersona]]:
    org = factories.organization("org-prop")
    admin = factories.human("alice", staff=True)
    personas: dict[str, AgentPersona | HumanPersona] = {
        "a0": factories.agent("a0", org),
        "a1": factories.agent("a1", org),
        "olga": factories.human("olga"),
    }
    for persona in personas.values():
        if isinstance(persona, AgentPersona):
            persona.open_session()
    return org, admin, personas


@settings(
    max_examples=proofs.size(sample=200, full=500),
    deadline=None,
    database=None,
    phases=[Phase.explicit, Phase.generate, Phase.shrink],  # "explain" costs minutes
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(opening=st.lists(good_creates, min_size=1, max_size=6), operations=operations)
@pytest.mark.django_db
def test_live_projections_always_equal_a_replay_of_the_log(
    cast: tuple[str, HumanPersona, dict[str, AgentPersona | HumanPersona]],
    opening: list[Create],
    operations: list[Create | Grant | Revoke | Batch | Resend],
) -> None:
    """R16, wire§3, wire§6: for any mix of accepted and refused commands, refusals append
    nothing, the chain verifies, and a rebuild from the log equals the live projections."""
    org, admin, personas = cast
    group = factories.group(f"g-{uuid.uuid4().hex[:12]}", org)
    run = Run(group, admin, personas)
    # every run starts with two members who may create missions and a root mission m0; the
    # operations may then change their roles, revoke them or grant them again
    run.step(Grant("a0", ("coordinator",)))
    run.step(Grant("olga", ("mission_owner",)))
    run.step(Create("a0", "m0", None, "ok", 0))
    for operation in [*opening, *operations]:
        run.step(operation)
    run.check()
