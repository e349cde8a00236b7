"""One WorkItem's way through the §10.2 lifecycle, step by step, through the write path.

The bodies are the demo's (:mod:`apps.demo.story`): a contract whose ``summary`` output has
a JSON Schema and deterministic checks (criterion ``c1``, which the authority checks itself)
and a ``human_review`` criterion (``c2``, which a person reviews), a signed manifest for the
worker's report, evidence for every criterion. Each function takes the item one step on and
returns what the next step needs; nothing here decides what is allowed: a refusal is raised
by the write path and stops the build.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.utils import timezone

from apps.demo.story import (
    SOFTWARE,
    SUMMARY_SCHEMA,
    authorize_body,
    contract,
    offer_body,
    progress_body,
    report_bytes,
    review_body,
    review_evidence,
    source_bytes,
    submit_body,
    usage_body,
)
from apps.work.models import WorkItem
from missionweave.celery import app as celery_app
from missionweave.client.artifacts import build_manifest, signed_manifest
from missionweave.protocol.canonical import digest, sha256_digest
from missionweave.protocol.identifiers import user_principal
from missionweave.protocol.timefmt import format_timestamp

from .dashboard_cast import OWNER, REVIEWER, Cast, as_agent, as_person, upload

#: contracts' deadlines and offers' expiry: far enough that nothing runs out while the
#: cached database is reused
HORIZON = timedelta(days=365)
#: the longest lease the protocol grants (``MAX_LEASE_TTL_S``)
LEASE_TTL_S = 3600
#: distinct mission owners an execution approval needs on a gated contract (R10.2-06)
QUORUM = 2


@dataclass
class Item:
    """What the build knows of one WorkItem between its steps."""

    id: str
    mission: str
    goal: str
    worker: str  # principal
    gated: bool = False
    depends_on: Sequence[str] = ()
    urgency: str = ""
    terms: dict[str, Any] = field(default_factory=dict)
    lease: str = ""
    produced: str = ""


def deadline() -> str:
    return format_timestamp(timezone.now().replace(microsecond=0) + HORIZON)


def item_contract(item: Item) -> dict[str, Any]:
    """The demo's contract with a human-review criterion; a gated one needs two owners'
    execution approval (risk ``high``, quorum 2); ``item.urgency`` overrides the urgency."""
    terms = contract(item.goal, deadline(), human_review=True, approval=item.gated)
    if item.urgency:
        terms["urgency"] = item.urgency
    if item.gated:
        terms["risk"] = {
            "class": "high",
            "requires_execution_approval": True,
            "approvals_required": QUORUM,
        }
    return terms


def authorize(cast: Cast, item: Item) -> None:
    """The coordinator uploads the contract's input, then authorises the item (→ open)."""
    upload(cast.coordinator.principal, source_bytes(item.goal))
    item.terms = item_contract(item)
    body = authorize_body(item.id, item.mission, item.terms, item.depends_on)
    as_agent(cast, cast.coordinator, "work.authorize", body)


def cancel(cast: Cast, item: Item) -> None:
    """The mission owner drops an item nobody was offered yet (→ cancelled, R10.2-14)."""
    body = {"work_item": item.id, "reason": "No longer needed."}
    as_person(cast, OWNER, "work.cancel", body)


def offer(cast: Cast, item: Item) -> None:
    """One sequential offer to the item's worker (→ offered)."""
    body = offer_body(item.id, [item.worker], mode="sequential", expires_at=deadline())
    as_agent(cast, cast.coordinator, "work.offer", body)


def accept(cast: Cast, item: Item) -> None:
    """The worker takes the offer (→ queued)."""
    body = {"work_item": item.id, "offer": f"{item.id}-o1", "contract_revision": 1}
    as_agent(cast, cast.worker(item.worker), "work.accept_offer", body)


def approve_execution(cast: Cast, item: Item, username: str) -> None:
    """One mission owner's execution approval (R10.2-06)."""
    body = {"work_item": item.id, "contract_revision": 1, "comment": "Risk understood; go."}
    as_person(cast, username, "approval.grant_execution", body)


def start(cast: Cast, item: Item) -> None:
    """The worker starts it with the longest lease (→ active)."""
    body = {"work_item": item.id, "ownership_epoch": 1, "lease_ttl_s": LEASE_TTL_S}
    outcome = as_agent(cast, cast.worker(item.worker), "work.start", body)
    item.lease = outcome.body["result"]["lease"]["lease_id"]


def report_progress(cast: Cast, item: Item) -> None:
    """A progress report and a usage charge (to the item and its mission, R11.5-12)."""
    worker = cast.worker(item.worker)
    as_agent(cast, worker, "work.progress", progress_body(item.id, item.lease, deadline()))
    as_agent(cast, worker, "work.usage", usage_body(item.id, item.lease))


def publish(cast: Cast, item: Item, report: bytes) -> None:
    """The worker's signed manifest of its report (R13.1-03), citing the contract's input
    as its source (R13.1-04), built as ``AgentClient.publish`` builds it."""
    worker = cast.worker(item.worker)
    manifest = build_manifest(
        digest=item.produced,
        size=len(report),
        media_type="application/json",
        schema=digest(SUMMARY_SCHEMA),
        producer=worker.principal,
        version=SOFTWARE,
        agent_card_version="1",
        mission=item.mission,
        work_item=item.id,
        sources=[sha256_digest(source_bytes(item.goal))],
        tool_versions={"bench-summariser": "1"},
        created_at=format_timestamp(timezone.now()),
        classification="internal",
    )
    body = {
        "work_item": item.id,
        "lease_id": item.lease,
        "manifest": signed_manifest(worker.key, manifest),
    }
    as_agent(cast, worker, "artifact.publish", body)


def submit(cast: Cast, item: Item, *, with_manifest: bool = True) -> None:
    """The worker uploads its report, publishes its manifest (unless not ``with_manifest``)
    and submits the report as the ``summary`` output with evidence for every criterion
    (→ submitted). The authority's checks of ``c1`` run right after the commit (R13.2-03
    steps 1-2): the build runs Celery eagerly, so the hint's task runs here, as a worker's
    would."""
    worker = cast.worker(item.worker)
    report = report_bytes(item.id, 1)
    item.produced = upload(worker.principal, report)
    if with_manifest:
        publish(cast, item, report)
    state = WorkItem.objects.get(group_id=cast.group, work_item_id=item.id).to_state()
    body = submit_body(state, worker.principal, item.lease, item.produced)
    as_agent(cast, worker, "work.submit", body)


def review(cast: Cast, item: Item) -> None:
    """The human reviewer's verdict on the ``human_review`` criterion."""
    criterion = item.terms["acceptance_criteria"][-1]
    body = review_evidence(item.id, criterion, user_principal(REVIEWER), artifacts=[item.produced])
    as_person(cast, REVIEWER, "evidence.record", body)


def accept_result(cast: Cast, item: Item) -> None:
    """The mission owner accepts the reviewed result (→ verified)."""
    as_person(cast, OWNER, "work.accept_result", review_body(item.id, item.terms))


class EagerCelery:
    """Run Celery tasks in this process while building (the review hint a submission
    sends after commit), restoring the setting after."""

    def __enter__(self) -> EagerCelery:
        self._before = celery_app.conf.task_always_eager
        celery_app.conf.task_always_eager = True
        return self

    def __exit__(self, *exc: object) -> None:
        celery_app.conf.task_always_eager = self._before
