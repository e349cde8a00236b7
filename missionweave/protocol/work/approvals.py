"""The execution approval gate: ``approval.grant_execution`` and ``approval.refuse_execution``
(R10.2-06, R10.1-01(i)).

Each human mission_owner decides a contract revision once, granting or refusing it, with a
comment; every decision is kept on the item (``approval_log``). Grants count toward the
contract's quorum; a refusal stops that revision: ``work.start`` is ``APPROVAL_REQUIRED``
naming who refused and why, and nobody decides it again. Neither a grant nor a refusal
carries over to a corrected contract (R10.1-05): the new revision is decided afresh.
"""

from __future__ import annotations

from typing import Any

from .. import states as S
from ..errors import ErrorCode, ProtocolError
from ..facts import Command, Decision, NewEvent, View
from ..validation import check_fields, check_id, check_text, malformed
from .assessment import require_not_owner
from .checks import approvals_required, no_private_reasoning, require_item
from .items import WorkItem

GRANT = "approval.grant_execution"
GRANTED = "approval.execution_granted"
REFUSE = "approval.refuse_execution"
REFUSED = "approval.execution_refused"

#: decisions kept on the projection (the log keeps every one)
APPROVAL_LOG_LIMIT = 50


def _validate_decision(body: dict[str, Any], *, comment_required: bool) -> None:
    check_fields(body, required=("work_item", "contract_revision", "comment"))
    check_id(body["work_item"], "$.work_item")
    revision = body["contract_revision"]
    if isinstance(revision, bool) or not isinstance(revision, int) or revision < 1:
        raise malformed("contract_revision is a positive integer", "$.contract_revision")
    check_text(body["comment"], "$.comment", empty=not comment_required)


def validate_grant_execution(body: dict[str, Any]) -> None:
    _validate_decision(body, comment_required=False)


def validate_refuse_execution(body: dict[str, Any]) -> None:
    """A refusal says why (R10.2-06): its comment is required, and it is never private
    reasoning (R13.2-05)."""
    _validate_decision(body, comment_required=True)
    no_private_reasoning(body, "$", "R13.2-05")


def refusal_message(item: WorkItem) -> str:
    """Who refused the item's current revision and why, in words."""
    refusal = item.refusal or {}
    return (
        f"revision {refusal.get('revision')} of {item.id} was refused by "
        f"{refusal.get('principal')}: {refusal.get('comment')}"
    )


def _require_decidable(item: WorkItem, command: Command) -> None:
    """The checks a grant and a refusal share, in this order: the state, the revision, who
    may not approve (SELF_APPROVAL), one decision per person, a revision already refused."""
    S.require_state(command.type, item.state, work_item=item.id)
    if command.body["contract_revision"] != item.revision:
        raise ProtocolError(
            ErrorCode.STALE_REVISION,
            f"the contract of {item.id} is at revision {item.revision}",
            requirement="R10.1-05",
            details={"revision": item.revision},
        )
    verb = "refuse" if command.type == REFUSE else "approve"
    if command.actor in (item.authorized_by, item.proposed_by):
        raise ProtocolError(
            ErrorCode.SELF_APPROVAL,
            f"{command.actor} asked for {item.id} and cannot {verb} its execution",
            requirement="R10.2-06",
        )
    require_not_owner(item, command.actor, f"{verb} the execution of")
    refused_by = (item.refusal or {}).get("principal")
    if command.actor in item.approvals or command.actor == refused_by:
        decided = "refused" if command.actor == refused_by else "approved"
        raise ProtocolError(
            ErrorCode.DUPLICATE_APPROVAL,
            f"{command.actor} already {decided} revision {item.revision} of {item.id}",
            requirement="R10.2-06",
            details={"revision": item.revision, "decision": decided},
        )
    if item.refusal is not None:
        raise ProtocolError(
            ErrorCode.ILLEGAL_TRANSITION,
            f"{refusal_message(item)}; a coordinator revises the contract or cancels",
            requirement="R10.2-06",
            details={"work_item": item.id, "refusal": item.refusal},
        )


def decide_grant_execution(view: View, command: Command) -> Decision:
    item = require_item(view, command.body["work_item"])
    _require_decidable(item, command)
    needed = approvals_required(item)
    return Decision(
        [NewEvent(GRANTED, dict(command.body))],
        {"approvals": len(item.approvals) + 1, "approvals_required": needed},
    )


def decide_refuse_execution(view: View, command: Command) -> Decision:
    """R10.2-06: the revision is refused; the item stays ``queued`` and cannot start."""
    item = require_item(view, command.body["work_item"])
    _require_decidable(item, command)
    return Decision(
        [NewEvent(REFUSED, dict(command.body))],
        {"refused": True, "revision": item.revision},
    )


def require_not_refused(item: WorkItem) -> None:
    """``work.start`` of a refused revision is ``APPROVAL_REQUIRED``, naming who and why."""
    if item.refusal is None:
        return
    raise ProtocolError(
        ErrorCode.APPROVAL_REQUIRED,
        refusal_message(item),
        requirement="R10.2-06",
        details={
            "refused_by": item.refusal["principal"],
            "comment": item.refusal["comment"],
            "revision": item.refusal["revision"],
        },
    )


def decision_entry(
    decision: str, *, principal: str, payload: dict[str, Any], sequence: int, recorded_at: str
) -> dict[str, Any]:
    """One ``approval_log`` entry."""
    return {
        "principal": principal,
        "decision": decision,
        "comment": payload["comment"],
        "revision": payload["contract_revision"],
        "sequence": sequence,
        "recorded_at": recorded_at,
    }
