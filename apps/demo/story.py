"""The demo's seed: one WorkItem in each place worth showing before the agents start.

``seed_work`` leaves a WorkItem verified after the authority's checks and a human review,
one active in a worker's hands, one queued behind an execution approval that a person gives
from the dashboard, one queued behind a riskier one that needs two mission owners (it waits
in olivia's, omar's, rita's and the admin's inboxes), one submitted and waiting for a
person's review (rita's), one waiting on a dependency, one blocked by a child mission. It acts
as the demo's agents in-process, through the one write path; from then on the agents act from
their own processes (:mod:`missionweave.demo`), and the worker that owns the active WorkItem
picks it up where the seed left it.

Artifacts and evidence (R13.1, R13.2): the coordinator uploads a contract's input before it
authorises the work; a worker uploads its JSON report, publishes a manifest it signs and
submits the report as the contract's ``summary`` output. The seed calls the authority's
review service once, so its verified WorkItem shows the checks at once.

Restarts: seed commands have fixed ids, so a second run replays them from the idempotency
records; their times come from the first seeding (kept in the first WorkItem's contract), so
their bodies, and with them the content digests, never change.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.utils import timezone

from apps.ledger.write_path import Outcome
from apps.work import reviews
from apps.work.models import WorkItem
from apps.work.tasks import STORE
from missionweave.client.artifacts import build_manifest, signed_manifest
from missionweave.demo.contracts import (
    OUTPUT,
    SUMMARY_SCHEMA,
    authorize_body,
    contract,
    offer_body,
    review_body,
    review_evidence,
    source_bytes,
)
from missionweave.protocol.canonical import digest, sha256_digest
from missionweave.protocol.timefmt import format_timestamp, parse_timestamp
from missionweave.protocol.work.items import WorkItem as WorkItemState

from .cast import (
    AGENT_CARD_VERSION,
    GROUP,
    DemoWorld,
    submit_as_admin,
    submit_as_agent,
    upload_as,
)

__all__ = [
    "OUTPUT",
    "SUMMARY_SCHEMA",
    "authorize_body",
    "contract",
    "offer_body",
    "review_body",
    "review_evidence",
    "source_bytes",
]

#: seed times: offers and deadlines this far after the first seeding
SEED_HORIZON = timedelta(days=30)
#: what the demo's workers say produced their reports (a manifest's ``producer.version``)
SOFTWARE = "missionweave-demo-worker/1"
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


# --- the workers' command bodies (the agents' processes have the runtime build them) -------


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
    worker1, worker2 = (worker.principal for worker in world.workers[:2])

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
    worker1, worker2 = (worker.principal for worker in seed.world.workers[:2])

    # submitted, waiting for a person's review: the authority checks c1, c2 is human_review,
    # which the coordinator agent never judges: a person does at the review screen
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
