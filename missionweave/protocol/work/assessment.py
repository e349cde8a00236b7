"""The review of a submission, in R13.2-03's order, as the authority keeps it (R13.2-01..04).

A worker's claim is not enough (R13.2-01). When ``work.submitted`` is appended, the WorkItem
starts a fresh ``review``: the authority's own checks it still owes — artifact integrity and
output schemas (``authority:integrity``, step 1), then each deterministic criterion whose
contract declares ``checks`` (step 2) — which a Celery task runs after commit and records as
``evidence.recorded`` with producer ``authority``; ``review.requested`` asks a reviewer agent
for evidence on ``agent_review`` criteria (step 3), answered by its ``evidence.record``; every
piece of evidence is folded into a per-criterion summary (step 4), and all of it stays on the
item for the final human approval (step 5).

The checks gate the acceptance (issue 34): the product's promise is work *proven* before it
is accepted, so while the authority still owes a check of the current submission
``work.accept_result`` is ``CHECKS_PENDING``, and once it recorded a ``fail`` for the integrity
or a deterministic criterion it is ``CHECKS_FAILED`` — so is a check it recorded as
``inconclusive``, which proves nothing and which a review's ``pass`` would contradict (sending
the item back with ``work.fail`` stays allowed). A running review reservation holds the
decision for its holder: anyone else's ``work.accept_result`` or ``work.fail`` of the
submission, and another person's ``evidence.record``, is ``REVIEW_RESERVED`` — a person
judging an item is not raced by an agent. ``acceptance_refusal`` and ``decision_refusal`` say
which refusal a command would get now, in the order role and state, reservation, pending
checks, failed checks; the deciders and the screens (why a button is disabled) both ask
them.

Who may judge: the item's owner never records a verdict on its own item, accepts its result
or grants its execution (``SELF_APPROVAL``), whatever roles it also holds.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from .. import states as S
from ..errors import ErrorCode, ProtocolError
from ..facts import Command, Decision, NewEvent, StateKey, View
from ..identifiers import AUTHORITY, is_human
from ..memberships import membership_key
from ..timefmt import parse_timestamp
from ..validation import check_fields, check_id, check_principal, malformed
from .checks import item_keys, require_item
from .items import WorkItem

#: the authority's own criterion for R13.2-03 step 1 (reserved: no contract declares it)
INTEGRITY = "authority:integrity"
REQUEST = "review.request"
REQUESTED = "review.requested"
ACCEPT_RESULT = "work.accept_result"
FAIL = "work.fail"
EVIDENCE_RECORD = "evidence.record"
#: who judges a submission: records evidence, reserves its review, is asked for one (R13.2-03)
REVIEWER_ROLES = frozenset({"reviewer", "coordinator", "mission_owner"})


def require_not_owner(item: WorkItem, actor: str, what: str) -> None:
    """The owner does not judge its own work (R13.2-01): no verdict, acceptance or grant."""
    if item.owner is not None and actor == item.owner:
        raise ProtocolError(
            ErrorCode.SELF_APPROVAL,
            f"{actor} owns {item.id} and cannot {what} it",
            requirement="R13.2-01",
            details={"work_item": item.id},
        )


def check_producer_and_method(
    item: WorkItem, evidence: dict[str, Any], actor: str, path: str
) -> None:
    """An evidence item's producer is its sender, and its method its criterion's (R13.2-04).

    Only the authority records evidence on its own criterion (``authority:integrity``)."""
    if evidence["producer"] != actor:
        raise malformed(f"the producer is the sender, {actor}", f"{path}.producer", "R13.2-04")
    criterion = criteria_by_id(item).get(evidence["criterion"])
    if evidence["criterion"] == INTEGRITY and actor != AUTHORITY:
        raise malformed(
            f"{INTEGRITY} is recorded by the authority", f"{path}.criterion", "R13.2-03"
        )
    if criterion is not None and evidence["method"] != criterion.get("method"):
        raise malformed(
            f"criterion {criterion['id']} is judged by {criterion.get('method')}",
            f"{path}.method",
            "R13.2-04",
        )


def criteria_by_id(item: WorkItem) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in item.contract.get("acceptance_criteria", [])}


def owed_checks(contract: dict[str, Any]) -> list[str]:
    """The evidence the authority owes a fresh submission, in R13.2-03 order."""
    owed = [INTEGRITY]
    for criterion in contract.get("acceptance_criteria", []):
        if criterion.get("method") == "deterministic" and criterion.get("checks"):
            owed.append(criterion["id"])
    return owed


def fresh_review(contract: dict[str, Any], submission: int, submitter: str) -> dict[str, Any]:
    """The review a ``work.submitted`` at ``submission`` by ``submitter`` opens."""
    criteria = {
        c["id"]: {"method": c.get("method"), "status": "claimed", "evidence": []}
        for c in contract.get("acceptance_criteria", [])
    }
    criteria[INTEGRITY] = {"method": "deterministic", "status": "checking", "evidence": []}
    review = {
        "submission": submission,
        "submitter": submitter,
        "pending_checks": owed_checks(contract),
        "requests": [],
        "criteria": criteria,
        #: who is reviewing it now, advisory (``reservations``): {reviewer, expires_at, sequence}
        "reservation": None,
    }
    return with_statuses(review)


def with_evidence(
    review: dict[str, Any], evidence: dict[str, Any], sequence: int
) -> dict[str, Any]:
    """``review`` after one more piece of evidence (R13.2-03 step 4)."""
    criterion = evidence["criterion"]
    producer = evidence["producer"]
    entry = {
        "sequence": sequence,
        "producer": producer,
        "method": evidence["method"],
        "verdict": evidence["result"]["verdict"],
        "summary": evidence["result"]["summary"],
    }
    criteria = dict(review["criteria"])
    current = criteria.get(criterion, {"method": evidence["method"], "evidence": []})
    criteria[criterion] = {**current, "evidence": [*current["evidence"], entry]}
    pending = list(review["pending_checks"])
    if producer == AUTHORITY and criterion in pending:
        pending.remove(criterion)
    requests = [
        {**r, "answered": sorted({*r["answered"], criterion})}
        if r["reviewer"] == producer and criterion in r["criteria"]
        else r
        for r in review["requests"]
    ]
    updated = {**review, "criteria": criteria, "pending_checks": pending, "requests": requests}
    return with_statuses(updated)


def with_request(review: dict[str, Any], request: dict[str, Any], sequence: int) -> dict[str, Any]:
    entry = {
        "sequence": sequence,
        "reviewer": request["reviewer"],
        "criteria": list(request["criteria"]),
        "answered": [],
    }
    return with_statuses({**review, "requests": [*review["requests"], entry]})


def with_statuses(review: dict[str, Any]) -> dict[str, Any]:
    """Each criterion's status from its evidence: an independent ``fail`` wins, then
    ``inconclusive``, then ``pass``; with only the worker's claim it is ``claimed`` — or
    ``checking`` while the authority owes a check, ``awaiting_review`` while a reviewer is
    asked (R13.2-01: a claim alone is never a pass)."""
    awaiting = {
        criterion
        for request in review["requests"]
        for criterion in request["criteria"]
        if criterion not in request["answered"]
    }
    criteria = {}
    for criterion, summary in review["criteria"].items():
        independent = [
            e["verdict"] for e in summary["evidence"] if e["producer"] != review["submitter"]
        ]
        if "fail" in independent:
            status = "fail"
        elif "inconclusive" in independent:
            status = "inconclusive"
        elif "pass" in independent:
            status = "pass"
        elif criterion in review["pending_checks"]:
            status = "checking"
        elif criterion in awaiting:
            status = "awaiting_review"
        else:
            status = "claimed"
        criteria[criterion] = {**summary, "status": status}
    return {**review, "criteria": criteria}


# --- what holds a decision on a submission (issue 34, R13.2-03) -----------------------------


def live_reservation(item: WorkItem, now: datetime) -> dict[str, Any] | None:
    """The item's reservation while it runs at ``now``, else ``None`` (expiry is by itself).

    Only a ``submitted`` item carries one: a new submission, or the item leaving
    ``submitted``, clears it (``item_evolvers``)."""
    if item.state != S.SUBMITTED:
        return None
    reservation = (item.review or {}).get("reservation")
    if reservation is None or parse_timestamp(reservation["expires_at"]) <= now:
        return None
    return reservation


def authority_checked(item: WorkItem) -> dict[str, str]:
    """Each criterion the authority checked on the current submission → its recorded
    verdict (``fail`` if any of its results failed, else its latest): the integrity check,
    then deterministic criteria in the contract's order (R13.2-03)."""
    recorded: dict[str, str] = {}
    criteria = (item.review or {}).get("criteria") or {}
    in_order = sorted(criteria.items(), key=lambda pair: pair[0] != INTEGRITY)  # step 1 first
    for criterion, summary in in_order:
        if summary.get("method") != "deterministic":
            continue
        verdicts = [e["verdict"] for e in summary["evidence"] if e["producer"] == AUTHORITY]
        if verdicts:
            recorded[criterion] = "fail" if "fail" in verdicts else verdicts[-1]
    return recorded


def pending_checks(item: WorkItem) -> list[str]:
    """The checks the authority still owes the current submission, in R13.2-03 order."""
    if item.state != S.SUBMITTED:
        return []
    return list((item.review or {}).get("pending_checks") or [])


def failed_checks(item: WorkItem) -> list[str]:
    """The criteria (``authority:integrity`` included) whose check the authority recorded as
    anything but a pass: a ``fail``, or ``inconclusive`` (the check could not be applied, so
    it proves nothing, and a review's ``pass`` would contradict it)."""
    if item.state != S.SUBMITTED:
        return []
    return [c for c, verdict in authority_checked(item).items() if verdict != "pass"]


def reserved_refusal(item: WorkItem, actor: str, now: datetime) -> ProtocolError | None:
    """``REVIEW_RESERVED`` while someone other than ``actor`` holds a running reservation."""
    held = live_reservation(item, now)
    if held is None or held["reviewer"] == actor:
        return None
    return ProtocolError(
        ErrorCode.REVIEW_RESERVED,
        f"{held['reviewer']} is reviewing {item.id} until {held['expires_at']}",
        requirement="R13.2-03",
        details={"reserved_by": held["reviewer"], "expires_at": held["expires_at"]},
    )


def checks_refusal(item: WorkItem) -> ProtocolError | None:
    """``CHECKS_PENDING`` while the authority owes a check, else ``CHECKS_FAILED`` when one
    did not pass (R13.2-03 steps 1–2: work is proven before it is accepted)."""
    pending = pending_checks(item)
    if pending:
        return ProtocolError(
            ErrorCode.CHECKS_PENDING,
            f"the authority is still checking the submission of {item.id}: {', '.join(pending)}",
            requirement="R13.2-03",
            details={"pending": pending},
        )
    failed = failed_checks(item)
    if failed:
        return checks_failed(item, failed)
    return None


def checks_failed(item: WorkItem, failed: list[str]) -> ProtocolError:
    """``CHECKS_FAILED`` naming the criteria whose authority check did not pass."""
    recorded = authority_checked(item)
    named = ", ".join(f"{criterion} ({recorded.get(criterion, 'fail')})" for criterion in failed)
    return ProtocolError(
        ErrorCode.CHECKS_FAILED,
        f"the authority's check of {named} did not pass on the submission of {item.id}: "
        "send it back instead",
        requirement="R13.2-03",
        details={"failed": failed},
    )


def acceptance_refusal(item: WorkItem, actor: str, now: datetime) -> ProtocolError | None:
    """The refusal ``work.accept_result`` of ``item`` by ``actor`` gets at ``now`` after the
    role and state checks — ``REVIEW_RESERVED``, then ``CHECKS_PENDING``, then
    ``CHECKS_FAILED`` — or ``None`` (issue 34, R13.2-03). Pure: a screen asks it to say why
    Accept is not possible yet."""
    if item.state != S.SUBMITTED:
        return None
    return reserved_refusal(item, actor, now) or checks_refusal(item)


def decision_refusal(
    item: WorkItem, actor: str, now: datetime, command_type: str
) -> ProtocolError | None:
    """The issue 34 refusal ``command_type`` on ``item`` by ``actor`` gets at ``now``, or
    ``None``: ``work.accept_result`` as ``acceptance_refusal``; ``work.fail`` of a submission
    by anyone but the reservation's holder, and ``evidence.record`` by another person
    (``user:``), are ``REVIEW_RESERVED``. Evidence from the authority and agents stays
    welcome: it is input to the person's judgement, not a decision."""
    if command_type == ACCEPT_RESULT:
        return acceptance_refusal(item, actor, now)
    if command_type == FAIL:
        return reserved_refusal(item, actor, now)
    if command_type == EVIDENCE_RECORD and is_human(actor):
        return reserved_refusal(item, actor, now)
    return None


# --- review.request (R13.2-03 step 3) ---------------------------------------------------------


def validate_request(body: dict[str, Any]) -> None:
    check_fields(body, required=("work_item", "reviewer", "criteria"), optional=("submission",))
    check_id(body["work_item"], "$.work_item")
    check_principal(body["reviewer"], "$.reviewer")
    criteria = body["criteria"]
    if not isinstance(criteria, list) or not criteria:
        raise malformed("criteria is a non-empty list of criterion ids", "$.criteria", "R13.2-03")
    for index, criterion in enumerate(criteria):
        if not isinstance(criterion, str):
            raise malformed("a criterion id", f"$.criteria[{index}]", "R13.2-03")
    if "submission" in body and (
        isinstance(body["submission"], bool) or not isinstance(body["submission"], int)
    ):
        raise malformed("submission is the sequence of work.submitted", "$.submission")


def keys_of_request(command: Command, view: View) -> set[StateKey]:
    return {*item_keys(command, view), membership_key(command.body["reviewer"])}


def decide_request(view: View, command: Command) -> Decision:
    """A coordinator (or the authority, for the group's default reviewer) asks a reviewer
    for evidence on ``agent_review`` criteria of the current submission."""
    item = require_item(view, command.body["work_item"])
    if item.state != S.SUBMITTED:  # beside the state table: it changes no state
        raise ProtocolError(
            ErrorCode.ILLEGAL_TRANSITION,
            f"{item.id} is {item.state}: only a submission is reviewed",
            requirement="R13.2-03",
            details={"work_item": item.id, "state": item.state},
        )
    require_current_submission(item, command.body)
    criteria = criteria_by_id(item)
    for index, criterion in enumerate(command.body["criteria"]):
        if criteria.get(criterion, {}).get("method") != "agent_review":
            raise malformed(
                "only agent_review criteria of the contract are asked of a reviewer",
                f"$.criteria[{index}]",
                "R13.2-03",
            )
    reviewer = command.body["reviewer"]
    member = view.get(membership_key(reviewer))
    if member is None or not member.active or "reviewer" not in member.roles:
        raise ProtocolError(
            ErrorCode.NOT_A_MEMBER,
            f"{reviewer} is not a reviewer of this group",
            requirement="R13.2-03",
            details={"reviewer": reviewer},
        )
    require_not_owner(item, reviewer, "review")
    payload = {**command.body, "submission": (item.review or {}).get("submission")}
    return Decision([NewEvent(REQUESTED, payload)])


def require_current_submission(item: WorkItem, body: dict[str, Any]) -> None:
    """A check or request made for an earlier submission is not recorded against a later one."""
    if "submission" not in body:
        return
    current = (item.review or {}).get("submission")
    if body["submission"] != current:
        raise ProtocolError(
            ErrorCode.ILLEGAL_TRANSITION,
            f"submission {body['submission']} of {item.id} is not its current one ({current})",
            requirement="R13.2-03",
            details={"submission": current},
        )


def check_command_id(group: str, work_item: str, submission: int, what: str) -> str:
    """The deterministic id of the authority's command for one step of one submission's
    review: a rerun of the checks is an idempotent replay, never a second record."""
    seed = f"{group}\n{work_item}\n{submission}\n{what}".encode()
    return f"review-{hashlib.sha256(seed).hexdigest()[:40]}"
