"""One item under this worker's lease: what the runtime remembers of it, what its slot is
given, and how its result becomes a submission (R10.2-07..11, R11.3-03..08, R13.1, R13.2-02).

``Running`` is the runtime's record from ``work.start`` until the item leaves its hands
(submitted, failed, checkpointed, or lost to a fence). It outlives the slot on purpose: a
handler that has returned no longer needs a slot, but its lease still has to be renewed until
the submission is accepted (R11.3-04: the submission names the current lease).

``assignment`` hands the slot only what it needs (R11.1-12): the mission context (contract,
ids), the start's capability token under one name, and a tool budget per allowed tool.
``submission`` uploads the outputs, publishes a producer-signed manifest for each (R13.1-03;
an agent without one is given the authority's, so a refused publication is not fatal) and
builds the ``work.submit`` evidence with artifact digests in place of output names.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from missionweave.client.errors import ApiError

from .handlers import Progress, TaskResult
from .metering import Meter
from .progress import Reported
from .slots import Assignment, Checkpoint, Slot

log = logging.getLogger("missionweave.worker")

#: the name under which a slot finds the lease's capability token (``ctx.tokens()``)
TOKEN_NAME = "capability"  # noqa: S105 - a name, not a secret
#: a tool's slot budget when the contract sets no ``tool_calls`` limit (unlimited there)
UNLIMITED_TOOL_CALLS = 1e12


@dataclass
class Running:
    group: str
    work_item: str
    mission: str
    ownership_epoch: int
    lease_id: str
    lease_started_at: datetime
    lease_expires_at: datetime
    #: the session epoch the lease is bound to: a buffered command's binding names it (R11.5-08)
    session_epoch: int
    contract: Mapping[str, Any]
    #: the scheduler's urgency and class of the item, for contention
    urgency: str
    org_priority_class: str
    #: the slot time the scheduler reserved: the progress estimate's fallback
    expected_s: float
    started_at: datetime
    progress: Progress = field(default_factory=Progress)
    #: the handler's wall-clock and CPU seconds, charged by the runtime (``metering.py``)
    meter: Meter = field(default_factory=Meter)
    slot: Slot | None = None
    started_mono: float = field(default_factory=time.monotonic)
    reported: Reported | None = None
    #: why a preemption was requested (priority, shutdown, offline, lost), once it was
    yielding: str | None = None
    #: nothing more is sent under this run's lease: the item is no longer this worker's
    #: (fenced, reassigned, its lease revoked), or it was blocked (R11.4-04: the block
    #: released the lease; the item waits under the authority's bounded blocked lease)
    lost: bool = False
    #: a charge was refused (R11.5-13): why the item must stop, as the block's resolution
    stop_for: str | None = None
    #: what was used but refused or not charged after the refusal (logged at the block)
    refused: dict[str, float] = field(default_factory=dict)
    #: the checkpoint the handler resumed from, which may be the authority's (``resume.py``)
    resumed_from: Checkpoint | None = None
    #: the handler's result, waiting to be submitted
    result: TaskResult | None = None
    #: a handler that raised: waiting to be reported as the owner's ``work.fail``
    failure: BaseException | None = None
    #: the store has shown this lease active (before that, a queued row is not a loss)
    seen_active: bool = False

    @property
    def key(self) -> tuple[str, str]:
        return (self.group, self.work_item)

    @property
    def lease_length_s(self) -> float:
        return max(1.0, (self.lease_expires_at - self.lease_started_at).total_seconds())

    def used_seconds(self) -> float:
        return max(0.0, time.monotonic() - self.started_mono)

    @property
    def reversible(self) -> bool:
        """Whether the work may go on without the authority (R11.5-04): the contract allows
        no side effects (``budgets.side_effects`` is 0) and its risk class is low. Anything
        else stops at its next checkpoint as soon as the worker is offline (R11.5-05)."""
        budgets = self.contract.get("budgets") or {}
        risk = (self.contract.get("risk") or {}).get("class")
        return budgets.get("side_effects") == 0 and risk == "low"


def assignment(
    run: Running,
    tokens: list[Mapping[str, Any]],
    *,
    answers: Sequence[Mapping[str, str]] = (),
) -> Assignment:
    """``answers``: the settled answers to the handler's essential questions, which its
    mission context carries (``questions``, R10.1-04)."""
    contract = run.contract
    tool_calls = (contract.get("budgets") or {}).get("tool_calls")
    limit = float(tool_calls) if tool_calls is not None else UNLIMITED_TOOL_CALLS
    tools = (contract.get("allowed") or {}).get("tools") or []
    return Assignment(
        group=run.group,
        mission=run.mission,
        work_item=run.work_item,
        ownership_epoch=run.ownership_epoch,
        lease_id=run.lease_id,
        context={
            "group": run.group,
            "mission": run.mission,
            "work_item": run.work_item,
            "contract": dict(contract),
            "answers": [dict(answer) for answer in answers],
        },
        tokens={TOKEN_NAME: str(tokens[0]["token"])} if tokens else {},
        budgets=dict.fromkeys(tools, limit),
    )


def _declared(contract: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {output["name"]: output for output in contract.get("outputs") or []}


def _methods(contract: Mapping[str, Any]) -> dict[str, str]:
    return {c["id"]: c["method"] for c in contract.get("acceptance_criteria") or []}


def upload_outputs(authority: Any, run: Running, result: TaskResult) -> dict[str, str]:
    """Upload each output (R13.1-01) and publish its signed manifest (R13.1-03): name → digest."""
    declared = _declared(run.contract)
    digests: dict[str, str] = {}
    for output in result.outputs:
        spec = declared.get(output.name, {})
        media_type = output.media_type or str(spec.get("media_type") or "application/octet-stream")
        digest = authority.upload(output.data, content_type=media_type)
        digests[output.name] = digest
        schema = spec.get("schema")
        try:
            authority.publish(
                run.group,
                run.work_item,
                run.lease_id,
                digest=digest,
                media_type=media_type,
                schema=schema if isinstance(schema, str) else None,
                mission=run.mission,
            )
        except ApiError as error:
            # already published in the group, or the card version is not the registered one:
            # the authority publishes its own signed manifest at submission instead
            log.info("manifest of %s for %s not published: %s", digest, run.work_item, error)
    return digests


def evidence_items(
    run: Running, result: TaskResult, digests: Mapping[str, str]
) -> list[dict[str, Any]]:
    """``work.submit`` evidence (R13.2-02), each with its criterion's method (R13.2-04)."""
    methods = _methods(run.contract)
    items = []
    for evidence in result.evidence:
        items.append(
            {
                "criterion": evidence.criterion,
                "method": evidence.method or methods.get(evidence.criterion, "deterministic"),
                "result": {
                    "verdict": evidence.verdict,
                    "summary": evidence.summary,
                    "data": dict(evidence.data),
                },
                "artifacts": [digests[name] for name in evidence.outputs if name in digests],
            }
        )
    return items


def failure_body(run: Running, reason: str, *, producer: str) -> dict[str, Any]:
    """The owner's ``work.fail`` (R10.2-13): evidence against the first criterion, saying only
    what went wrong in kind (an exception type), never the handler's internals. The contract's
    retry policy decides whether it is tried again (R11.4-08)."""
    criteria = run.contract.get("acceptance_criteria") or [{"id": "c1", "method": "deterministic"}]
    first = criteria[0]
    return {
        "work_item": run.work_item,
        "lease_id": run.lease_id,
        "evidence": [
            {
                "criterion": first["id"],
                "method": first["method"],
                "result": {"verdict": "fail", "summary": reason, "data": {}},
                "producer": producer,
                "artifacts": [],
            }
        ],
    }
