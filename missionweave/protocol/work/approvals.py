"""The execution approval gate: ``approval.grant_execution`` and ``approval.refuse_execution``
(R10.2-06, R10.1-01(i)).

Each human mission_owner decides a contract revision once, granting or refusing it, with a
comment; every decision is kept on the item (``approval_log``). Grants count toward the
contract's quorum; a refusal stops that revision: its start-by clock stops (the sweep does
not reassign it), no worker accepts an offer of it or starts it (``APPROVAL_REQUIRED`` naming
who refused, why and when), the coordinator does not offer it again, and nobody decides it
again — it waits for a corrected contract or a cancel (issue 34). Neither a grant nor a
refusal carries over to a corrected contract (R10.1-05): the new revision is decided afresh.
"""

from __future__ import annotations

from typing import Any

from .. import states as S
from ..errors import ErrorCode, ProtocolError
from ..facts import Command, Decision, NewEvent, View
from ..identifiers import is_human
from ..memberships import Membership
from ..validation import check_fields, check_id, check_text, malformed
from .assessment import require_not_owner
from .checks import approvals_required, no_private_reasoning, require_item
from .items import WorkItem

GRANT = "approval.grant_execution"
GRANTED = "approval.execution_granted"
REFUSE = "approval.refuse_execution"
REFUSED = "approval.execution_refused"
#: who may decide an execution (wire.md §9): a person holding mission_owner (``humans_only``)
GRANT_ROLES = frozenset({"mission_owner"})

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
    """Who refused the item's current revision, when and why, in words (said once)."""
    refusal = item.refusal or {}
    return (
        f"revision {refusal.get('revision')} of {item.id} was refused by "
        f"{refusal.get('principal')} at {refusal.get('recorded_at')}: {refusal.get('comment')}"
    )


def refusal_details(item: WorkItem) -> dict[str, Any]:
    """The refusal as structured details: who refused, why, when and which revision."""
    refusal = item.refusal or {}
    return {
        "refused_by": refusal.get("principal"),
        "comment": refusal.get("comment"),
        "refused_at": refusal.get("recorded_at"),
        "revision": refusal.get("revision"),
    }


def _own_decision(item: WorkItem, actor: str) -> dict[str, Any] | None:
    """``actor``'s own decision on the current revision (the latest, from ``approval_log``)."""
    mine = [
        entry
        for entry in item.approval_log
        if entry["principal"] == actor and entry["revision"] == item.revision
    ]
    return mine[-1] if mine else None


def duplicate_decision(item: WorkItem, actor: str) -> ProtocolError:
    """``DUPLICATE_APPROVAL`` saying, once, what ``actor`` already decided, when and why."""
    refused_by = (item.refusal or {}).get("principal")
    decided = "refused" if actor == refused_by else "approved"
    entry = (item.refusal if decided == "refused" else _own_decision(item, actor)) or {}
    when = entry.get("recorded_at")
    comment = entry.get("comment") or ""
    message = f"{actor} already {decided} revision {item.revision} of {item.id}"
    if when:
        message += f" at {when}"
    if comment:
        message += f": {comment}"
    details: dict[str, Any] = {
        "revision": item.revision,
        "decision": decided,
        "decided_by": actor,
        "decided_at": when,
        "comment": comment,
    }
    if decided == "refused":
        details.update(refusal_details(item))
    return ProtocolError(
        ErrorCode.DUPLICATE_APPROVAL, message, requirement="R10.2-06", details=details
    )


def _require_decidable(item: WorkItem, command: Command) -> None:
    require_decidable(item, command.actor, command.type, revision=command.body["contract_revision"])


def require_decidable(item: WorkItem, actor: str, type_: str, *, revision: int) -> None:
    """The checks a grant and a refusal share, in this order: the state, the revision, who
    may not approve (SELF_APPROVAL), one decision per person, a revision already refused."""
    S.require_state(type_, item.state, work_item=item.id)
    if revision != item.revision:
        raise ProtocolError(
            ErrorCode.STALE_REVISION,
            f"the contract of {item.id} is at revision {item.revision}",
            requirement="R10.1-05",
            details={"revision": item.revision},
        )
    verb = "refuse" if type_ == REFUSE else "approve"
    if actor in (item.authorized_by, item.proposed_by):
        raise ProtocolError(
            ErrorCode.SELF_APPROVAL,
            f"{actor} asked for {item.id} and cannot {verb} its execution",
            requirement="R10.2-06",
        )
    require_not_owner(item, actor, f"{verb} the execution of")
    refused_by = (item.refusal or {}).get("principal")
    if actor in item.approvals or actor == refused_by:
        raise duplicate_decision(item, actor)
    if item.refusal is not None:
        raise ProtocolError(
            ErrorCode.ILLEGAL_TRANSITION,
            f"{refusal_message(item)}; a coordinator corrects the contract or cancels",
            requirement="R10.2-06",
            details={"work_item": item.id, "refusal": item.refusal, **refusal_details(item)},
        )


def grant_refusal(
    item: WorkItem, principal: str, membership: Membership | None
) -> ProtocolError | None:
    """Why ``principal`` (holding ``membership`` in the item's group) would be refused
    ``approval.grant_execution`` of the item's current revision now, or ``None``: they may
    still approve it (R10.2-06). The write path's own questions in its order — an active
    member (``NOT_A_MEMBER``), a person holding mission_owner (``FORBIDDEN``, wire.md §3
    step 7), then the decider's (state, who asked for it or owns it, a decision already
    given, a refused revision) — so a screen or a ``work.ask`` never decides it again."""
    try:
        if membership is None or not membership.active:
            raise ProtocolError(
                ErrorCode.NOT_A_MEMBER,
                f"{principal} is not a member of this group",
                requirement="wire§2",
            )
        if not is_human(principal) or not GRANT_ROLES.intersection(membership.roles):
            raise ProtocolError(
                ErrorCode.FORBIDDEN,
                f"{principal} is no mission owner who may grant {GRANT}",
                requirement="wire§9",
                details={"allowed_roles": sorted(GRANT_ROLES)},
            )
        require_decidable(item, principal, GRANT, revision=item.revision)
    except ProtocolError as refused:
        return refused
    return None


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
    """``work.accept_offer`` and ``work.start`` of a refused revision are
    ``APPROVAL_REQUIRED``, naming who refused, why and when (R10.2-06)."""
    if item.refusal is None:
        return
    raise ProtocolError(
        ErrorCode.APPROVAL_REQUIRED,
        f"{refusal_message(item)}; it waits for a corrected contract or a cancel",
        requirement="R10.2-06",
        details=refusal_details(item),
    )


def require_offerable(item: WorkItem, corrected: bool) -> None:
    """A refused revision is not offered again: only a corrected contract (a new revision,
    R10.1-05) or a cancel moves it on (R10.2-06, issue 34)."""
    if item.refusal is None or corrected:
        return
    raise ProtocolError(
        ErrorCode.ILLEGAL_TRANSITION,
        f"{refusal_message(item)}; offer a corrected contract or cancel it",
        requirement="R10.2-06",
        details={"work_item": item.id, **refusal_details(item)},
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
