"""The demo's story: WorkItems that move through the §10.2 lifecycle while someone watches.

``seed_work`` leaves one WorkItem in each place worth showing: verified after a human review,
active in a worker's hands, queued behind an execution approval that the human admin gives
from the dashboard, waiting on a dependency, blocked by a child mission. ``tick`` is one beat
of the live loop: a small state machine over the projections — for each WorkItem, "in state
X, do the next step" — played by the coordinator and the two workers with signed commands
through the one write path. Nothing here decides what is allowed: a refusal is the write
path's answer, reported, and the loop goes on.

Restarts: seed commands have fixed ids, so a second run replays them from the idempotency
records; their times come from the first seeding (kept in the first WorkItem's contract), so
their bodies, and with them the content digests, never change. Live commands take fresh ids
and read what they need from the projections, so a new run carries on where the last one
stopped.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from apps.ledger.write_path import Outcome
from apps.work.models import Mission, WorkItem
from missionweave.protocol import states as S
from missionweave.protocol.canonical import sha256_digest
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.examples import example_contract
from missionweave.protocol.timefmt import format_timestamp, parse_timestamp
from missionweave.protocol.work.checks import approvals_required
from missionweave.protocol.work.items import Offer
from missionweave.protocol.work.items import WorkItem as WorkItemState

from .cast import GROUP, DemoWorld, mission_body, submit_as_admin, submit_as_agent

#: seed times: offers and deadlines this far after the first seeding
SEED_HORIZON = timedelta(days=30)
#: a live contract's deadline
LIVE_HORIZON = timedelta(days=7)
OFFER_TTL = timedelta(minutes=2)
#: the owner renews its lease when less than this is left (LEASE_TTL is 5 min)
RENEW_BEFORE = timedelta(minutes=2)
#: a failed WorkItem is offered again until it has been started this many times
MAX_ATTEMPTS = 3
#: a new mission arrives when fewer WorkItems than this can move
MOVING_TARGET = 3
#: how many of the newest live missions the coordinator looks at for planning
PLANNED_AT_ONCE = 5
# the dice: how often work is urgent, an offer is turned down, a worker checkpoints or fails
URGENT_SHARE = 0.3
REJECT_RATE = 0.15
CHECKPOINT_RATE = 0.35
FAIL_RATE = 0.1

LIVE_PREFIX = "m-"
LIVE_GOALS = (
    "Triage the new support tickets",
    "Draft release notes for the next version",
    "Check the nightly benchmark results for regressions",
    "Summarise this week's customer interviews",
    "Review the open pull requests for security issues",
    "Collect the citations for the research memo",
    "Plan the data migration of the archive",
)
#: each live mission's plan: (suffix, goal); each WorkItem depends on the one before
LIVE_PLAN = (("gather", "Gather the sources: {goal}"), ("write", "Write it up: {goal}"))

# the seed WorkItems (their missions are demo.SEED_MISSIONS)
SUMMARY = "demo-wi-incident-summary"  # verified
TRANSLATE = "demo-wi-onboarding-fr"  # active
PROOFREAD = "demo-wi-onboarding-review"  # open, depends on TRANSLATE
COLLECT = "demo-wi-pricing-collect"  # queued, waiting for the admin's execution approval
TERMS = "demo-wi-pricing-terms"  # blocked by its child mission CHILD_MISSION
CHILD_MISSION = "demo-m-pricing-terms"
CHILD_ITEM = "demo-wi-terms-read"  # open, in the child mission


# --- command bodies (the seed and the live loop build the same ones) ----------------------


def contract(
    goal: str,
    deadline: str,
    *,
    urgency: str = "normal",
    human_review: bool = False,
    approval: bool = False,
) -> dict[str, Any]:
    """A Work Contract (wire.md §10). Without ``human_review`` the coordinator may accept the
    result itself; with ``approval`` a human mission_owner must approve execution first."""
    review = (
        ("human_review", "Accurate and neutral")
        if human_review
        else ("agent_review", "Consistent with the sources")
    )
    return example_contract(
        goal=goal,
        deadline=deadline,
        urgency=urgency,
        inputs=[{"ref": sha256_digest(goal.encode())}],
        acceptance_criteria=[
            {
                "id": "c1",
                "description": "Covers every source",
                "method": "deterministic",
                "evidence": ["test_result"],
            },
            {"id": "c2", "description": review[1], "method": review[0], "evidence": ["review"]},
        ],
        risk={
            "class": "medium" if approval else "low",
            "requires_execution_approval": approval,
            "approvals_required": 1,
        },
    )


def authorize_body(
    work_item: str, mission: str, contract_: dict[str, Any], depends_on: Sequence[str] = ()
) -> dict[str, Any]:
    return {
        "work_item": work_item,
        "mission": mission,
        "contract": contract_,
        "depends_on": list(depends_on),
    }


def offer_body(
    work_item: str, workers: Sequence[str], *, mode: str, expires_at: str, first: int = 1
) -> dict[str, Any]:
    """Offers numbered from ``first``; the selection basis is structured, never prose
    reasoning (R10.3-11, R10.3-12)."""
    rule = "urgent work goes to every worker at once" if mode == "urgent" else "one at a time"
    return {
        "work_item": work_item,
        "offers": [
            {"offer": f"{work_item}-o{first + n}", "worker": worker, "expires_at": expires_at}
            for n, worker in enumerate(workers)
        ],
        "mode": mode,
        "selection_basis": {
            "capability_match": "text.summarise v1",
            "authorization_eligibility": "worker in g-demo",
            "availability_estimate": "idle",
            "expected_cost": {"money": 0.5, "tokens": 20000},
            "reliability_evidence": "demo workers",
            "policy_rules": [rule],
        },
    }


def progress_body(work_item: str, lease_id: str, finish_at: str) -> dict[str, Any]:
    return {
        "work_item": work_item,
        "lease_id": lease_id,
        "phase": "drafting",
        "milestones_completed": ["sources read"],
        "next_checkpoint": "first draft",
        "blockers": [],
        "estimate": {"finish_at": finish_at, "confidence": 0.7},
        "evidence_refs": [],
    }


def usage_body(work_item: str, lease_id: str) -> dict[str, Any]:
    return {
        "work_item": work_item,
        "lease_id": lease_id,
        "usage": {"tokens": 12000, "money": 0.08, "tool_calls": 4},
    }


def artifact(work_item: str, attempt: int) -> str:
    return sha256_digest(f"{work_item} attempt {attempt}".encode())


def evidence(
    contract_: dict[str, Any], producer: str, artifact_: str, *, verdict: str = "pass"
) -> list[dict[str, Any]]:
    """Evidence for every acceptance criterion (R13.2-02); an agent checks, it does not give
    a human review, so its method is ``agent_review`` where the criterion asks for more."""
    return [
        {
            "criterion": criterion["id"],
            "method": "deterministic" if criterion["method"] == "deterministic" else "agent_review",
            "result": {
                "verdict": verdict,
                "summary": f"{criterion['description']}: {verdict}",
                "data": {},
            },
            "producer": producer,
            "artifacts": [artifact_],
        }
        for criterion in contract_["acceptance_criteria"]
    ]


def review_body(work_item: str, contract_: dict[str, Any]) -> dict[str, Any]:
    return {
        "work_item": work_item,
        "review": {
            "verdicts": [
                {"criterion": c["id"], "verdict": "pass", "note": ""}
                for c in contract_["acceptance_criteria"]
            ],
            "summary": "Every criterion is met.",
        },
    }


def review_evidence(work_item: str, contract_: dict[str, Any], producer: str) -> dict[str, Any]:
    """A reviewer's own evidence on the last criterion (``evidence.record``)."""
    criterion = contract_["acceptance_criteria"][-1]
    return {
        "work_item": work_item,
        "criterion": criterion["id"],
        "method": criterion["method"],
        "result": {"verdict": "pass", "summary": "Read it through; reads well.", "data": {}},
        "producer": producer,
        "artifacts": [],
    }


def submit_as(
    world: DemoWorld, actor: str, type_: str, body: dict[str, Any], command_id: str
) -> Outcome:
    """``actor`` (a demo agent or the admin) submits one command through the write path."""
    agent = world.agent(actor)
    if agent is not None:
        return submit_as_agent(agent, type_, body, command_id=command_id)
    return submit_as_admin(world.admin_username, type_, body, command_id=command_id)


# --- seeding ------------------------------------------------------------------------------


def _seed_deadline() -> str:
    """The seed's one time: read back from the first seeded WorkItem, so bodies stay equal."""
    row = WorkItem.objects.filter(group_id=GROUP, work_item_id=SUMMARY).first()
    if row is not None:
        return row.data["contract"]["deadline"]
    return format_timestamp(timezone.now().replace(microsecond=0) + SEED_HORIZON)


def seed_work(world: DemoWorld) -> None:
    """Put the seed WorkItems in their places; on later runs every command is a replay."""
    deadline = _seed_deadline()
    coordinator, admin = world.coordinator.principal, world.admin_principal
    worker1, worker2 = (worker.principal for worker in world.workers)

    def step(actor: str, item: str, name: str, type_: str, body: dict[str, Any]) -> Outcome:
        return submit_as(world, actor, type_, body, f"seed-{item}-{name}")

    def authorize(item: str, mission: str, goal: str, *deps: str, **terms: Any) -> dict[str, Any]:
        contract_ = contract(goal, deadline, **terms)
        body = authorize_body(item, mission, contract_, deps)
        step(coordinator, item, "authorize", "work.authorize", body)
        return contract_

    def offer_to(item: str, mode: str, *workers: str) -> None:
        body = offer_body(item, workers, mode=mode, expires_at=deadline)
        step(coordinator, item, "offer", "work.offer", body)
        body = {"work_item": item, "offer": f"{item}-o1", "contract_revision": 1}
        step(workers[0], item, "accept", "work.accept_offer", body)  # the first one takes it

    def start(worker: str, item: str) -> str:
        body = {"work_item": item, "ownership_epoch": 1}
        lease = step(worker, item, "start", "work.start", body).body["result"]["lease"]["lease_id"]
        step(worker, item, "progress", "work.progress", progress_body(item, lease, deadline))
        return lease

    # verified: urgent to both workers, worker 1 wins, the human admin reviews (human_review)
    summary = authorize(
        SUMMARY,
        "demo-m-incidents",
        "Summarise the incident reports of November",
        urgency="high",
        human_review=True,
    )
    offer_to(SUMMARY, "urgent", worker1, worker2)
    lease = start(worker1, SUMMARY)
    step(worker1, SUMMARY, "usage", "work.usage", usage_body(SUMMARY, lease))
    produced = artifact(SUMMARY, 1)
    submitted = {
        "work_item": SUMMARY,
        "lease_id": lease,
        "artifacts": [produced],
        "evidence": evidence(summary, worker1, produced),
    }
    step(worker1, SUMMARY, "submit", "work.submit", submitted)
    step(admin, SUMMARY, "evidence", "evidence.record", review_evidence(SUMMARY, summary, admin))
    step(admin, SUMMARY, "accept-result", "work.accept_result", review_body(SUMMARY, summary))

    # active: offered to worker 2, then worker 1 in turn; worker 2 takes it and reports progress
    authorize(TRANSLATE, "demo-m-onboarding", "Translate the onboarding guide into French")
    offer_to(TRANSLATE, "sequential", worker2, worker1)
    start(worker2, TRANSLATE)

    # open: waits until the translation is verified (R10.4-03)
    authorize(PROOFREAD, "demo-m-onboarding", "Proofread the French guide", TRANSLATE)

    # queued behind an execution approval: the coordinator asked, so the admin may approve
    authorize(COLLECT, "demo-m-pricing", "Collect the competitors' pricing pages", approval=True)
    offer_to(COLLECT, "sequential", worker1)

    # blocked while a child mission in this group runs; the child has work of its own
    authorize(TERMS, "demo-m-pricing", "Compare the competitors' terms of service")
    child = {
        "mission": CHILD_MISSION,
        "group": GROUP,
        "goal": "Read the competitors' terms",
        "budgets": {"money": 2.0, "tokens": 100000},
    }
    body = {"work_item": TERMS, "child": child, "failure_policy": "block_parent"}
    step(coordinator, TERMS, "child", "mission.create_child", body)
    authorize(CHILD_ITEM, CHILD_MISSION, "Read the terms of service of the three competitors")


# --- the live loop ------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One command the loop will send; ``expect`` names a refusal that is part of the story."""

    actor: str
    type: str
    body: dict[str, Any]
    expect: ErrorCode | None = None


@dataclass(frozen=True)
class Scene:
    """What one tick sees: the cast, the dice, the time, every WorkItem's state, and whether
    a WorkItem already waits for a person's execution approval."""

    world: DemoWorld
    rng: random.Random
    now: datetime
    states: dict[str, str]
    awaiting_approval: bool

    @property
    def coordinator(self) -> str:
        return self.world.coordinator.principal

    @property
    def workers(self) -> list[str]:
        return [worker.principal for worker in self.world.workers]

    def later(self, delta: timedelta) -> str:
        return format_timestamp(self.now + delta)


def tick(world: DemoWorld, rng: random.Random) -> list[str]:
    """One beat: every WorkItem that can move takes its next step; a mission arrives when
    too few can. Returns a line per command; a refused command is a line too, never raised."""
    rows = WorkItem.objects.filter(group_id=GROUP).order_by("id")
    items = [row.to_state() for row in rows.exclude(state__in=S.TERMINAL)]
    states = dict(rows.values_list("work_item_id", "state"))
    awaiting = any(
        item.state in S.UNFINISHED and len(item.approvals) < approvals_required(item)
        for item in items
    )
    scene = Scene(world, rng, timezone.now(), states, awaiting)
    steps: list[Step] = []
    moving = 0
    for item in items:
        next_steps = NEXT[item.state](scene, item) if item.state in NEXT else []
        moving += bool(next_steps)
        steps += next_steps
    steps += plan_missions(scene, moving)
    return [run(world, step) for step in steps]


def run(world: DemoWorld, step: Step) -> str:
    target = step.body.get("work_item") or step.body.get("mission", "")
    try:
        outcome = submit_as(world, step.actor, step.type, step.body, f"live-{uuid.uuid4().hex}")
    except ProtocolError as refusal:
        if refusal.code == step.expect:
            return f"  live: {step.actor} {step.type} {target}: too late ({refusal.code.value})"
        return f"  refused: {step.actor} {step.type} {target}: {refusal.code.value} {refusal}"
    events = ", ".join(event["type"] for event in outcome.body["events"])
    return f"  live: {step.actor} {step.type} {target} -> {events}"


def plan_missions(scene: Scene, moving: int) -> list[Step]:
    """The coordinator plans each new live mission; a new one arrives when work runs low."""
    recent = Mission.objects.filter(group_id=GROUP, mission_id__startswith=LIVE_PREFIX)
    recent = recent.order_by("-created_sequence").values_list("mission_id", "goal", "work_items")
    steps: list[Step] = []
    gate = not scene.awaiting_approval  # keep one WorkItem in the dashboard's approval queue
    for mission, goal, items in recent[:PLANNED_AT_ONCE]:
        if not items:
            steps += authorize_plan(scene, mission, goal, gate=gate)
            gate = False
    if steps or moving >= MOVING_TARGET:
        return steps
    count = Mission.objects.filter(group_id=GROUP, mission_id__startswith=LIVE_PREFIX).count()
    goal = f"{LIVE_GOALS[count % len(LIVE_GOALS)]} (#{count + 1})"
    mission = f"{LIVE_PREFIX}{uuid.uuid4().hex[:12]}"
    return [Step(scene.coordinator, "mission.create", mission_body(mission, goal))]


def authorize_plan(scene: Scene, mission: str, goal: str, *, gate: bool) -> list[Step]:
    """The mission's WorkItems, each depending on the one before; with ``gate`` the first
    asks a human mission_owner for execution approval (R10.2-06)."""
    steps: list[Step] = []
    before: list[str] = []
    for suffix, item_goal in LIVE_PLAN:
        urgency = "high" if scene.rng.random() < URGENT_SHARE else "normal"
        contract_ = contract(
            item_goal.format(goal=goal),
            scene.later(LIVE_HORIZON),
            urgency=urgency,
            approval=gate and not before,
        )
        item = f"{mission}-{suffix}"
        steps.append(
            Step(
                scene.coordinator,
                "work.authorize",
                authorize_body(item, mission, contract_, before),
            )
        )
        before = [item]
    return steps


# each state's next step; a state that waits for a person (or a child mission) has none


def offer(scene: Scene, item: WorkItemState) -> list[Step]:
    """Urgent work to every worker at once (R10.3-05), other work one worker at a time."""
    urgent = item.contract.get("urgency") in ("high", "critical")
    workers = scene.rng.sample(scene.workers, len(scene.workers))
    body = offer_body(
        item.id,
        workers,
        mode="urgent" if urgent else "sequential",
        expires_at=scene.later(OFFER_TTL),
        first=len(item.offers) + 1,
    )
    return [Step(scene.coordinator, "work.offer", body)]


def on_open(scene: Scene, item: WorkItemState) -> list[Step]:
    return offer(scene, item) if dependencies_met(scene, item) else []


def on_offered(scene: Scene, item: WorkItemState) -> list[Step]:
    live = live_offers(item, scene.now)
    if not live:  # every offer was turned down or ran out: offer it again
        return offer(scene, item)

    def accept(o: Offer) -> dict[str, Any]:
        return {"work_item": item.id, "offer": o.offer, "contract_revision": item.revision}

    if live[0].mode == "urgent":  # every worker tries; the first wins, the others are too late
        racers = scene.rng.sample(live, len(live))
        return [
            Step(o.worker, "work.accept_offer", accept(o), ErrorCode.OFFER_WITHDRAWN)
            for o in racers
        ]
    first = live[0]
    if scene.rng.random() < REJECT_RATE:
        body = {
            "work_item": item.id,
            "offer": first.offer,
            "reason": "capacity",
            "detail": "busy with another WorkItem",
        }
        return [Step(first.worker, "work.reject_offer", body)]
    return [Step(first.worker, "work.accept_offer", accept(first))]


def on_queued(scene: Scene, item: WorkItemState) -> list[Step]:
    if len(item.approvals) < approvals_required(item):
        return []  # a human mission_owner approves from the dashboard (R10.2-06)
    if not dependencies_met(scene, item) or scene.world.agent(item.owner or "") is None:
        return []
    if item.retry_at is not None and parse_timestamp(item.retry_at) > scene.now:
        return []  # a failed attempt waits out its backoff (R11.4-08)
    body = {"work_item": item.id, "ownership_epoch": item.ownership_epoch}
    return [Step(item.owner, "work.start", body)]


def on_active(scene: Scene, item: WorkItemState) -> list[Step]:
    lease, owner = item.lease, item.owner or ""
    if lease is None or lease.status != "active" or parse_timestamp(lease.expires_at) <= scene.now:
        return offer(scene, item)  # the owner went quiet: fence it and offer again (R10.2-03)
    if scene.world.agent(owner) is None:
        return []
    done = since_started(item)
    lease_id = lease.lease_id
    if parse_timestamp(lease.expires_at) - scene.now < RENEW_BEFORE:
        return [Step(owner, "lease.renew", {"work_item": item.id, "lease_id": lease_id})]
    if "work.progress_reported" not in done:
        return [
            Step(owner, "work.progress", progress_body(item.id, lease_id, scene.later(OFFER_TTL))),
            Step(owner, "work.usage", usage_body(item.id, lease_id)),
        ]
    checkpointed = any(type_ == "work.checkpointed" for _s, type_, _a in item.history)
    if not checkpointed and scene.rng.random() < CHECKPOINT_RATE:
        state = sha256_digest(f"{item.id} draft".encode())
        checkpoint = {"ref": f"drafts/{item.id}", "state_digest": state, "artifacts": []}
        return [
            Step(
                owner,
                "work.checkpoint",
                {"work_item": item.id, "lease_id": lease_id, "checkpoint": checkpoint},
            )
        ]
    produced = artifact(item.id, item.attempts)
    if scene.rng.random() < FAIL_RATE:
        failure = evidence(item.contract, owner, produced, verdict="fail")[:1]
        body = {"work_item": item.id, "lease_id": lease_id, "evidence": failure}
        return [Step(owner, "work.fail", body)]
    body = {
        "work_item": item.id,
        "lease_id": lease_id,
        "artifacts": [produced],
        "evidence": evidence(item.contract, owner, produced),
    }
    return [Step(owner, "work.submit", body)]


def on_submitted(scene: Scene, item: WorkItemState) -> list[Step]:
    """The coordinator reviews; a ``human_review`` criterion needs the human admin (R13.2-03)."""
    criteria = item.contract["acceptance_criteria"]
    human = any(c["method"] == "human_review" for c in criteria)
    reviewer = scene.world.admin_principal if human else scene.coordinator
    if not item.evidence:
        return [
            Step(reviewer, "evidence.record", review_evidence(item.id, item.contract, reviewer))
        ]
    return [Step(reviewer, "work.accept_result", review_body(item.id, item.contract))]


def on_failed(scene: Scene, item: WorkItemState) -> list[Step]:
    """A failure leaves only through a new offer (R10.2-20): retried a few times."""
    return offer(scene, item) if item.attempts < MAX_ATTEMPTS else []


NEXT: dict[str, Callable[[Scene, WorkItemState], list[Step]]] = {
    S.OPEN: on_open,
    S.OFFERED: on_offered,
    S.QUEUED: on_queued,
    S.ACTIVE: on_active,
    S.SUBMITTED: on_submitted,
    S.FAILED: on_failed,
}


# --- reading the projection ---------------------------------------------------------------


def dependencies_met(scene: Scene, item: WorkItemState) -> bool:
    return all(scene.states.get(dep) == S.VERIFIED for dep in item.depends_on)


def live_offers(item: WorkItemState, now: datetime) -> list[Offer]:
    """Open, unexpired offers of the current round, in rank order (sequential: first is live)."""
    return sorted(
        (
            o
            for o in item.offers
            if o.status == "open"
            and o.revision == item.revision
            and parse_timestamp(o.expires_at) > now
        ),
        key=lambda o: o.rank,
    )


def since_started(item: WorkItemState) -> list[str]:
    """The event types of the current attempt (after the latest ``work.started``)."""
    types = [type_ for _sequence, type_, _actor in item.history]
    last = max((i for i, type_ in enumerate(types) if type_ == "work.started"), default=-1)
    return types[last + 1 :]
