"""A WorkItem in a worker agent's hands, reached with ``AgentClient`` commands against a live
server: the coordinator uploads the contract's input, creates a mission, authorises an item
whose contract declares a JSON output with an inline schema, a deterministic criterion with
``checks`` and an ``agent_review`` criterion, and offers it; the worker accepts and starts it.

Shared by the client's artifact tests and the end-to-end evidence pipeline.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from missionweave.client import AgentClient
from missionweave.demo.contracts import SUMMARY_SCHEMA
from missionweave.protocol.examples import example_contract
from tests.factories import mission_body, now_text, unique
from tests.work.lifecycle import DEADLINE, selection_basis

#: what the worker's ``report`` output must look like (checked at submission, R13.2-03 step 1)
REPORT_SCHEMA: dict[str, Any] = {**SUMMARY_SCHEMA, "additionalProperties": False}

#: an output the schema and every check accept
GOOD_REPORT: dict[str, Any] = {
    "status": "complete",
    "coverage": 0.97,
    "findings": ["three incidents share one root cause"],
}

INPUT_BYTES = b"incident reports of November, as the coordinator collected them\n"


def report_bytes(report: dict[str, Any] | None = None) -> bytes:
    return json.dumps(report if report is not None else GOOD_REPORT, sort_keys=True).encode()


def evidence_contract(input_digest: str) -> dict[str, Any]:
    """A Work Contract (wire.md §10) whose review involves the authority and a reviewer:
    ``c1`` is deterministic with ``checks`` the authority runs (R13.2-03 step 2), ``c2`` is
    ``agent_review``, asked of the group's reviewer agent (step 3). No ``human_review``, so
    the coordinator may accept the result itself."""
    return example_contract(
        deadline=DEADLINE,
        outputs=[{"name": "report", "media_type": "application/json", "schema": REPORT_SCHEMA}],
        inputs=[{"ref": input_digest}],
        acceptance_criteria=[
            {
                "id": "c1",
                "description": "The report is complete and covers the sources",
                "method": "deterministic",
                "evidence": ["test_result"],
                "checks": [
                    {"check": "digest_present", "output": "report"},
                    {
                        "check": "json_path_equals",
                        "output": "report",
                        "path": "$.status",
                        "value": "complete",
                    },
                    {
                        "check": "json_path_within",
                        "output": "report",
                        "path": "$.coverage",
                        "min": 0.9,
                        "max": 1,
                    },
                ],
            },
            {
                "id": "c2",
                "description": "Consistent with the sources",
                "method": "agent_review",
                "evidence": ["review"],
            },
        ],
    )


def worker_evidence(report: str) -> list[dict[str, Any]]:
    """The worker's own claim for each criterion (R13.2-02), with its criterion's method
    (R13.2-04); the client fills in the producer."""
    return [
        {
            "criterion": "c1",
            "method": "deterministic",
            "result": {"verdict": "pass", "summary": "status and coverage checked", "data": {}},
            "artifacts": [report],
        },
        {
            "criterion": "c2",
            "method": "agent_review",
            "result": {"verdict": "pass", "summary": "reread against the sources", "data": {}},
            "artifacts": [report],
        },
    ]


@dataclass(frozen=True)
class ActiveItem:
    group: str
    mission: str
    work_item: str
    lease_id: str
    input_digest: str
    contract: dict[str, Any]


def start_item(coordinator: AgentClient, worker: AgentClient, group: str) -> ActiveItem:
    """The coordinator uploads the input and hands out the work; the worker starts it.

    The input is uploaded first: a contract may name only a digest the group's log cites or
    its sender uploaded (wire.md §9, "A digest is not a key")."""
    input_digest = coordinator.upload(INPUT_BYTES, content_type="text/plain")
    mission = unique("m")
    work_item = unique("wi")
    contract = evidence_contract(input_digest)
    coordinator.submit(group, "mission.create", mission_body(mission))
    coordinator.submit(
        group,
        "work.authorize",
        {"work_item": work_item, "mission": mission, "contract": contract, "depends_on": []},
    )
    offer = f"{work_item}-o1"
    coordinator.submit(
        group,
        "work.offer",
        {
            "work_item": work_item,
            "offers": [{"offer": offer, "worker": worker.principal, "expires_at": now_text(3600)}],
            "mode": "sequential",
            "selection_basis": selection_basis(),
        },
    )
    accepted = worker.submit(
        group,
        "work.accept_offer",
        {"work_item": work_item, "offer": offer, "contract_revision": 1},
    )
    started = worker.submit(
        group,
        "work.start",
        {"work_item": work_item, "ownership_epoch": accepted.body["result"]["ownership_epoch"]},
    )
    lease_id = started.body["result"]["lease"]["lease_id"]
    return ActiveItem(group, mission, work_item, lease_id, input_digest, contract)
