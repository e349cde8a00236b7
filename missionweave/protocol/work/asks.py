"""Asking named people to act on a WorkItem: ``work.ask`` → ``work.asked`` (R10.2-06,
R13.2-03; issue 36 §4).

An execution approval waits for "N distinct mission owners" (R10.2-06) and a submission for
a reviewer (R13.2-03), but the log said nothing of *who* was expected: the two-person approval
of the issue worked only because the second owner happened to look. ``work.ask`` names them:
a coordinator or a mission owner asks named people for the execution approval of the item's
current contract revision (``for: "execution_approval"``) or for a review of its current
submission (``for: "review"``), with an optional short note. It changes no state and no right:
whoever may decide still decides, asked or not; it records who was asked, by whom and when,
on the item (``asks``), so inboxes put it first and notifications reach those people.

Only someone who could act on it now may be asked — the protocol core's own rules, never a
second copy: for an approval, the refusal ``approval.grant_execution`` would get from that
person (``approvals.grant_refusal``: a member, a person holding mission_owner, not the one who
proposed, authorised or owns the item, no decision given yet on this revision); for a review,
a member holding a role that judges submissions who does not own the item. Anyone else is
``FORBIDDEN`` with ``details`` naming the person, the path and the code their own command
would get (``reason``). The pure readers below (``open_asks``, ``asked_of``, ``approvers``,
``reviewers``) answer the screens and the notifications from the projection alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .. import states as S
from ..errors import ErrorCode, ProtocolError
from ..facts import Command, Decision, Fact, NewEvent, StateKey, View
from ..frozen import replace
from ..memberships import Membership, membership_key
from ..validation import (
    check_choice,
    check_fields,
    check_id,
    check_principal,
    check_text,
    malformed,
)
from .approvals import grant_refusal, refusal_details
from .assessment import REVIEWER_ROLES, require_current_submission, require_not_owner
from .checks import approvals_required, item_keys, require_item
from .items import WorkItem

ASK = "work.ask"
ASKED = "work.asked"
EXECUTION_APPROVAL = "execution_approval"
REVIEW = "review"
#: what one may ask for, and the rule each rests on
ASKS_FOR = {EXECUTION_APPROVAL: "R10.2-06", REVIEW: "R13.2-03"}
#: who may ask: those who steer the work (the coordinator, a mission owner)
ROLES = frozenset({"coordinator", "mission_owner"})
#: people named in one ask
MAX_ASKED = 20
#: a short note, not a conversation (that is ``work.message``)
NOTE_LIMIT = 1000
#: asks kept on the projection (the log keeps every one)
ASK_LOG_LIMIT = 50


def validate_ask(body: dict[str, Any]) -> None:
    """``work_item``, ``for``, ``asked`` (1..20 distinct principals), an optional ``note``;
    ``contract_revision`` only for an approval, ``submission`` only for a review."""
    check_fields(
        body,
        required=("work_item", "for", "asked"),
        optional=("note", "contract_revision", "submission"),
    )
    check_id(body["work_item"], "$.work_item")
    wanted = check_choice(body["for"], ASKS_FOR, "$.for")
    asked = body["asked"]
    if not isinstance(asked, list) or not 1 <= len(asked) <= MAX_ASKED:
        raise malformed(f"asked names 1 to {MAX_ASKED} principals", "$.asked", ASKS_FOR[wanted])
    for index, principal in enumerate(asked):
        check_principal(principal, f"$.asked[{index}]")
        if principal in asked[:index]:
            raise malformed("each person is named once", f"$.asked[{index}]", ASKS_FOR[wanted])
    if "note" in body:
        check_text(body["note"], "$.note", max_length=NOTE_LIMIT)
    _positive_only_for(body, "contract_revision", EXECUTION_APPROVAL)
    _positive_only_for(body, "submission", REVIEW)


def _positive_only_for(body: dict[str, Any], name: str, wanted: str) -> None:
    if name not in body:
        return
    if body["for"] != wanted:
        raise malformed(f"{name} goes with for: {wanted}", f"$.{name}")
    value = body[name]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise malformed(f"{name} is a positive integer", f"$.{name}")


def keys_of_ask(command: Command, view: View) -> set[StateKey]:
    """The item and the membership of each person named (only current members may act)."""
    return {*item_keys(command, view), *(membership_key(p) for p in command.body["asked"])}


def _illegal(item: WorkItem, message: str, requirement: str, **details: Any) -> ProtocolError:
    return ProtocolError(
        ErrorCode.ILLEGAL_TRANSITION,
        message,
        requirement=requirement,
        details={"work_item": item.id, **details},
    )


def require_approval_waits(item: WorkItem, body: dict[str, Any]) -> None:
    """The item waits for execution approvals of its current revision (R10.2-06): queued,
    the revision the asker read, not refused, gated by its contract and short of its quorum."""
    if item.state != S.QUEUED:
        raise _illegal(
            item,
            f"{item.id} is {item.state}: execution approvals are given while it is queued",
            "R10.2-06",
            state=item.state,
        )
    revision = body.get("contract_revision", item.revision)
    if revision != item.revision:
        raise ProtocolError(
            ErrorCode.STALE_REVISION,
            f"the contract of {item.id} is at revision {item.revision}",
            requirement="R10.1-05",
            details={"revision": item.revision},
        )
    if item.refusal is not None:
        raise _illegal(
            item,
            f"revision {item.revision} of {item.id} was refused: it waits for a corrected "
            "contract, not for approvals",
            "R10.2-06",
            **refusal_details(item),
        )
    needed = approvals_required(item)
    if needed == 0 or len(item.approvals) >= needed:
        raise _illegal(
            item,
            f"{item.id} waits for no execution approval ({len(item.approvals)} of {needed})",
            "R10.2-06",
            approvals=len(item.approvals),
            approvals_required=needed,
        )


def require_review_waits(item: WorkItem, body: dict[str, Any]) -> None:
    """The item holds a submission waiting for its review (R13.2-03): ``submitted``, and the
    submission the asker read."""
    if item.state != S.SUBMITTED:
        raise _illegal(
            item, f"{item.id} is {item.state}: only a submission is reviewed", "R13.2-03",
            state=item.state,
        )  # fmt: skip
    require_current_submission(item, body)


def review_refusal(
    item: WorkItem, principal: str, membership: Membership | None
) -> ProtocolError | None:
    """Why ``principal`` may not judge the item's submission, or ``None``: an active member
    (``NOT_A_MEMBER``) holding a role that judges (``FORBIDDEN``, the roles of
    ``evidence.record``), never its owner (``SELF_APPROVAL``, R13.2-01)."""
    try:
        if membership is None or not membership.active:
            raise ProtocolError(
                ErrorCode.NOT_A_MEMBER, f"{principal} is not a member", requirement="wire§2"
            )
        if not REVIEWER_ROLES.intersection(membership.roles):
            raise ProtocolError(
                ErrorCode.FORBIDDEN,
                f"{principal} holds no role that reviews",
                requirement="wire§9",
                details={"allowed_roles": sorted(REVIEWER_ROLES)},
            )
        require_not_owner(item, principal, "review")
    except ProtocolError as refused:
        return refused
    return None


def refusal_of(
    wanted: str, item: WorkItem, principal: str, membership: Membership | None
) -> ProtocolError | None:
    """Why ``principal`` could not act on what ``wanted`` asks for, or ``None``."""
    if wanted == EXECUTION_APPROVAL:
        return grant_refusal(item, principal, membership)
    return review_refusal(item, principal, membership)


def decide_ask(view: View, command: Command) -> Decision:
    """What is asked must be waiting (``ILLEGAL_TRANSITION``, ``STALE_REVISION``), the asker
    asks others (``MALFORMED``), and each person named could act on it now (``FORBIDDEN``
    naming them, with the code their own command would get as ``reason``)."""
    body = command.body
    item = require_item(view, body["work_item"])
    wanted = body["for"]
    requirement = ASKS_FOR[wanted]
    if wanted == EXECUTION_APPROVAL:
        require_approval_waits(item, body)
    else:
        require_review_waits(item, body)
    for index, principal in enumerate(body["asked"]):
        path = f"$.asked[{index}]"
        if principal == command.actor:
            raise malformed("one asks someone else, never oneself", path, requirement)
        refused = refusal_of(wanted, item, principal, view.get(membership_key(principal)))
        if refused is not None:
            raise ProtocolError(
                ErrorCode.FORBIDDEN,
                f"{principal} cannot be asked for the {wanted.replace('_', ' ')} of "
                f"{item.id}: {refused.message}",
                requirement=requirement,
                details={"principal": principal, "path": path, "reason": refused.code.value},
            )
    payload: dict[str, Any] = {
        "work_item": item.id,
        "for": wanted,
        "asked": list(body["asked"]),
        "revision": item.revision,
    }
    if wanted == REVIEW:
        payload["submission"] = (item.review or {}).get("submission")
    if "note" in body:
        payload["note"] = body["note"]
    result = {"work_item": item.id, "for": wanted, "asked": list(body["asked"])}
    return Decision([NewEvent(ASKED, payload)], result)


def asked(item: WorkItem, fact: Fact) -> WorkItem:
    """The item after ``work.asked``: the ask kept (bounded), nothing else moves."""
    p = fact.payload
    entry = {
        "for": p["for"],
        "asked": list(p["asked"]),
        "by": fact.actor,
        "note": p.get("note", ""),
        "revision": p["revision"],
        "submission": p.get("submission"),
        "sequence": fact.sequence,
        "recorded_at": fact.recorded_at,
    }
    return replace(item, asks=(*item.asks, entry)[-ASK_LOG_LIMIT:])


# --- reading: who is asked, who may still act ---------------------------------------------------


def _waiting_on(item: WorkItem, ask: dict[str, Any]) -> bool:
    """Whether what ``ask`` asked for still waits: the same revision's approvals short of
    their quorum, or the same submission's review."""
    if ask["for"] == EXECUTION_APPROVAL:
        return (
            item.state == S.QUEUED
            and ask["revision"] == item.revision
            and item.refusal is None
            and len(item.approvals) < approvals_required(item)
        )
    return item.state == S.SUBMITTED and ask.get("submission") == (item.review or {}).get(
        "submission"
    )


def _decided(item: WorkItem, ask: dict[str, Any], principal: str) -> bool:
    """Whether ``principal`` already answered ``ask``: an approval given (a refusal ends the
    wait for everyone), or evidence recorded on the submission asked about."""
    if ask["for"] == EXECUTION_APPROVAL:
        return principal in item.approvals
    criteria = ((item.review or {}).get("criteria") or {}).values()
    return any(e.get("producer") == principal for c in criteria for e in c.get("evidence", ()))


def open_asks(item: WorkItem) -> list[dict[str, Any]]:
    """The item's asks still waiting, oldest first, each with ``waiting``: the people named
    who have not answered yet (an ask everyone answered is not open)."""
    found = []
    for ask in item.asks:
        if not _waiting_on(item, ask):
            continue
        waiting = [p for p in ask["asked"] if not _decided(item, ask, p)]
        if waiting:
            found.append({**ask, "waiting": waiting})
    return found


def asked_of(item: WorkItem, principal: str) -> list[dict[str, Any]]:
    """The open asks that still wait on ``principal``, oldest first."""
    return [ask for ask in open_asks(item) if principal in ask["waiting"]]


def approvers(item: WorkItem, memberships: Iterable[Membership]) -> list[str]:
    """Who may still approve the item's current revision, of ``memberships`` (the group's),
    in their order: nobody once its quorum is met (R10.2-06); otherwise each member whose
    grant the protocol core would take now (``approvals.grant_refusal``)."""
    if len(item.approvals) >= approvals_required(item):
        return []
    return [m.principal for m in memberships if grant_refusal(item, m.principal, m) is None]


def reviewers(item: WorkItem, memberships: Iterable[Membership]) -> list[str]:
    """Who may be asked to review the item's current submission, of ``memberships``."""
    if item.state != S.SUBMITTED:
        return []
    return [m.principal for m in memberships if review_refusal(item, m.principal, m) is None]
