"""The coordinator's side: ``work.unblock``, ``evidence.record``, ``work.accept_result``,
``work.fail`` and ``work.cancel`` (R10.2-10, R10.2-12..14, R13.2)."""

from __future__ import annotations

from typing import Any

from .. import states as S
from ..errors import ErrorCode, ProtocolError
from ..facts import Command, Decision, NewEvent, View
from ..identifiers import is_human
from ..validation import (
    check_choice,
    check_fields,
    check_id,
    check_text,
    malformed,
)
from .assessment import (
    acceptance_refusal,
    check_producer_and_method,
    decision_refusal,
    require_current_submission,
    require_not_owner,
)
from .checks import (
    REVIEW_VERDICTS,
    check_evidence_item,
    evidence_list,
    evidence_missing,
    no_private_reasoning,
    require_current_lease_id,
    require_item,
    require_live_lease,
    require_owner,
    start_deadline_for,
    uncovered_criteria,
)
from .leases import owner_failure

# --- coordinator commands ------------------------------------------------------------------


def validate_unblock(body: dict[str, Any]) -> None:
    check_fields(body, required=("work_item", "to"))
    check_id(body["work_item"], "$.work_item")
    check_choice(body["to"], (S.QUEUED, S.OPEN), "$.to")


def decide_unblock(view: View, command: Command) -> Decision:
    item = require_item(view, command.body["work_item"])
    S.require_state(command.type, item.state, work_item=item.id)
    if item.child is not None and item.child.get("status") == "running":
        raise ProtocolError(
            ErrorCode.ILLEGAL_TRANSITION,
            f"{item.id} is blocked by its running child mission",
            requirement="R10.2-15",
            details={"child": item.child},
        )
    if command.body["to"] == S.QUEUED and item.owner is None:
        raise ProtocolError(
            ErrorCode.ILLEGAL_TRANSITION,
            f"{item.id} has no owner to queue it for",
            requirement="R10.2-10",
        )
    payload = dict(command.body)
    if command.body["to"] == S.QUEUED:  # R10.2-10: back in its owner's queue, with time to start
        payload["start_deadline"] = start_deadline_for(item, command.now)
    return Decision([NewEvent("work.unblocked", payload)])


def validate_evidence_record(body: dict[str, Any]) -> None:
    if not isinstance(body.get("work_item"), str):
        raise malformed("missing field 'work_item'", "$.work_item")
    check_id(body["work_item"], "$.work_item")
    submission = body.get("submission")
    if "submission" in body and (isinstance(submission, bool) or not isinstance(submission, int)):
        raise malformed("submission is the sequence of work.submitted", "$.submission")
    check_evidence_item(
        {k: v for k, v in body.items() if k not in ("work_item", "submission")}, "$"
    )


def decide_evidence_record(view: View, command: Command) -> Decision:
    """R13.2-03, R13.2-04: evidence on the current submission, produced by its sender (the
    authority's own for its checks), with its criterion's method; never by the item's owner.
    Another person's evidence waits for a running reservation's holder (``REVIEW_RESERVED``);
    the authority's and agents' does not (issue 34)."""
    item = require_item(view, command.body["work_item"])
    S.require_state(command.type, item.state, work_item=item.id)
    require_not_owner(item, command.actor, "record a verdict on")
    require_current_submission(item, command.body)
    check_producer_and_method(item, command.body, command.actor, "$")
    _raise(decision_refusal(item, command.actor, command.now, command.type))
    return Decision([NewEvent("evidence.recorded", dict(command.body))])


def validate_accept_result(body: dict[str, Any]) -> None:
    check_fields(body, required=("work_item", "review"))
    check_id(body["work_item"], "$.work_item")
    review = body["review"]
    if not isinstance(review, dict):
        raise malformed("review is {verdicts, summary}", "$.review", "R13.2-03")
    no_private_reasoning(review, "$.review", "R13.2-05")
    check_fields(review, required=("verdicts", "summary"), path="$.review")
    check_text(review["summary"], "$.review.summary", empty=True)
    verdicts = review["verdicts"]
    if not isinstance(verdicts, list):
        raise malformed("verdicts is a list", "$.review.verdicts", "R13.2-03")
    for index, verdict in enumerate(verdicts):
        path = f"$.review.verdicts[{index}]"
        if not isinstance(verdict, dict):
            raise malformed("a verdict is {criterion, verdict, note}", path, "R13.2-03")
        check_fields(verdict, required=("criterion", "verdict", "note"), path=path)
        check_text(verdict["criterion"], f"{path}.criterion", max_length=200)
        check_choice(verdict["verdict"], REVIEW_VERDICTS, f"{path}.verdict")
        check_text(verdict["note"], f"{path}.note", empty=True)


def _raise(refusal: ProtocolError | None) -> None:
    if refusal is not None:
        raise refusal


def decide_accept_result(view: View, command: Command) -> Decision:
    """R10.2-12: verified on a review that passes every criterion; a ``human_review``
    criterion needs a human mission_owner's review (wire.md §9).

    After the role and state checks, a running reservation by someone else, a check the
    authority still owes and a check that did not pass refuse it in that order (issue 34,
    R13.2-03): a review's ``pass`` never overrides the authority's own check."""
    item = require_item(view, command.body["work_item"])
    S.require_state(command.type, item.state, work_item=item.id)
    require_not_owner(item, command.actor, "accept the result of")
    criteria = item.contract.get("acceptance_criteria", [])
    if any(c.get("method") == "human_review" for c in criteria) and not (
        is_human(command.actor) and "mission_owner" in command.actor_roles
    ):
        raise ProtocolError(
            ErrorCode.FORBIDDEN,
            "a human_review criterion is accepted by a human mission_owner",
            requirement="R13.2-03",
        )
    _raise(acceptance_refusal(item, command.actor, command.now))
    verdicts = {v["criterion"]: v["verdict"] for v in command.body["review"]["verdicts"]}
    missing = uncovered_criteria(item, verdicts)
    if missing:
        raise evidence_missing(missing, f"no verdict for {', '.join(missing)}")
    failing = [criterion for criterion, verdict in verdicts.items() if verdict != "pass"]
    if failing:
        raise ProtocolError(
            ErrorCode.ILLEGAL_TRANSITION,
            f"criteria {', '.join(failing)} did not pass: fail the item or offer it again",
            requirement="R10.2-12",
            details={"failing": failing},
        )
    return Decision([NewEvent("work.result_accepted", dict(command.body))])


def validate_fail(body: dict[str, Any]) -> None:
    check_fields(body, required=("work_item", "evidence"), optional=("lease_id", "permanent"))
    check_id(body["work_item"], "$.work_item")
    if body.get("lease_id") is not None:
        check_id(body["lease_id"], "$.lease_id")
    if "permanent" in body and not isinstance(body["permanent"], bool):
        raise malformed("permanent is true or false", "$.permanent", "R11.4-10")
    evidence_list(body["evidence"], "$.evidence")


def _fail_path(command: Command) -> str:
    """Who is failing the item (wire.md §9): ``owner`` (with its lease id, or a worker
    without the coordinator's role), ``coordinator``, or a human ``mission_owner`` sending a
    reviewed submission back (R13.2-03 step 5)."""
    roles = command.actor_roles
    if "lease_id" in command.body:
        return "owner"
    if "coordinator" in roles:
        return "coordinator"
    if "mission_owner" in roles and is_human(command.actor):
        return "mission_owner"
    if "worker" in roles:
        return "owner"
    raise ProtocolError(
        ErrorCode.FORBIDDEN,
        "a mission_owner sends a submission back as a human only",
        requirement="wire§9",
        details={"allowed_roles": ["coordinator", "mission_owner (human)", "owner"]},
    )


def decide_fail(view: View, command: Command) -> Decision:
    """R10.2-13: the owner (with its lease id) or a coordinator fails the item, with evidence;
    a human mission_owner fails a ``submitted`` one, sending the reviewed result back
    (R13.2-03 step 5), never its own.

    The owner's failure is retried automatically while the contract's retry policy allows
    (R11.4-08); a coordinator's or mission_owner's failure is final."""
    item = require_item(view, command.body["work_item"])
    path = _fail_path(command)
    if path == "owner":
        require_owner(item, command.actor)
        require_current_lease_id(item, command.body.get("lease_id", ""))
        S.require_state(command.type, item.state, work_item=item.id)
        if item.state == S.ACTIVE:
            # R11.3-09: like every command under a lease, a failure needs it live — an owner
            # whose lease ran out must not schedule itself a retry past the reassignment
            require_live_lease(item, command.now)
    else:
        S.require_state(command.type, item.state, work_item=item.id)
    if path == "mission_owner":
        if item.state != S.SUBMITTED:
            raise ProtocolError(
                ErrorCode.ILLEGAL_TRANSITION,
                f"{item.id} is {item.state}: a mission_owner fails only a submission",
                requirement="R13.2-03",
                details={"work_item": item.id, "state": item.state, "allowed_from": [S.SUBMITTED]},
            )
        require_not_owner(item, command.actor, "fail the result of")
    if item.state == S.SUBMITTED:  # issue 34: a running reservation's holder decides
        _raise(decision_refusal(item, command.actor, command.now, command.type))
    if not command.body["evidence"]:
        raise evidence_missing(["failure evidence"], "a failure carries evidence", "R10.2-13")
    if path == "owner" and item.state == S.ACTIVE:
        event = owner_failure(item, command)
        return Decision([event], {"outcome": event.type})
    return Decision([NewEvent("work.failed", dict(command.body))])


def validate_cancel(body: dict[str, Any]) -> None:
    check_fields(body, required=("work_item", "reason"))
    check_id(body["work_item"], "$.work_item")
    check_text(body["reason"], "$.reason")


def decide_cancel(view: View, command: Command) -> Decision:
    item = require_item(view, command.body["work_item"])
    S.require_state(command.type, item.state, work_item=item.id)
    return Decision([NewEvent("work.cancelled", dict(command.body))])
