"""Realistic group logs for the worker's tests.

Every event is decided by the pure protocol core from a real command (the stories of
``tests/protocol/work_scenarios``: a coordinator offering, workers accepting, rejecting,
starting, checkpointing, blocking, submitting and failing, mission owners granting and refusing
execution, the authority reassigning and revoking leases, an admin granting and revoking
memberships), then written as the wire.md §6 document the authority serves, with its hash
chain (``protocol.events.event_hash``). ``ME`` is the worker whose queues are under test;
``OTHER_WORKER`` competes with it for the same items.
"""

from __future__ import annotations

import contextlib
import copy
import json
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from missionweave.protocol import states as S
from missionweave.protocol.canonical import ZERO_HASH
from missionweave.protocol.errors import ProtocolError
from missionweave.protocol.events import event_hash
from missionweave.protocol.memberships import GRANT, REVOKE, owned_items_key
from missionweave.protocol.timefmt import format_timestamp
from missionweave.protocol.work.items import work_item_key
from tests.protocol.deciders import NOW, Scenario
from tests.protocol.work_scenarios import (
    COORDINATOR,
    OTHER_WORKER,
    SECOND_OWNER,
    WORKER,
    Call,
    PureDriver,
    WorkStory,
    evidence,
    work_contract,
)

ME = WORKER
ADMIN = "user:admin"
GROUPS = ("g-alpha", "g-beta", "g-gamma")


@dataclass
class RecordingScenario(Scenario):
    """A ``Scenario`` that also keeps what the ledger would append: (type, payload, actor,
    recorded_at, command id), one command id per decision."""

    log: list[tuple[str, dict[str, Any], str, str, str]] = field(default_factory=list)
    commands: int = 0

    def given(
        self, *events: tuple[str, dict[str, Any]], actor: str = "user:alice", at: datetime = NOW
    ) -> Scenario:
        self.commands += 1
        for type_, payload in events:
            entry = (type_, copy.deepcopy(payload), actor, format_timestamp(at))
            self.log.append((*entry, f"cmd-{self.commands}"))
        return super().given(*events, actor=actor, at=at)


def documents(group: str, log: list[tuple[str, dict[str, Any], str, str, str]]) -> list[dict]:
    """The wire.md §6 documents of ``log``: sequences from 1, ``prev_hash`` chained, ``hash``
    the digest of the rest — as JSON, exactly what a client parses."""
    events, previous = [], ZERO_HASH
    for sequence, (type_, payload, actor, recorded_at, command_id) in enumerate(log, 1):
        event: dict[str, Any] = {
            "event_id": f"ev-{group}-{sequence:05d}",
            "group": group,
            "sequence": sequence,
            "type": type_,
            "command_id": f"{group}-{command_id}",
            "actor": actor,
            "recorded_at": recorded_at,
            "payload": payload,
            "prev_hash": previous,
        }
        event = json.loads(json.dumps(event))
        event["hash"] = previous = event_hash(event)
        events.append(event)
    return events


# --- a random walk of real commands ----------------------------------------------------------

Move = tuple[str, dict[str, Any]]
_TALK: tuple[Move, ...] = (
    ("work.message", {"actor": COORDINATOR, "essential": False}),
    ("work.message", {"actor": ME}),
)
#: what the participants try next, by the item's state (weighted by repetition); anything
#: refused appends nothing, as on the real write path
MOVES: dict[str, tuple[Move, ...]] = {
    S.OPEN: (
        ("work.offer", {"workers": (ME,)}),
        ("work.offer", {"workers": (ME,)}),
        ("work.offer", {"workers": (ME, OTHER_WORKER), "mode": "urgent"}),
        ("work.offer", {"workers": (OTHER_WORKER, ME)}),
        ("work.offer", {"workers": (OTHER_WORKER,)}),
    ),
    S.OFFERED: (
        ("work.accept_offer", {"worker": ME}),
        ("work.accept_offer", {"worker": ME}),
        ("work.accept_offer", {"worker": ME}),
        ("work.accept_offer", {"worker": OTHER_WORKER}),
        ("work.reject_offer", {"worker": ME}),
        ("work.reject_offer", {"worker": OTHER_WORKER}),
        ("corrected.offer", {}),
        ("work.offer", {"workers": (OTHER_WORKER, ME)}),
        *_TALK,
    ),
    S.QUEUED: (
        ("approval.grant_execution", {}),
        ("approval.grant_execution", {}),
        ("approval.grant_execution", {"actor": SECOND_OWNER}),
        ("work.start", {}),
        ("work.start", {}),
        ("work.start", {}),
        ("work.start", {}),
        ("work.reassign", {}),
        ("work.offer", {"workers": (ME,)}),
        *_TALK,
    ),
    S.ACTIVE: (
        ("lease.renew", {}),
        ("work.progress", {}),
        ("work.usage", {}),
        ("work.checkpoint", {}),
        ("work.checkpoint", {}),
        ("work.checkpoint", {}),
        ("work.block", {}),
        ("work.submit", {}),
        ("work.submit", {}),
        ("owner.fail", {}),
        ("work.reassign", {}),
        ("lease.revoke", {}),
        ("mission.create_child", {"failure_policy": "block_parent"}),
        *_TALK,
    ),
    S.BLOCKED: (
        ("work.unblock", {"to": S.QUEUED}),
        ("work.unblock", {"to": S.QUEUED}),
        ("work.unblock", {"to": S.OPEN}),
        ("link.child_failed", {}),
        ("work.reassign", {}),
    ),
    S.SUBMITTED: (("work.accept_result", {}), ("work.fail", {}), ("work.cancel", {})),
    S.FAILED: (("work.offer", {"workers": (ME,)}), ("work.offer", {"workers": (OTHER_WORKER,)})),
}
#: now and then, whatever the item's state
RARE: tuple[Move, ...] = (
    ("work.cancel", {}),
    ("approval.refuse_execution", {}),
    ("membership.revoke", {}),
    ("membership.grant", {}),
    ("work.message", {"actor": COORDINATOR}),
    ("work.reprioritize", {"urgency": "critical"}),
    ("work.reprioritize", {"urgency": "low", "deadline": "2029-06-01T00:00:00Z"}),
)


def _contract(rng: random.Random) -> dict[str, Any]:
    """Contracts that differ in what the scheduler reads: urgency, impact, the approval gate
    and a declared compute estimate."""
    overrides: dict[str, Any] = {
        "urgency": rng.choice(("low", "normal", "high", "critical")),
        "business_impact": rng.choice(("low", "medium", "high")),
    }
    if rng.random() < 0.25:
        overrides["risk"] = {
            "class": "high",
            "requires_execution_approval": True,
            "approvals_required": rng.choice((1, 2)),
        }
    if rng.random() < 0.5:
        overrides["resources"] = {"max_concurrency": 1, "estimated_compute_s": 90}
    return work_contract(**overrides)


@dataclass
class GroupWalk:
    """One group's participants doing real work on ``items`` WorkItems of one mission."""

    rng: random.Random
    items: int = 5
    driver: PureDriver = field(default_factory=lambda: PureDriver(scenario=RecordingScenario()))
    stories: list[WorkStory] = field(default_factory=list)
    authorized: int = 0

    @property
    def scenario(self) -> RecordingScenario:
        assert isinstance(self.driver.scenario, RecordingScenario)
        return self.driver.scenario

    def start(self) -> None:
        self.admin(GRANT, {"principal": OTHER_WORKER, "roles": ["worker"]})
        self.admin(GRANT, {"principal": ME, "roles": ["worker"]})
        for _ in range(self.items):
            self.stories.append(self.new_story())

    def new_story(self, contract: dict[str, Any] | None = None) -> WorkStory:
        """A new WorkItem authorized in the group's mission (``contract`` or a random one)."""
        number = self.authorized = self.authorized + 1
        story = WorkStory(
            self.driver,
            item=f"wi-{number}",
            proposal=f"p-{number}",
            contract=contract or _contract(self.rng),
        )
        if number == 1:
            story.do("mission.create")
        story.do("work.authorize")
        return story

    def admin(self, type_: str, body: dict[str, Any]) -> None:
        """A membership change by an admin (staff-only: no group role issues it)."""
        scenario = self.scenario
        if type_ == REVOKE:
            scenario.outside[owned_items_key(body["principal"])] = tuple(
                story.item
                for story in self.stories
                if (item := scenario.state.get(work_item_key(story.item))) is not None
                and item.owner == body["principal"]
            )
        decision = scenario.when(type_, body, actor=ADMIN, now=self.driver.at)
        events = scenario.then(decision, actor=ADMIN, at=self.driver.at)
        for story in self.stories:  # the fenced items' bookkeeping (owner, offers)
            for event_type, payload in events:
                story._track(event_type, payload)

    def step(self) -> None:
        self.driver.at += timedelta(seconds=self.rng.randint(1, 20))
        if self.rng.random() < 0.03:  # long enough for a lease or a start deadline to pass
            self.driver.at += timedelta(minutes=11)
        index = self.rng.randrange(len(self.stories))
        story = self.stories[index]
        state = story.state
        if state in S.TERMINAL:  # done with: the coordinator authorizes new work
            self.stories[index] = story = self.new_story()
            state = story.state
        moves = RARE if self.rng.random() < 0.05 else MOVES[state]
        command, options = self.rng.choice(moves)
        with contextlib.suppress(ProtocolError):  # refused: nothing appended, as for real
            self._do(story, command, options)

    def _do(self, story: WorkStory, command: str, options: dict[str, Any]) -> None:
        if command == "membership.revoke":
            self.admin(REVOKE, {"principal": ME})
        elif command == "membership.grant":
            roles = self.rng.choice((["worker"], ["reviewer", "worker"]))
            self.admin(GRANT, {"principal": ME, "roles": roles})
        elif command == "owner.fail":  # the owner's failure: retried while the contract allows
            owner = story.owner_actor
            body = {
                "work_item": story.item,
                "lease_id": story.lease_id or "lease-none",
                "evidence": [evidence("c1", owner, verdict="fail")],
            }
            story.run(Call("work.fail", owner, body))
        elif command == "corrected.offer":  # R10.1-05: a new revision, offered to me
            contract = _contract(self.rng)
            story.do("work.offer", workers=(ME,), contract=contract)
        else:
            story.do(command, **options)


def group_log(group: str, rng: random.Random, *, steps: int = 220, items: int = 5) -> list[dict]:
    walk = GroupWalk(rng, items=items)
    walk.start()
    for _ in range(steps):
        walk.step()
    return documents(group, walk.scenario.log)


def logs(seed: int, *, groups: tuple[str, ...] = GROUPS, steps: int = 220) -> dict[str, list]:
    rng = random.Random(seed)
    return {group: group_log(group, rng, steps=steps) for group in groups}
