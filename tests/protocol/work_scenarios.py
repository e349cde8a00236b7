"""A WorkItem brought to each state of the §10.2 table through real commands.

A *story* drives one WorkItem of one group through the decisions a coordinator, workers and
a mission owner really take. Every step is a command that is validated and decided — no
hand-written events — so the history it leaves is a valid log. A *driver* runs the commands:
:class:`PureDriver` decides them with :class:`tests.protocol.deciders.Scenario` (no
database); ``tests/work/test_state_table.py`` plugs in one that submits them through the real
write path. Both feed the same bookkeeping (owner, lease id, ownership epoch, offers, child
link), so a test can ask the story for "a valid body of command X in this state, issued by
someone whose roles allow it" without knowing how the state was reached.

The histories are chosen so that, wherever possible, a command reaches the state check
(``ILLEGAL_TRANSITION``) instead of an earlier refusal: ``queued`` is reached by a
checkpoint, so the owner keeps the item and its latest lease id; ``open`` is a re-opened item
(blocked, then unblocked to ``open``), so the worker's accepted offer still exists. The
``linked`` variant runs every history through a child mission linked to the item, so the
authority's ``link.*`` commands find their correlation id.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from missionweave.protocol import states as S
from missionweave.protocol.canonical import sha256_digest
from missionweave.protocol.commands import COMMANDS
from missionweave.protocol.examples import example_contract
from missionweave.protocol.facts import Decision
from missionweave.protocol.identifiers import AUTHORITY
from missionweave.protocol.missions.model import mission_key
from missionweave.protocol.timefmt import format_timestamp
from missionweave.protocol.work.items import work_item_key
from missionweave.protocol.work.proposals import proposal_key
from missionweave.protocol.work.schedule import disclosure_body

from .deciders import GROUP, NOW, Scenario

# --- who is who ------------------------------------------------------------------------------

COORDINATOR = "agent:w1"
WORKER = "agent:w2"
OTHER_WORKER = "agent:w3"
MISSION_OWNER = "user:olga"
SECOND_OWNER = "user:mona"
#: humans used by the pure tests only: a coordinator who is also a mission owner, and one who
#: is not
HUMAN_COORDINATOR_OWNER = "user:cora"
HUMAN_COORDINATOR = "user:cole"
#: reviewers: an agent, and a human who is also a mission owner (may accept human_review)
REVIEWER = "agent:r1"
HUMAN_REVIEWER = "user:rita"

#: each principal's roles in the group (the same as the personas of ``tests/factories.py``)
ROLES: dict[str, frozenset[str]] = {
    COORDINATOR: frozenset({"coordinator"}),
    WORKER: frozenset({"worker"}),
    OTHER_WORKER: frozenset({"worker"}),
    MISSION_OWNER: frozenset({"mission_owner"}),
    SECOND_OWNER: frozenset({"mission_owner"}),
    HUMAN_COORDINATOR_OWNER: frozenset({"coordinator", "mission_owner"}),
    HUMAN_COORDINATOR: frozenset({"coordinator"}),
    REVIEWER: frozenset({"reviewer"}),
    HUMAN_REVIEWER: frozenset({"reviewer", "mission_owner"}),
    AUTHORITY: frozenset(),
}
SESSION_EPOCH = 1

MISSION = "m-1"
ITEM = "wi-1"
PROPOSAL = "p-1"
#: far enough ahead that the start deadline is always "accepted + START_WINDOW"
DEADLINE = "2030-01-01T00:00:00Z"
OFFER_TTL = timedelta(hours=1)

#: every command of the table, in table order: the rows, then the in-state commands
TABLE_COMMANDS: tuple[str, ...] = tuple(
    dict.fromkeys([row.command for row in S.TRANSITIONS] + list(S.IN_STATE))
)
#: every state a story can reach: no WorkItem yet, an open proposal, then the §10.2 states
STORY_STATES: tuple[str, ...] = (S.NONE, S.PROPOSAL, *S.STATES)
#: the authority's link commands, which need a child mission linked to the item
LINK_COMMANDS = frozenset({"link.child_approved", "link.child_failed"})


def work_contract(**overrides: Any) -> dict[str, Any]:
    """The wire.md §10 contract (c1 deterministic, c2 human_review) with a far deadline."""
    return example_contract(**{"deadline": DEADLINE, **overrides})


def selection_basis(**overrides: Any) -> dict[str, Any]:
    """A structured selection basis with the six fields of R10.3-11."""
    return {
        "capability_match": [{"id": "text.summarise", "version": "1"}],
        "authorization_eligibility": {"role": "worker", "member": True},
        "availability_estimate": {"free_slots": 1},
        "expected_cost": {"money": 1.0, "tokens": 20000},
        "reliability_evidence": [{"capability": "text.summarise", "verified": 3, "failed": 0}],
        "policy_rules": ["exclusive_sequential"],
        **overrides,
    }


#: the bytes behind every digest the stories name, so a driver on the real write path can
#: store them first (a command names only stored artifacts, wire.md §9)
ARTIFACT_BYTES: dict[str, bytes] = {}


def artifact_digest(data: bytes) -> str:
    """The digest of ``data``, remembered in ``ARTIFACT_BYTES``."""
    digest = sha256_digest(data)
    ARTIFACT_BYTES[digest] = data
    return digest


def evidence(
    criterion: str,
    producer: str,
    *,
    verdict: str = "pass",
    method: str = "deterministic",
    **extra: Any,
) -> dict:
    """An evidence item (wire.md §9) for ``criterion``, judged by ``method`` (its
    criterion's, R13.2-04)."""
    return {
        "criterion": criterion,
        "method": method,
        "result": {"verdict": verdict, "summary": f"{criterion}: {verdict}", "data": {}},
        "producer": producer,
        "artifacts": [artifact_digest(criterion.encode())],
        **extra,
    }


def checkpoint(ref: str = "ckpt-1") -> dict[str, Any]:
    return {"ref": ref, "state_digest": sha256_digest(ref.encode()), "artifacts": []}


#: what the authority also issues after a submission commits, as member commands' decider
#: judges them (wire.md §6: its checks as ``evidence.record``, then ``review.request``)
AUTHORITY_FOLLOW_UPS = frozenset({"evidence.record", "review.request"})
#: the pseudo-step of a history: the authority records the checks it owes, all passing
CHECKS = "authority.checks"


def check_issuer(type_: str, actor: str) -> None:
    """The actor's roles may issue ``type_`` (wire.md §9): a story never relies on a command
    the write path would refuse before deciding."""
    spec = COMMANDS[type_]
    if actor == AUTHORITY and type_ in AUTHORITY_FOLLOW_UPS:
        return
    if spec.authority_only:
        assert actor == AUTHORITY, f"{type_} is issued by the authority, not {actor}"
        return
    assert spec.roles & ROLES[actor], f"{actor} may not issue {type_}"
    assert not spec.humans_only or actor.startswith("user:"), f"{type_} is for humans"


# --- drivers ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Call:
    """One command ready to run: its type, who issues it and a valid body."""

    type: str
    actor: str
    body: dict[str, Any]
    #: envelope extensions by URN (the offline binding of R11.5-07)
    extensions: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Ran:
    """An accepted command: status, the appended events (type, payload), the result."""

    status: int
    events: list[tuple[str, dict[str, Any]]]
    result: dict[str, Any]

    @property
    def types(self) -> list[str]:
        return [type_ for type_, _payload in self.events]


class Driver(Protocol):
    group: str

    def now(self) -> datetime: ...

    def run(self, call: Call) -> Ran: ...

    def work_item(self, item_id: str) -> dict[str, Any] | None: ...

    def proposal(self, proposal_id: str) -> dict[str, Any] | None: ...

    def mission(self, mission_id: str) -> dict[str, Any] | None: ...


@dataclass
class PureDriver:
    """Decides each command against a :class:`Scenario` and appends what it decided."""

    scenario: Scenario = field(default_factory=Scenario)
    at: datetime = NOW
    group: str = GROUP
    #: an agent's current session epoch when it is not ``SESSION_EPOCH`` (after reconnecting)
    sessions: dict[str, int] = field(default_factory=dict)

    def now(self) -> datetime:
        return self.at

    def decide(
        self, call: Call, *, at: datetime | None = None, command_id: str | None = None
    ) -> Decision:
        """The decision, without appending it (raises ``ProtocolError`` when refused);
        ``command_id``: the envelope's id (a message's id is its command's), else a fresh one."""
        check_issuer(call.type, call.actor)
        return self.scenario.when(
            call.type,
            call.body,
            actor=call.actor,
            roles=ROLES.get(call.actor, frozenset()),
            session_epoch=(
                self.sessions.get(call.actor, SESSION_EPOCH)
                if call.actor.startswith("agent:")
                else None
            ),
            now=at or self.at,
            extensions=call.extensions,
            command_id=command_id,
        )

    def run(self, call: Call, *, at: datetime | None = None) -> Ran:
        decision = self.decide(call, at=at)
        events = self.scenario.then(decision, actor=call.actor, at=at or self.at)
        return Ran(decision.status, events, decision.result)

    def work_item(self, item_id: str) -> dict[str, Any] | None:
        item = self.scenario.state.get(work_item_key(item_id))
        return item.as_dict() if item is not None else None

    def proposal(self, proposal_id: str) -> dict[str, Any] | None:
        proposal = self.scenario.state.get(proposal_key(proposal_id))
        return proposal.as_dict() if proposal is not None else None

    def mission(self, mission_id: str) -> dict[str, Any] | None:
        mission = self.scenario.state.get(mission_key(mission_id))
        return mission.as_dict() if mission is not None else None


# --- the story -------------------------------------------------------------------------------


@dataclass
class WorkStory:
    """One WorkItem and what its participants know about it (owner, lease id, offers...)."""

    driver: Driver
    item: str = ITEM
    mission: str = MISSION
    proposal: str = PROPOSAL
    contract: dict[str, Any] = field(default_factory=work_contract)
    depends_on: list[str] = field(default_factory=list)
    proposer: str = WORKER
    authorizer: str = COORDINATOR
    owner: str | None = None
    former_owners: list[str] = field(default_factory=list)
    epoch: int = 0
    lease_id: str | None = None
    revision: int = 1
    #: offer id → worker, in the order offered
    offers: dict[str, str] = field(default_factory=dict)
    correlation_id: str | None = None
    child_mission: str | None = None
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    # --- reading ---------------------------------------------------------------------------

    @property
    def state(self) -> str:
        """The item's state, ``proposal`` for an open proposal, ``none`` before either."""
        item = self.driver.work_item(self.item)
        if item is not None:
            return item["state"]
        proposal = self.driver.proposal(self.proposal)
        return S.PROPOSAL if proposal is not None and proposal["state"] == "open" else S.NONE

    def view(self) -> dict[str, Any] | None:
        return self.driver.work_item(self.item)

    @property
    def owner_actor(self) -> str:
        """Who sends an owner's command: the owner, else the last owner, else the worker."""
        if self.owner is not None:
            return self.owner
        return self.former_owners[-1] if self.former_owners else WORKER

    def offer_to(self, worker: str) -> str:
        """The latest offer made to ``worker`` (a made-up id if there is none)."""
        mine = [offer for offer, to in self.offers.items() if to == worker]
        return mine[-1] if mine else "o-none"

    def next_id(self, prefix: str) -> str:
        return f"{prefix}-{next(self._ids)}"

    def later(self, delta: timedelta) -> str:
        return format_timestamp(self.driver.now() + delta)

    # --- running ---------------------------------------------------------------------------

    def call(self, command: str, **options: Any) -> Call:
        """A valid ``command`` for this item now, from someone allowed to issue it."""
        return CALLS[command](self, **options)

    def run(self, call: Call) -> Ran:
        """Run ``call`` and keep the bookkeeping in step with what it appended."""
        ran = self.driver.run(call)
        for type_, payload in ran.events:
            self._track(type_, payload)
        return ran

    def do(self, command: str, **options: Any) -> Ran:
        return self.run(self.call(command, **options))

    def check(self, verdict: str = "pass", *, only: tuple[str, ...] | None = None) -> list[Ran]:
        """The authority records the checks it still owes the current submission (R13.2-03
        steps 1–2) — every one, or ``only`` those — each with ``verdict``."""
        review = (self.view() or {}).get("review") or {}
        owed = [c for c in review.get("pending_checks", []) if only is None or c in only]
        return [self.run(self.authority_check(criterion, verdict)) for criterion in owed]

    def authority_check(self, criterion: str, verdict: str = "pass") -> Call:
        """The authority's ``evidence.record`` of its check of ``criterion``."""
        review = (self.view() or {}).get("review") or {}
        body = {
            "work_item": self.item,
            "submission": review.get("submission"),
            **evidence(criterion, AUTHORITY, verdict=verdict),
            "artifacts": [],
        }
        return Call("evidence.record", AUTHORITY, body)

    def _fence(self) -> None:
        if self.owner is not None:
            if self.owner not in self.former_owners:
                self.former_owners.append(self.owner)
            self.owner = None

    def _track(self, type_: str, payload: dict[str, Any]) -> None:
        if payload.get("work_item") not in (None, self.item):
            return
        if type_ == "work.offered":
            self._fence()
            self.revision = payload["revision"]
            if "contract" in payload:
                self.contract = payload["contract"]
            self.offers.update({o["offer"]: o["worker"] for o in payload["offers"]})
        elif type_ == "work.offer_accepted":
            self.owner = payload["worker"]
            self.epoch = payload["ownership_epoch"]
        elif type_ == "work.started":
            self.lease_id = payload["lease"]["lease_id"]
        elif (type_ == "work.unblocked" and payload["to"] == S.OPEN) or (
            type_ == "work.reassigned"
        ):
            self._fence()
        elif type_ == "mission.child_created":
            self.correlation_id = payload["correlation_id"]
            self.child_mission = payload["child"]["mission"]


# --- a valid body per command ----------------------------------------------------------------


def _mission_create(story: WorkStory, **_: Any) -> Call:
    body = {"mission": story.mission, "goal": "Summarise November", "budgets": {"money": 5.0}}
    return Call("mission.create", MISSION_OWNER, body)


def _propose(story: WorkStory, **_: Any) -> Call:
    body = {"proposal": story.proposal, "title": "Summarise the incident reports"}
    return Call("work.propose", story.proposer, body)


def _authorize(story: WorkStory, *, depends_on: list[str] | None = None, **_: Any) -> Call:
    body: dict[str, Any] = {
        "work_item": story.item,
        "mission": story.mission,
        "contract": story.contract,
        "depends_on": list(story.depends_on if depends_on is None else depends_on),
    }
    if story.state == S.PROPOSAL:
        body["proposal"] = story.proposal
    return Call("work.authorize", story.authorizer, body)


def _message(
    story: WorkStory,
    *,
    actor: str = WORKER,
    essential: bool | None = None,
    in_reply_to: str | None = None,
    **_: Any,
) -> Call:
    body: dict[str, Any] = {"work_item": story.item, "text": "Which reports count as November?"}
    if essential is not None:
        body["essential"] = essential
    if in_reply_to is not None:
        body["in_reply_to"] = in_reply_to
    return Call("work.message", actor, body)


def _offer(
    story: WorkStory,
    *,
    workers: tuple[str, ...] = (WORKER,),
    mode: str = "sequential",
    contract: dict[str, Any] | None = None,
    ttl: timedelta = OFFER_TTL,
    **_: Any,
) -> Call:
    body: dict[str, Any] = {
        "work_item": story.item,
        "offers": [
            {"offer": story.next_id("o"), "worker": worker, "expires_at": story.later(ttl)}
            for worker in workers
        ],
        "mode": mode,
        "selection_basis": selection_basis(),
    }
    if contract is not None:
        body["contract"] = contract
    return Call("work.offer", COORDINATOR, body)


def _accept(story: WorkStory, *, worker: str = WORKER, offer: str | None = None, **_: Any) -> Call:
    body = {
        "work_item": story.item,
        "offer": offer or story.offer_to(worker),
        "contract_revision": story.revision,
    }
    return Call("work.accept_offer", worker, body)


def _reject(story: WorkStory, *, worker: str = WORKER, offer: str | None = None, **_: Any) -> Call:
    body = {
        "work_item": story.item,
        "offer": offer or story.offer_to(worker),
        "reason": "capacity",
        "detail": "both slots are busy until tomorrow",
    }
    return Call("work.reject_offer", worker, body)


def _grant(story: WorkStory, *, actor: str = MISSION_OWNER, **_: Any) -> Call:
    body = {"work_item": story.item, "contract_revision": story.revision, "comment": "go ahead"}
    return Call("approval.grant_execution", actor, body)


def _refuse(story: WorkStory, *, actor: str = MISSION_OWNER, **_: Any) -> Call:
    body = {
        "work_item": story.item,
        "contract_revision": story.revision,
        "comment": "the contract reads customer data it does not need",
    }
    return Call("approval.refuse_execution", actor, body)


def _start(story: WorkStory, **_: Any) -> Call:
    body = {"work_item": story.item, "ownership_epoch": story.epoch or 1}
    return Call("work.start", story.owner_actor, body)


def _owner_call(type_: str, fields: Callable[[WorkStory], dict[str, Any]]) -> Callable[..., Call]:
    """An owner's execution command: the current (or last) lease id, then its own fields."""

    def make(story: WorkStory, *, lease_id: str | None = None, **_: Any) -> Call:
        body = {
            "work_item": story.item,
            "lease_id": lease_id or story.lease_id or "lease-none",
            **fields(story),
        }
        return Call(type_, story.owner_actor, body)

    return make


def _progress_fields(story: WorkStory) -> dict[str, Any]:
    return {
        "phase": "reading reports",
        "milestones_completed": ["collected reports"],
        "next_checkpoint": "draft summary",
        "blockers": [],
        "estimate": {"finish_at": story.later(timedelta(hours=1)), "confidence": 0.6},
        "evidence_refs": [],
    }


def _disclose(story: WorkStory, **_: Any) -> Call:
    """The owner's schedule disclosure (R11.2-01), by ownership epoch: no lease needed."""
    now = story.driver.now()
    body = disclosure_body(
        work_item=story.item,
        ownership_epoch=story.epoch or 1,
        earliest_start=now,
        latest_start=now + timedelta(minutes=30),
        estimated_completion=now + timedelta(hours=2),
        confidence=0.8,
        capacity_state="busy",
        computed_at=now,
        compute_seconds=0.004,
    )
    return Call("work.disclose_schedule", story.owner_actor, body)


def _submit_fields(story: WorkStory) -> dict[str, Any]:
    return {
        "artifacts": [artifact_digest(b"summary.md")],
        "evidence": [
            evidence(criterion["id"], story.owner_actor, method=criterion["method"])
            for criterion in story.contract["acceptance_criteria"]
        ],
    }


def _reprioritize(
    story: WorkStory,
    *,
    actor: str = COORDINATOR,
    urgency: str | None = "critical",
    deadline: str | None = None,
    **_: Any,
) -> Call:
    """A priority change (R0-12): by default the urgency raised to critical."""
    body: dict[str, Any] = {"work_item": story.item, "reason": "the customer escalated"}
    if urgency is not None:
        body["urgency"] = urgency
    if deadline is not None:
        body["deadline"] = deadline
    return Call("work.reprioritize", actor, body)


def _unblock(story: WorkStory, *, to: str | None = None, **_: Any) -> Call:
    target = to or (S.QUEUED if story.owner is not None else S.OPEN)
    return Call("work.unblock", COORDINATOR, {"work_item": story.item, "to": target})


def _evidence_record(story: WorkStory, **_: Any) -> Call:
    return Call(
        "evidence.record", COORDINATOR, {"work_item": story.item, **evidence("c1", COORDINATOR)}
    )


def _accept_result(story: WorkStory, *, actor: str = MISSION_OWNER, **_: Any) -> Call:
    verdicts = [
        {"criterion": criterion["id"], "verdict": "pass", "note": "checked"}
        for criterion in story.contract["acceptance_criteria"]
    ]
    body = {"work_item": story.item, "review": {"verdicts": verdicts, "summary": "complete"}}
    return Call("work.accept_result", actor, body)


def _fail(story: WorkStory, **_: Any) -> Call:
    failure = evidence("c1", COORDINATOR, verdict="fail")
    return Call("work.fail", COORDINATOR, {"work_item": story.item, "evidence": [failure]})


#: the reassignment each state can be due for (R11.5-01)
_DUE_REASONS = {S.ACTIVE: "lease_expired", S.BLOCKED: "blocked_lease_expired"}


def _reassign(story: WorkStory, **_: Any) -> Call:
    body = {
        "work_item": story.item,
        "ownership_epoch": story.epoch or 1,
        "reason": _DUE_REASONS.get(story.state, "start_deadline_missed"),
    }
    return Call("work.reassign", AUTHORITY, body)


def _revoke(story: WorkStory, **_: Any) -> Call:
    body = {
        "work_item": story.item,
        "lease_id": story.lease_id or "lease-none",
        "session_epoch": SESSION_EPOCH + 1,
    }
    return Call("lease.revoke", AUTHORITY, body)


def _cancel(story: WorkStory, **_: Any) -> Call:
    body = {"work_item": story.item, "reason": "the mission changed course"}
    return Call("work.cancel", COORDINATOR, body)


def _create_child(story: WorkStory, *, failure_policy: str = "block_parent", **_: Any) -> Call:
    body = {
        "work_item": story.item,
        "child": {
            "mission": story.next_id(f"m-child-{story.item}"),
            "group": story.driver.group,
            "goal": "Collect the missing reports",
            "budgets": {"money": 1.0},
        },
        "failure_policy": failure_policy,
    }
    return Call("mission.create_child", COORDINATOR, body)


def _link_body(story: WorkStory) -> dict[str, Any]:
    return {
        "work_item": story.item,
        "correlation_id": story.correlation_id or "link:none",
        "child": {"group": story.driver.group, "mission": story.child_mission or "m-none"},
    }


def _link_approved(story: WorkStory, **_: Any) -> Call:
    approval = evidence("child_mission_approved", MISSION_OWNER) | {"method": "human_review"}
    return Call("link.child_approved", AUTHORITY, {**_link_body(story), "approval": approval})


def _link_failed(story: WorkStory, **_: Any) -> Call:
    body = {**_link_body(story), "outcome": "failed", "reason": "the child ran out of budget"}
    return Call("link.child_failed", AUTHORITY, body)


def _mission_end(type_: str) -> Callable[..., Call]:
    """``mission.fail``/``mission.cancel`` of the story's mission (or, ``child=True``, of the
    child mission linked to the item)."""

    def make(story: WorkStory, *, child: bool = False, **_: Any) -> Call:
        mission = story.child_mission if child else story.mission
        assert mission is not None, "no child mission to end"
        return Call(type_, COORDINATOR, {"mission": mission, "reason": "no longer needed"})

    return make


def _mission_approve(story: WorkStory, **_: Any) -> Call:
    assert story.child_mission is not None, "no child mission to approve"
    body = {"mission": story.child_mission, "comment": "the child's result is complete"}
    return Call("mission.approve", MISSION_OWNER, body)


#: a valid call per command, given the story: ``CALLS[type](story, **options)``
CALLS: dict[str, Callable[..., Call]] = {
    "mission.create": _mission_create,
    "work.propose": _propose,
    "work.authorize": _authorize,
    "work.message": _message,
    "work.offer": _offer,
    "work.accept_offer": _accept,
    "work.reject_offer": _reject,
    "approval.grant_execution": _grant,
    "approval.refuse_execution": _refuse,
    "work.start": _start,
    "lease.renew": _owner_call("lease.renew", lambda story: {}),
    "capability.issue": _owner_call("capability.issue", lambda story: {}),
    "work.progress": _owner_call("work.progress", _progress_fields),
    "work.usage": _owner_call("work.usage", lambda story: {"usage": {"tokens": 1200}}),
    "work.checkpoint": _owner_call("work.checkpoint", lambda story: {"checkpoint": checkpoint()}),
    "work.block": _owner_call(
        "work.block",
        lambda story: {"required_resolution": "access to archive", "checkpoint": checkpoint()},
    ),
    "work.submit": _owner_call("work.submit", _submit_fields),
    "work.disclose_schedule": _disclose,
    "work.unblock": _unblock,
    "work.reprioritize": _reprioritize,
    "evidence.record": _evidence_record,
    "work.accept_result": _accept_result,
    "work.fail": _fail,
    "work.cancel": _cancel,
    "mission.create_child": _create_child,
    "mission.approve": _mission_approve,
    "mission.fail": _mission_end("mission.fail"),
    "mission.cancel": _mission_end("mission.cancel"),
    "link.child_approved": _link_approved,
    "link.child_failed": _link_failed,
    "work.reassign": _reassign,
    "lease.revoke": _revoke,
}

# --- the histories ---------------------------------------------------------------------------

Step = tuple[str, dict[str, Any]]


def _steps(*commands: str | Step) -> list[Step]:
    return [(c, {}) if isinstance(c, str) else c for c in commands]


_TO_PROPOSAL = _steps("mission.create", "work.propose")
_URGENT = ("work.offer", {"workers": (WORKER, OTHER_WORKER), "mode": "urgent"})
#: from an ``open`` item: the rest of the way to each state
_TAILS: dict[str, list[Step]] = {
    S.OFFERED: _steps(_URGENT),
    S.ACTIVE: _steps(_URGENT, "work.accept_offer", "work.start"),
}
_TAILS |= {
    S.QUEUED: [*_TAILS[S.ACTIVE], *_steps("work.checkpoint")],
    S.BLOCKED: [*_TAILS[S.ACTIVE], *_steps("work.block")],
    # submitted, and checked by the authority (R13.2-03 steps 1–2), as a reviewer finds it
    S.SUBMITTED: [*_TAILS[S.ACTIVE], *_steps("work.submit", CHECKS)],
    S.FAILED: [*_TAILS[S.ACTIVE], *_steps("work.fail")],
    S.CANCELLED: [*_TAILS[S.ACTIVE], *_steps("work.cancel")],
    S.OPEN: [*_TAILS[S.ACTIVE], *_steps("work.block", ("work.unblock", {"to": S.OPEN}))],
}
_TAILS[S.VERIFIED] = [*_TAILS[S.SUBMITTED], *_steps("work.accept_result")]

#: the child mission of the ``linked`` histories: created while active, then failed under
#: ``block_parent`` and the item unblocked to ``open`` (so its link stays on record)
_LINKED_OPEN = _steps(
    "work.authorize",
    "work.offer",
    "work.accept_offer",
    "work.start",
    ("mission.create_child", {"failure_policy": "block_parent"}),
    ("mission.fail", {"child": True}),
    ("work.unblock", {"to": S.OPEN}),
)
_LINKED_BLOCKED = [
    *_LINKED_OPEN[:4],
    ("mission.create_child", {"failure_policy": "fail_parent"}),
]


def path_to(state: str, *, linked: bool = False) -> list[Step]:
    """The commands that bring a new WorkItem to ``state`` (see the module docstring)."""
    if state == S.NONE:
        return _TO_PROPOSAL[:1]
    if state == S.PROPOSAL:
        return list(_TO_PROPOSAL)
    if not linked:
        return [*_TO_PROPOSAL, *_steps("work.authorize"), *_TAILS[state]]
    if state == S.BLOCKED:
        return [*_TO_PROPOSAL, *_LINKED_BLOCKED]
    if state == S.OPEN:
        return [*_TO_PROPOSAL, *_LINKED_OPEN]
    return [*_TO_PROPOSAL, *_LINKED_OPEN, *_TAILS[state]]


def story_in(
    state: str,
    driver: Driver | None = None,
    *,
    linked: bool = False,
    checked: bool = True,
    **story: Any,
) -> WorkStory:
    """A WorkItem in ``state``, reached by deciding (or submitting) real commands.

    Several stories may share one driver (give each its own ``item`` and ``proposal``): the
    mission is created by the first of them only. A submission is checked by the authority
    on the way (R13.2-03 steps 1–2), unless ``checked`` is false: then the checks are owed.
    """
    told = WorkStory(driver or PureDriver(), **story)
    for command, options in path_to(state, linked=linked):
        if command == "mission.create" and told.driver.mission(told.mission) is not None:
            continue
        if command == CHECKS:
            if checked:
                told.check()
            continue
        told.do(command, **options)
    assert told.state == state, f"the history to {state} ended in {told.state}"
    return told
