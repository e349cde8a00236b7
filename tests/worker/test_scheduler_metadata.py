"""What the worker's cross-group scheduler is allowed to see (R13.3-08).

The scheduler orders work of every group the worker serves; it reads scheduling metadata —
ids, urgency, deadline, queue age, approval gate, resource needs, an estimate, the
organisation's class — and never a contract's goal, outputs, criteria, inputs or allowed data.
It sees only the ``QueuedItem``s it is handed, and they are built (``intake.queued_item``) from
queue rows that keep the contract's scheduling terms alone (``queues.terms_of``).
"""

from __future__ import annotations

import ast
import dataclasses
import random
from pathlib import Path
from typing import Any

from missionweave.protocol.examples import example_contract
from missionweave.worker import scheduler
from missionweave.worker.config import GroupConfig
from missionweave.worker.intake import queued_item
from missionweave.worker.queues import GroupQueues, apply, terms_of
from missionweave.worker.scheduler import QueuedItem

from .streams import ME, group_log

SECRET = "CONFIDENTIAL: the Acme merger"
METADATA = {
    "group",
    "work_item",
    "mission",
    "urgency",
    "deadline",
    "queued_at",
    "risk_gated",
    "needs",
    "estimated_seconds",
    "org_priority_class",
}


def _strings(value: Any) -> list[str]:
    """Every string inside ``value`` (mappings, sequences, dataclasses), keys included."""
    if isinstance(value, str):
        return [value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _strings([getattr(value, f.name) for f in dataclasses.fields(value)])
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list | tuple | set | frozenset):
        return [s for v in value for s in _strings(v)]
    return []


def test_a_queued_item_holds_scheduling_metadata_only() -> None:
    """R13.3-08: the fields the scheduler is given are ids and scheduling metadata; a
    contract whose goal, outputs, criteria, inputs and allowed data are confidential gives
    terms and a queued item in which none of that text appears."""
    assert {field.name for field in dataclasses.fields(QueuedItem)} == METADATA
    contract = example_contract(
        goal=SECRET,
        outputs=[{"name": SECRET, "media_type": "text/markdown", "schema": None}],
        acceptance_criteria=[
            {"id": "c1", "description": SECRET, "method": "deterministic", "evidence": ["x"]}
        ],
        allowed={"tools": [SECRET], "data": [SECRET], "operations": ["read"]},
        urgency="high",
    )
    terms = terms_of(contract)
    row: Any = {
        "group": "g-alpha",
        "work_item": "wi-1",
        "mission": "m-1",
        "queued_at": "2026-12-01T00:00:00Z",
        "retry_at": None,
        "terms": terms,
        "gate": {
            "requires_execution_approval": False,
            "approvals_required": 0,
            "approvals": [],
            "refused_by": None,
        },
    }
    item = queued_item(row, GroupConfig())
    assert item.urgency == "high"
    assert not [s for s in _strings(terms) if "CONFIDENTIAL" in s]
    assert not [s for s in _strings(item) if "CONFIDENTIAL" in s]


def test_queue_rows_of_a_real_log_never_carry_a_contracts_content() -> None:
    """R13.3-08: along a whole group log, every queued row (what the scheduler is fed
    from) and the item made of it hold no goal or criterion text of any contract."""
    events = group_log("g-alpha", random.Random(5), steps=200)
    contracts = [e["payload"]["contract"] for e in events if "contract" in e["payload"]]
    content = {c["goal"] for c in contracts} | {
        criterion["description"] for c in contracts for criterion in c["acceptance_criteria"]
    }
    assert content
    state, queued = GroupQueues("g-alpha", ME), 0
    for event in events:
        state = apply(state, event)
        for row in state.queue():
            queued += 1
            assert "contract" not in row
            seen = set(_strings(row)) | set(_strings(queued_item(row, GroupConfig())))
            assert not seen & content
    assert queued > 0


def test_the_scheduler_reads_nothing_but_what_it_is_handed() -> None:
    """R13.3-08: the scheduler module imports nothing of the worker (no queue, store or slot)
    and no client, only the protocol core and the standard library, so the queued items are
    all it can see of a group's work."""
    tree = ast.parse(Path(scheduler.__file__).read_text(encoding="utf-8"))
    relative = [
        node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level
    ]
    absolute = {
        name
        for node in ast.walk(tree)
        for name in (
            [node.module or ""]
            if isinstance(node, ast.ImportFrom) and not node.level
            else [alias.name for alias in node.names]
            if isinstance(node, ast.Import)
            else []
        )
    }
    assert relative == []
    ours = sorted(name for name in absolute if name.startswith("missionweave"))
    assert ours
    assert all(name.startswith("missionweave.protocol.") for name in ours), ours
