"""The authority's own steps of a submission's review, run after commit (R13.2-03 steps 1–3).

``work.submitted`` opens a review on the WorkItem (``missionweave.protocol.work.assessment``)
listing the evidence the authority owes: artifact integrity and output schemas first
(``authority:integrity``), then each deterministic criterion whose contract declares checks.
This module pays that debt: it re-reads every submitted artifact against its digest, runs the
contract's named checks (pure functions of the protocol core) over the outputs' bytes, and
records each result as ``evidence.recorded`` with producer ``authority`` through the one write
path; it then asks the group's default reviewer agent for evidence on ``agent_review``
criteria (``review.request``) unless a coordinator already asked someone.

Everything is idempotent: each command's id is derived from (group, item, submission, step),
so a rerun — the periodic task after a hint already ran, two workers at once — replays
instead of recording twice, and evidence for a superseded submission is refused by the
decider. The work is triggered twice over: a hint after the submission commits
(``apps.ledger.reactions``) and the periodic task, which finds every submitted item whose
review still owes checks.
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from apps.ledger.write_path import AuthorityCommand, Outcome, submit_authority_batch
from apps.registry.models import Membership
from missionweave.protocol.artifacts.deterministic import (
    MAX_CHECKED_OUTPUT_BYTES,
    run_criterion_checks,
)
from missionweave.protocol.artifacts.outputs import (
    MAX_SCHEMA_OUTPUT_BYTES,
    parse_json_output,
    schema_outputs,
    validate_against_schema,
)
from missionweave.protocol.errors import ProtocolError
from missionweave.protocol.identifiers import AUTHORITY, is_agent
from missionweave.protocol.states import SUBMITTED
from missionweave.protocol.work.assessment import INTEGRITY, REQUEST, check_command_id
from missionweave.protocol.work.items import WorkItem as WorkItemState
from missionweave.wording import counted, listed

from .models import WorkItem

logger = logging.getLogger(__name__)

#: the largest output a check reads (one byte more than a check accepts, so a larger
#: output reaches the check, which calls it ``inconclusive``, instead of reading as missing)
MAX_CHECKED_BYTES = MAX_CHECKED_OUTPUT_BYTES + 1
DEFAULT_LIMIT = 200


@dataclass(frozen=True, slots=True)
class Store:
    """What the review reads from the artifact store."""

    #: whether the stored object still hashes to its digest (R13.1-05)
    intact: Callable[[str], bool]
    #: the verified bytes, or ``None`` when missing, corrupted or larger than the bound
    read: Callable[[str, int], bytes | None]


@dataclass(frozen=True, slots=True)
class ReviewReport:
    examined: int = 0
    recorded: int = 0
    replayed: int = 0
    refused: int = 0


def owing(limit: int = DEFAULT_LIMIT) -> list[tuple[str, str]]:
    """Submitted items whose review still owes the authority's evidence, oldest first."""
    rows = (
        WorkItem.objects.filter(state=SUBMITTED)
        .exclude(data__review__pending_checks=[])
        .exclude(data__review__isnull=True)
        .order_by("pk")
        .values_list("group_id", "work_item_id")[:limit]
    )
    return list(rows)


def review_owing(store: Store, *, limit: int = DEFAULT_LIMIT) -> ReviewReport:
    """Pay what every owing review is owed (the periodic task)."""
    report = ReviewReport()
    for group_id, work_item in owing(limit):
        report = _add(report, review_submission(store, group_id, work_item))
    return report


def review_submission(store: Store, group_id: str, work_item: str) -> ReviewReport:
    """Record the authority's evidence owed to ``work_item``'s current submission."""
    row = WorkItem.objects.filter(group_id=group_id, work_item_id=work_item).first()
    if row is None or row.state != SUBMITTED:
        return ReviewReport()
    item = row.to_state()
    review = item.review or {}
    if not review.get("pending_checks"):
        return ReviewReport(examined=1)
    commands = _commands(store, group_id, item)
    outcomes = submit_authority_batch(group_id=group_id, commands=commands)
    return _counted(outcomes)


def _commands(store: Store, group_id: str, item: WorkItemState) -> list[AuthorityCommand]:
    review = item.review or {}
    submission = review["submission"]
    pending = review["pending_checks"]
    commands = []

    def evidence(criterion: str, result: dict[str, Any], artifacts: list[str]) -> None:
        body = {
            "work_item": item.id,
            "submission": submission,
            "criterion": criterion,
            "method": "deterministic",
            "result": result,
            "producer": AUTHORITY,
            "artifacts": artifacts,
        }
        command_id = check_command_id(group_id, item.id, submission, criterion)
        commands.append(AuthorityCommand("evidence.record", body, command_id))

    submitted = item.submission or {}
    outputs: dict[str, str] = submitted.get("outputs", {})
    if INTEGRITY in pending:
        evidence(INTEGRITY, integrity(store, item), list(submitted.get("artifacts", [])))
    for criterion in item.contract.get("acceptance_criteria", []):
        if criterion["id"] in pending:
            named = {check.get("output") for check in criterion.get("checks", [])}
            contents = {
                name: store.read(outputs[name], MAX_CHECKED_BYTES) if name in outputs else None
                for name in named
                if name is not None
            }
            cited = [outputs[name] for name in sorted(contents) if name in outputs]
            evidence(criterion["id"], run_criterion_checks(criterion, contents), cited)
    request = _review_request(group_id, item)
    if request is not None:
        commands.append(request)
    return commands


def integrity(store: Store, item: WorkItemState) -> dict[str, Any]:
    """R13.2-03 step 1: every submitted artifact still hashes to its digest, and every
    output declared with a JSON Schema validates against it."""
    submitted = item.submission or {}
    artifacts = [
        {"digest": digest, "intact": store.intact(digest)}
        for digest in submitted.get("artifacts", [])
    ]
    outputs = submitted.get("outputs", {})
    schemas = []
    for name, schema in schema_outputs(item.contract).items():
        data = store.read(outputs[name], MAX_SCHEMA_OUTPUT_BYTES) if name in outputs else None
        if data is None:
            schemas.append({"output": name, "valid": False, "error": "unreadable or not mapped"})
            continue
        try:
            validate_against_schema(parse_json_output(data, output=name), schema, output=name)
        except ProtocolError as refusal:
            schemas.append({"output": name, "valid": False, "error": refusal.message})
        else:
            schemas.append({"output": name, "valid": True})
    broken = [a["digest"] for a in artifacts if not a["intact"]]
    invalid = [s["output"] for s in schemas if not s["valid"]]
    verdict = "fail" if broken or invalid else "pass"
    summary = (
        f"{counted(len(artifacts), 'artifact')} intact, "
        f"{counted(len(schemas), 'output schema')} valid"
        if verdict == "pass"
        else f"corrupted: {listed(broken)}; invalid outputs: {listed(invalid)}"
    )
    return {
        "verdict": verdict,
        "summary": summary,
        "data": {"artifacts": artifacts, "outputs": schemas},
    }


def _review_request(group_id: str, item: WorkItemState) -> AuthorityCommand | None:
    """R13.2-03 step 3: the group's default reviewer agent, unless someone was asked."""
    review = item.review or {}
    criteria = [
        c["id"]
        for c in item.contract.get("acceptance_criteria", [])
        if c.get("method") == "agent_review"
    ]
    if not criteria or review.get("requests"):
        return None
    reviewer = default_reviewer(group_id, item)
    if reviewer is None:
        return None
    body = {
        "work_item": item.id,
        "reviewer": reviewer,
        "criteria": criteria,
        "submission": review["submission"],
    }
    command_id = check_command_id(group_id, item.id, review["submission"], REQUEST)
    return AuthorityCommand(REQUEST, body, command_id)


def default_reviewer(group_id: str, item: WorkItemState) -> str | None:
    """An active reviewer agent of the group other than the owner, the same one for the same
    item (spread over reviewers by the item id): the group default of R13.2-03 step 3."""
    members = Membership.objects.filter(group_id=group_id, active=True).values_list(
        "principal", "roles"
    )
    reviewers = sorted(
        principal
        for principal, roles in members
        if "reviewer" in roles and is_agent(principal) and principal != item.owner
    )
    if not reviewers:
        return None
    return reviewers[zlib.crc32(item.id.encode()) % len(reviewers)]


def _counted(outcomes: list[Outcome | ProtocolError]) -> ReviewReport:
    recorded = sum(1 for o in outcomes if isinstance(o, Outcome) and not o.replayed)
    replayed = sum(1 for o in outcomes if isinstance(o, Outcome) and o.replayed)
    refused = [o for o in outcomes if isinstance(o, ProtocolError)]
    for refusal in refused:
        logger.info("review step refused: %r", refusal)
    return ReviewReport(1, recorded, replayed, len(refused))


def _add(a: ReviewReport, b: ReviewReport) -> ReviewReport:
    return ReviewReport(
        a.examined + b.examined,
        a.recorded + b.recorded,
        a.replayed + b.replayed,
        a.refused + b.refused,
    )
