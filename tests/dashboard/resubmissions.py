"""A WorkItem submitted, sent back and submitted again, the way agents and people do it: real
commands through the one write path (issue 37 §6; R10.2-11, R10.2-13, R10.2-03).

Shared by the re-review page test and its browser test. The contract declares two outputs,
a Markdown summary and JSON findings; the second submission changes both.
"""

from __future__ import annotations

import json
from typing import Any

from apps.work import reviews
from apps.work.tasks import STORE
from missionweave.protocol.examples import example_contract
from tests.dashboard import workflows as wf
from tests.factories import World, store_bytes

OUTPUTS = [
    {"name": "summary", "media_type": "text/markdown", "schema": None},
    {"name": "findings", "media_type": "application/json", "schema": None},
]
SUMMARY_BEFORE = b"# Summary\n\nTen incidents in November.\nAll were minor.\n"
SUMMARY_AFTER = b"# Summary\n\nEleven incidents in November.\nAll were minor.\nOne was major.\n"
FINDINGS_BEFORE = {"findings": ["disk full", "slow backup", "expired certificate"], "count": 10}
FINDINGS_AFTER = {
    "findings": ["disk full", "slow backup", "expired TLS certificate", "DNS outage"],
    "count": 11,
}


def submit_outputs(world: World, item: str, lease: str, summary: bytes, findings: Any) -> None:
    """w2 submits both outputs, named, with evidence on both criteria (R13.2-02), and the
    authority runs its checks (R13.2-03 steps 1–2)."""
    digests = {
        "summary": store_bytes(world.w2.principal, summary),
        "findings": store_bytes(world.w2.principal, json.dumps(findings, indent=2).encode()),
    }
    body = {
        "work_item": item,
        "lease_id": lease,
        "artifacts": list(digests.values()),
        "outputs": digests,
        "evidence": [wf.evidence(world.w2.principal, c) for c in ("c1", "c2")],
    }
    wf.submit(world.w2, world.group, "work.submit", body)
    reviews.review_submission(STORE, world.group, item)


def first_submission(world: World) -> tuple[str, str]:
    """A mission and its item, submitted once: (mission, item)."""
    mission = wf.mission(world)
    item = wf.queued(world, mission, contract=example_contract(outputs=OUTPUTS))
    lease = wf.start(world, item)
    submit_outputs(world, item, lease, SUMMARY_BEFORE, FINDINGS_BEFORE)
    return mission, item


def send_back_evidence(persona_principal: str) -> list[dict[str, Any]]:
    """A reviewer's verdicts as the review page sends them (R13.2-04): c2 needs changes."""
    return [
        {
            "criterion": "c1",
            "method": "deterministic",
            "result": {"verdict": "pass", "summary": "Pass", "data": {"review_verdict": "pass"}},
            "producer": persona_principal,
            "artifacts": [],
        },
        {
            "criterion": "c2",
            "method": "human_review",
            "result": {
                "verdict": "fail",
                "summary": "Count the DNS outage too",
                "data": {"review_verdict": "needs_changes"},
            },
            "producer": persona_principal,
            "artifacts": [],
        },
    ]


def resubmit(world: World, item: str) -> None:
    """The coordinator offers the failed item again (R10.2-03), w2 takes it (epoch 2) and
    submits the changed outputs."""
    wf.accept(world, item, wf.offer(world, item))
    lease = wf.start(world, item, epoch=2)
    submit_outputs(world, item, lease, SUMMARY_AFTER, FINDINGS_AFTER)
