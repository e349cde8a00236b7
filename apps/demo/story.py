"""The demo's story: WorkItems that move through the §10.2 lifecycle while someone watches.

``seed_work`` leaves one WorkItem in each place worth showing: verified after the authority's
checks and a human review, active in a worker's hands, queued behind an execution approval
that the human admin gives from the dashboard, queued behind a riskier one that needs two
mission owners (it waits in olivia's, omar's, rita's and the admin's inboxes), submitted and
waiting for a person's review (rita's), waiting on a dependency, blocked by a child mission.
``tick`` is one beat of the live loop: a small state machine over the projections — for each
WorkItem, "in state X, do the next step" — played by the coordinator, the two workers
and the reviewer with signed commands through the one write path. Nothing here decides what is
allowed: a refusal is the write path's answer, reported, and the loop goes on.

Artifacts and evidence (R13.1, R13.2): the coordinator uploads a contract's input before it
authorises the work; a worker uploads its JSON report, publishes a manifest it signs and
submits the report as the contract's ``summary`` output. The authority's review — integrity
and the contract's deterministic ``checks`` — runs in the Celery worker ``manage.py demo``
starts, which then asks the group's reviewer agent; the reviewer answers on the next beat and
the coordinator accepts once every criterion passed. The loop never plays the authority; the
seed calls the same review service once, so its verified WorkItem shows the checks at once.

Restarts: seed commands have fixed ids, so a second run replays them from the idempotency
records; their times come from the first seeding (kept in the first WorkItem's contract), so
their bodies, and with them the content digests, never change. Live commands take fresh ids
and read what they need from the projections, so a new run carries on where the last one
stopped.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from apps.artifacts.models import GroupArtifact
from apps.ledger.write_path import Outcome
from apps.work import reviews
from apps.work.models import Mission, WorkItem
from apps.work.tasks import STORE
from missionweave.client.artifacts import build_manifest, signed_manifest
from missionweave.protocol import states as S
from missionweave.protocol.canonical import digest, sha256_digest
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.examples import example_contract
from missionweave.protocol.timefmt import format_timestamp, parse_timestamp
from missionweave.protocol.work.checks import approvals_required
from missionweave.protocol.work.items import Offer
from missionweave.protocol.work.items import WorkItem as WorkItemState

from .cast import (
    AGENT_CARD_VERSION,
    GROUP,
    DemoWorld,
    mission_body,
    submit_as_admin,
    submit_as_agent,
    upload_as,
)

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

#: what the demo's workers say produced their reports (a manifest's ``producer.version``)
SOFTWARE = "missionweave-demo-worker/1"
#: the report every demo contract asks for, and the schema the authority checks it against
OUTPUT = "summary"
SUMMARY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["status", "coverage", "findings"],
    "properties": {
        "status": {"type": "string"},
        "coverage": {"type": "number"},
        "findings": {"type": "array", "items": {"type": "string"}},
    },
}
#: the deterministic criterion's checks, run by the authority (R13.2-03 step 2)
CHECKS = (
    {"check": "digest_present", "output": OUTPUT},
    {"check": "json_path_equals", "output": OUTPUT, "path": "$.status", "value": "complete"},
    {"check": "json_path_within", "output": OUTPUT, "path": "$.coverage", "min": 0.8, "max": 1},
)

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
EXPORT = "demo-wi-access-export"  # submitted, its human_review criterion waits for a person
REVOKE = "demo-wi-access-revoke"  # queued, high risk: two mission owners must approve
#: how long REVOKE's owner has to start once approved: long enough to walk the inboxes
REVOKE_START_WINDOW_S = 6 * 3600
#: submitted results the live loop leaves to the people of the demo: nobody judges them but
#: a person at the review screen
HELD_FOR_PEOPLE = frozenset({EXPORT})


# --- command bodies (the seed and the live loop build the same ones) ----------------------


def source_bytes(goal: str) -> bytes:
    """The input a contract names: the coordinator uploads it before authorising the work,
    since a contract may only name what its sender may read or a member uploaded (wire.md
    §9, "A digest is not a key")."""
    return f"Sources for: {goal}\n".encode()


def report_bytes(work_item: str, attempt: int) -> bytes:
    """A worker's result: a JSON report its contract's schema and checks accept, different
    for each attempt (an artifact's manifest is recorded once per group, R13.1-01)."""
    report = {
        "work_item": work_item,
        "attempt": attempt,
        "status": "complete",
        "coverage": 0.95,
        "findings": [f"every source of {work_item} read and summarised"],
    }
    return json.dumps(report, sort_keys=True).encode()


def contract(
    goal: str,
    deadline: str,
    *,
    urgency: str = "normal",
    human_review: bool = False,
    approval: bool = False,
    quorum: int = 1,
    allowed: dict[str, list[str]] | None = None,
) -> dict[str, Any]:
    """A Work Contract (wire.md §10) whose ``summary`` output has an inline JSON Schema and
    whose first criterion carries ``checks``, so the authority checks every result itself
    (R13.2-03 steps 1–2). The second criterion is ``agent_review`` — the group's reviewer
    agent is asked (step 3) — or, with ``human_review``, the human admin's, who must then
    accept the result. With ``approval`` ``quorum`` human mission_owners must approve execution
    first; ``allowed`` replaces the example's tools, data and operations."""
    review = (
        ("human_review", "Accurate and neutral")
        if human_review
        else ("agent_review", "Consistent with the sources")
    )
    extra: dict[str, Any] = {"allowed": allowed} if allowed is not None else {}
    return example_contract(
        **extra,
        goal=goal,
        deadline=deadline,
        urgency=urgency,
        outputs=[{"name": OUTPUT, "media_type": "application/json", "schema": SUMMARY_SCHEMA}],
        inputs=[{"ref": sha256_digest(source_bytes(goal))}],
        acceptance_criteria=[
            {
                "id": "c1",
                "description": "Complete, and covers at least 80% of the sources",
                "method": "deterministic",
                "evidence": ["test_result"],
                "checks": [dict(check) for check in CHECKS],
            },
            {"id": "c2", "description": review[1], "method": review[0], "evidence": ["review"]},
        ],
        risk={
            "class": "high" if quorum > 1 else "medium" if approval else "low",
            "requires_execution_approval": approval,
            "approvals_required": quorum,
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


def evidence(
    contract_: dict[str, Any], producer: str, artifact_: str, *, verdict: str = "pass"
) -> list[dict[str, Any]]:
    """The worker's claim for every acceptance criterion (R13.2-02), each with its criterion's
    method (R13.2-04). A claim passes nothing by itself (R13.2-01): the authority's checks,
    the reviewer and the admin decide."""
    return [
        {
            "criterion": criterion["id"],
            "method": criterion["method"],
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


def review_evidence(
    work_item: str,
    criterion: dict[str, Any],
    producer: str,
    *,
    artifacts: Sequence[str] = (),
    submission: int | None = None,
) -> dict[str, Any]:
    """A reviewer's own evidence on one criterion (``evidence.record``), for the submission
    it was asked about when it knows which."""
    body = {
        "work_item": work_item,
        "criterion": criterion["id"],
        "method": criterion["method"],
        "result": {"verdict": "pass", "summary": "Read it through; reads well.", "data": {}},
        "producer": producer,
        "artifacts": list(artifacts),
    }
    if submission is not None:
        body["submission"] = submission
    return body


def publish_body(
    world: DemoWorld,
    *,
    owner: str,
    item: WorkItemState,
    lease_id: str,
    report: bytes,
    created_at: str,
) -> dict[str, Any]:
    """``artifact.publish`` of a worker's report: the manifest of wire.md §9 (R13.1-03),
    built and signed with the worker's key as ``AgentClient.publish`` does, citing the
    contract's inputs as its sources (R13.1-04)."""
    agent = world.agent(owner)
    assert agent is not None, owner
    manifest = build_manifest(
        digest=sha256_digest(report),
        size=len(report),
        media_type="application/json",
        schema=digest(SUMMARY_SCHEMA),
        producer=owner,
        version=SOFTWARE,
        agent_card_version=AGENT_CARD_VERSION,
        mission=item.mission,
        work_item=item.id,
        sources=[ref["ref"] for ref in item.contract.get("inputs", [])],
        tool_versions={"demo-summariser": "1"},
        created_at=created_at,
        classification="internal",
    )
    return {
        "work_item": item.id,
        "lease_id": lease_id,
        "manifest": signed_manifest(agent.key, manifest),
    }


def submit_body(item: WorkItemState, owner: str, lease_id: str, produced: str) -> dict[str, Any]:
    """``work.submit`` with the report mapped to the contract's output (R13.2-02)."""
    return {
        "work_item": item.id,
        "lease_id": lease_id,
        "artifacts": [produced],
        "outputs": {OUTPUT: produced},
        "evidence": evidence(item.contract, owner, produced),
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


@dataclass(frozen=True)
class Seeder:
    """The seed's moves, each one command with a fixed id (``seed-<item>-<name>``), so a later
    run replays them; every time in a body comes from the first seeding."""

    world: DemoWorld
    deadline: str

    @property
    def seeded_at(self) -> str:
        return format_timestamp(parse_timestamp(self.deadline) - SEED_HORIZON)

    @property
    def coordinator(self) -> str:
        return self.world.coordinator.principal

    def step(self, actor: str, item: str, name: str, type_: str, body: dict[str, Any]) -> Outcome:
        return submit_as(self.world, actor, type_, body, f"seed-{item}-{name}")

    def authorize(
        self, item: str, mission: str, goal: str, *deps: str, **terms: Any
    ) -> dict[str, Any]:
        contract_ = contract(goal, self.deadline, **terms)
        upload_as(self.coordinator, source_bytes(goal))  # the input first (wire.md §9)
        body = authorize_body(item, mission, contract_, deps)
        self.step(self.coordinator, item, "authorize", "work.authorize", body)
        return contract_

    def offer_to(self, item: str, mode: str, *workers: str, **terms: Any) -> None:
        """Offer ``item`` (``terms``: e.g. ``start_within_s``); the first worker takes it."""
        body = offer_body(item, workers, mode=mode, expires_at=self.deadline)
        self.step(self.coordinator, item, "offer", "work.offer", {**body, **terms})
        body = {"work_item": item, "offer": f"{item}-o1", "contract_revision": 1}
        self.step(workers[0], item, "accept", "work.accept_offer", body)

    def start(self, worker: str, item: str) -> str:
        body = {"work_item": item, "ownership_epoch": 1}
        outcome = self.step(worker, item, "start", "work.start", body)
        lease = outcome.body["result"]["lease"]["lease_id"]
        progress = progress_body(item, lease, self.deadline)
        self.step(worker, item, "progress", "work.progress", progress)
        return lease

    def submit_report(self, worker: str, item: str) -> str:
        """The worker starts, reports, publishes its report and submits it; the digest."""
        lease = self.start(worker, item)
        self.step(worker, item, "usage", "work.usage", usage_body(item, lease))
        report = report_bytes(item, 1)
        produced = upload_as(worker, report)
        state = WorkItem.objects.get(group_id=GROUP, work_item_id=item).to_state()
        published_ = publish_body(
            self.world,
            owner=worker,
            item=state,
            lease_id=lease,
            report=report,
            created_at=self.seeded_at,
        )
        self.step(worker, item, "publish", "artifact.publish", published_)
        body = submit_body(state, worker, lease, produced)
        self.step(worker, item, "submit", "work.submit", body)
        # The authority's checks, run here once by the same service as its Celery task, so
        # the seeded result shows them at once; once they are recorded this is a no-op
        # (R13.2-03 steps 1-2).
        reviews.review_submission(STORE, GROUP, item)
        return produced


def seed_work(world: DemoWorld) -> None:
    """Put the seed WorkItems in their places; on later runs every command is a replay."""
    seed = Seeder(world, _seed_deadline())
    coordinator, admin = world.coordinator.principal, world.admin_principal
    worker1, worker2 = (worker.principal for worker in world.workers)

    # verified: urgent to both workers, worker 1 wins, the human admin reviews (human_review)
    summary = seed.authorize(
        SUMMARY,
        "demo-m-incidents",
        "Summarise the incident reports of November",
        urgency="high",
        human_review=True,
    )
    seed.offer_to(SUMMARY, "urgent", worker1, worker2)
    produced = seed.submit_report(worker1, SUMMARY)
    human = summary["acceptance_criteria"][-1]
    judged = review_evidence(SUMMARY, human, admin, artifacts=[produced])
    seed.step(admin, SUMMARY, "evidence", "evidence.record", judged)
    seed.step(admin, SUMMARY, "accept-result", "work.accept_result", review_body(SUMMARY, summary))

    # active: offered to worker 2, then worker 1 in turn; worker 2 takes it and reports progress
    seed.authorize(TRANSLATE, "demo-m-onboarding", "Translate the onboarding guide into French")
    seed.offer_to(TRANSLATE, "sequential", worker2, worker1)
    seed.start(worker2, TRANSLATE)

    # open: waits until the translation is verified (R10.4-03)
    seed.authorize(PROOFREAD, "demo-m-onboarding", "Proofread the French guide", TRANSLATE)

    # queued behind an execution approval: the coordinator asked, so the admin may approve
    seed.authorize(
        COLLECT, "demo-m-pricing", "Collect the competitors' pricing pages", approval=True
    )
    seed.offer_to(COLLECT, "sequential", worker1)

    # blocked while a child mission in this group runs; the child has work of its own
    seed.authorize(TERMS, "demo-m-pricing", "Compare the competitors' terms of service")
    child = {
        "mission": CHILD_MISSION,
        "group": GROUP,
        "goal": "Read the competitors' terms",
        "budgets": {"money": 2.0, "tokens": 100000},
    }
    body = {"work_item": TERMS, "child": child, "failure_policy": "block_parent"}
    seed.step(coordinator, TERMS, "child", "mission.create_child", body)
    seed.authorize(CHILD_ITEM, CHILD_MISSION, "Read the terms of service of the three competitors")

    seed_for_people(seed)


def seed_for_people(seed: Seeder) -> None:
    """Work that waits for the demo's people, not the admin alone: a result for rita (or
    another mission owner) to review, and a WorkItem two mission owners must approve."""
    worker1, worker2 = (worker.principal for worker in seed.world.workers)

    # submitted, waiting for a person's review: the authority checks c1, c2 is human_review,
    # and the live loop leaves it to a person at the review screen (HELD_FOR_PEOPLE)
    seed.authorize(
        EXPORT,
        "demo-m-access",
        "Export who changed the billing service's production data this quarter",
        human_review=True,
    )
    seed.offer_to(EXPORT, "sequential", worker1)
    seed.submit_report(worker1, EXPORT)

    # queued behind two mission owners' approvals: it would write to production accounts
    seed.authorize(
        REVOKE,
        "demo-m-access",
        "Revoke the stale admin accounts of the billing service",
        approval=True,
        quorum=2,
        allowed={"tools": ["iam"], "data": ["billing-accounts"], "operations": ["read", "write"]},
    )
    seed.offer_to(REVOKE, "sequential", worker2, worker1, start_within_s=REVOKE_START_WINDOW_S)


# --- the live loop ------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One command the loop will send; ``expect`` names a refusal that is part of the story;
    ``uploads`` are the bytes the actor stores first, so the command may name them."""

    actor: str
    type: str
    body: dict[str, Any]
    expect: ErrorCode | None = None
    uploads: tuple[bytes, ...] = ()


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
    for data in step.uploads:
        upload_as(step.actor, data)
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
        text = item_goal.format(goal=goal)
        contract_ = contract(
            text,
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
                uploads=(source_bytes(text),),
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
    report = report_bytes(item.id, item.attempts)
    produced = sha256_digest(report)
    if scene.rng.random() < FAIL_RATE:
        failure = evidence(item.contract, owner, produced, verdict="fail")[:1]
        body = {"work_item": item.id, "lease_id": lease_id, "evidence": failure}
        return [Step(owner, "work.fail", body, uploads=(report,))]
    steps = []
    if not published(produced):
        body = publish_body(
            scene.world,
            owner=owner,
            item=item,
            lease_id=lease_id,
            report=report,
            created_at=scene.later(timedelta()),
        )
        steps.append(Step(owner, "artifact.publish", body, uploads=(report,)))
    return [*steps, Step(owner, "work.submit", submit_body(item, owner, lease_id, produced))]


def on_submitted(scene: Scene, item: WorkItemState) -> list[Step]:
    """The review, in R13.2-03's order: wait while the authority still checks (steps 1–2,
    in the Celery worker); the demo's reviewer answers what it was asked (step 3); the admin
    gives a ``human_review`` criterion its verdict; the coordinator judges the combined
    evidence (step 4) — or the admin where a human must accept (step 5)."""
    if item.id in HELD_FOR_PEOPLE:
        return []  # a person judges it at the review screen (R13.2-03 step 5)
    criteria = item.contract["acceptance_criteria"]
    human = any(c["method"] == "human_review" for c in criteria)
    judge = scene.world.admin_principal if human else scene.coordinator
    if item.review is None:  # submitted before reviews were kept: nothing to wait for
        return [Step(judge, "work.accept_result", review_body(item.id, item.contract))]
    status = {name: entry["status"] for name, entry in item.review["criteria"].items()}
    if "checking" in status.values():
        return []
    answers = reviewer_answers(scene, item)
    if answers or "awaiting_review" in status.values():
        return answers  # or someone else's reviewer is still reading
    outputs = list((item.submission or {}).get("artifacts", []))
    unjudged = [c for c in criteria if status.get(c["id"], "claimed") == "claimed"]
    if unjudged:
        # only the worker's claim so far (R13.2-01): the judge looks itself, never the owner
        return [
            Step(judge, "evidence.record", review_evidence(item.id, c, judge, artifacts=outputs))
            for c in unjudged
        ]
    failing = [name for name, verdict in status.items() if verdict in ("fail", "inconclusive")]
    if failing:
        body = {"work_item": item.id, "evidence": failure_evidence(item, failing, judge)}
        return [Step(scene.coordinator, "work.fail", body)]
    return [Step(judge, "work.accept_result", review_body(item.id, item.contract))]


def reviewer_answers(scene: Scene, item: WorkItemState) -> list[Step]:
    """``evidence.record`` by a demo reviewer for each criterion it was asked about and has
    not answered, on the submission it was asked about (R13.2-03 step 3)."""
    review = item.review or {}
    criteria = {c["id"]: c for c in item.contract["acceptance_criteria"]}
    outputs = list((item.submission or {}).get("artifacts", []))
    return [
        Step(
            request["reviewer"],
            "evidence.record",
            review_evidence(
                item.id,
                criteria[name],
                request["reviewer"],
                artifacts=outputs,
                submission=review["submission"],
            ),
        )
        for request in review.get("requests", [])
        if scene.world.agent(request["reviewer"]) is not None
        for name in request["criteria"]
        if name not in request["answered"] and name in criteria
    ]


def failure_evidence(
    item: WorkItemState, failing: list[str], producer: str
) -> list[dict[str, Any]]:
    """What the coordinator fails a result with: the criteria the review did not pass."""
    methods = {c["id"]: c["method"] for c in item.contract["acceptance_criteria"]}
    return [
        {
            "criterion": name,
            "method": methods.get(name, "deterministic"),
            "result": {"verdict": "fail", "summary": f"{name} did not pass review", "data": {}},
            "producer": producer,
            "artifacts": [],
        }
        for name in failing
    ]


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


def published(produced: str) -> bool:
    """Whether ``produced`` already has its manifest in the group (recorded once, R13.1-01):
    a submission refused after its publish is sent again without publishing twice."""
    row = GroupArtifact.objects.filter(group_id=GROUP, digest=produced).first()
    return row is not None and row.data.get("manifest") is not None


def since_started(item: WorkItemState) -> list[str]:
    """The event types of the current attempt (after the latest ``work.started``)."""
    types = [type_ for _sequence, type_, _actor in item.history]
    last = max((i for i, type_ in enumerate(types) if type_ == "work.started"), default=-1)
    return types[last + 1 :]
