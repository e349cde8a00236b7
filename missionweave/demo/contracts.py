"""The command bodies of the demo: its Work Contracts, offers and reviews (wire.md §4, §10).

The server's seed (``apps/demo/story.py``) and the agent processes (the coordinator and the
reviewer) build the same bodies from here, so a seeded WorkItem and a live one are alike.
Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from missionweave.protocol.canonical import sha256_digest
from missionweave.protocol.examples import example_contract

from .organisation import GROUP, TASK_KIND

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
#: the coverage a report needs for the deterministic criterion (``CHECKS``) and the reviewer
MIN_COVERAGE = 0.8


def source_bytes(goal: str) -> bytes:
    """The input a contract names: the coordinator uploads it before authorising the work,
    since a contract may name only what this group's log cites or its sender uploaded (wire.md
    §9, "A digest is not a key")."""
    return f"Sources for: {goal}\n".encode()


def mission_body(mission_id: str, goal: str) -> dict[str, Any]:
    return {
        "mission": mission_id,
        "goal": goal,
        "budgets": {"money": 5.0, "tokens": 200000, "tool_calls": 50},
    }


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
    agent is asked (step 3) — or, with ``human_review``, a person's, who must then accept the
    result. With ``approval`` ``quorum`` human mission_owners must approve execution first;
    ``allowed`` replaces the example's tools, data and operations."""
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
        capabilities=[{"id": TASK_KIND, "version": "1"}],
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
    work_item: str,
    workers: Sequence[str],
    *,
    mode: str,
    expires_at: str,
    first: int = 1,
    group: str = GROUP,
) -> dict[str, Any]:
    """Offers numbered from ``first``; the selection basis is structured, never prose
    reasoning: its six keys (wire.md §4, R10.3-11, R10.3-12)."""
    rule = "urgent work goes to every worker at once" if mode == "urgent" else "one at a time"
    return {
        "work_item": work_item,
        "offers": [
            {"offer": f"{work_item}-o{first + n}", "worker": worker, "expires_at": expires_at}
            for n, worker in enumerate(workers)
        ],
        "mode": mode,
        "selection_basis": {
            "capability_match": f"{TASK_KIND} v1",
            "authorization_eligibility": f"worker in {group}",
            "availability_estimate": "idle",
            "expected_cost": {"money": 0.5, "tokens": 20000},
            "reliability_evidence": "demo workers",
            "policy_rules": [rule],
        },
    }


def review_body(work_item: str, contract_: dict[str, Any]) -> dict[str, Any]:
    """``work.accept_result``: a pass for every criterion."""
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
    verdict: str = "pass",
    summary: str = "Read it through; reads well.",
    data: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A reviewer's own evidence on one criterion (``evidence.record``), for the submission
    it was asked about when it knows which."""
    body: dict[str, Any] = {
        "work_item": work_item,
        "criterion": criterion["id"],
        "method": criterion["method"],
        "result": {"verdict": verdict, "summary": summary, "data": data or {}},
        "producer": producer,
        "artifacts": list(artifacts),
    }
    if submission is not None:
        body["submission"] = submission
    return body


def failure_evidence(
    contract_: dict[str, Any], failing: Sequence[str], producer: str
) -> list[dict[str, Any]]:
    """What the coordinator fails a result with: the criteria the review did not pass."""
    methods = {c["id"]: c["method"] for c in contract_["acceptance_criteria"]}
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
