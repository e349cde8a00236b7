"""Valid example documents from wire.md, for tests and documentation.

Each call returns a fresh deep copy, so a test may mutate what it gets without touching the
next test's copy.
"""

from __future__ import annotations

import copy
from typing import Any

from .canonical import sha256_digest

#: The input the wire.md §10 example points at (its ``sha256:...`` made concrete): these bytes.
INCIDENT_REPORTS = b"incident reports, November 2026"
INCIDENT_REPORTS_DIGEST = sha256_digest(INCIDENT_REPORTS)

_CONTRACT: dict[str, Any] = {
    "schema": "mwp.contract/1",
    "goal": "Summarise the incident reports of November",
    "outputs": [{"name": "summary", "media_type": "text/markdown", "schema": None}],
    "acceptance_criteria": [
        {
            "id": "c1",
            "description": "Covers every report",
            "method": "deterministic",
            "evidence": ["test_result"],
        },
        {
            "id": "c2",
            "description": "Accurate and neutral",
            "method": "human_review",
            "evidence": ["review"],
        },
    ],
    "inputs": [{"ref": INCIDENT_REPORTS_DIGEST}],
    "dependency_policy": "all_verified",
    "allowed": {"tools": ["search"], "data": ["incidents"], "operations": ["read"]},
    "resources": {"max_concurrency": 1},
    "capabilities": [{"id": "text.summarise", "version": "1"}],
    # far ahead: a start-by is capped by the deadline (R11.3-02), so a deadline already
    # past made every example WorkItem miss its start at once once that day came
    "deadline": "2036-12-01T00:00:00Z",
    "urgency": "normal",
    "business_impact": "medium",
    "budgets": {
        "money": 5.0,
        "tokens": 200000,
        "tool_calls": 100,
        "compute": 3600,
        "wall_clock": 7200,
        "side_effects": 0,
    },
    "retry": {
        "max_attempts": 3,
        "initial_backoff_s": 30,
        "backoff_multiplier": 2.0,
        "max_backoff_s": 600,
    },
    "risk": {"class": "low", "requires_execution_approval": False, "approvals_required": 1},
}


def example_contract(**overrides: Any) -> dict[str, Any]:
    """The Work Contract of wire.md §10, valid as written; ``overrides`` replace top-level fields.

    >>> example_contract(urgency="high")["urgency"]
    'high'
    """
    contract = copy.deepcopy(_CONTRACT)
    contract.update(copy.deepcopy(overrides))
    return contract
