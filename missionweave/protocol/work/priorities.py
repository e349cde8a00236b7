"""Priority changes: ``work.reprioritize`` → ``work.reprioritized`` (R0-12, R11.3-11, R11.1-07).

R0-03 has the Coordinator supply a WorkItem's requested urgency and deadline (the contract's
``urgency`` and ``deadline``, R10.1-01(f)); R0-12 and R11.3-11 say a priority change reorders
queued work at once, and R11.1-07 routes escalation through policy or the MissionOwner. Before
this command nothing could change them once the item was accepted: a corrected contract is a
new revision, which fences the owner and needs a renewed acceptance (R10.1-05).

So a priority change is *not* a revision. It changes only those two fields of the contract, in
place, at any state but the terminal ones (R10.2-19): the revision, its approvals, its owner,
lease and queue place stay. The contract the projection serves holds the current values (every
reader of the urgency — the worker's queue, the screens, the start deadline's cap — sees the
change without knowing of it), and the item keeps every change, with the values before it, in
``priority_changes`` (the log keeps all). Issued by a coordinator or a mission owner.

It cannot force a mission ahead of other groups' work (R11.1-06, R0-04): urgency orders work
inside its own group only; a worker's scheduler orders groups by its own policy (the
organisation priority class of each group, R11.1-07), which no command of a group changes.
"""

from __future__ import annotations

from typing import Any

from .. import states as S
from ..contracts import URGENCIES
from ..errors import ErrorCode, ProtocolError
from ..facts import Command, Decision, Fact, NewEvent, View
from ..frozen import replace
from ..validation import check_choice, check_fields, check_id, check_text, malformed
from .checks import require_item, timestamp
from .items import WorkItem

REPRIORITIZE = "work.reprioritize"
REPRIORITIZED = "work.reprioritized"
#: who may change an item's urgency and deadline (R0-03, R11.1-07)
ROLES = frozenset({"coordinator", "mission_owner"})
#: changes kept on the item (the log keeps every one)
PRIORITY_LOG_LIMIT = 50
FIELDS = ("urgency", "deadline")


def validate_reprioritize(body: dict[str, Any]) -> None:
    """``work_item``, a non-empty ``reason``, and a new ``urgency``, ``deadline`` or both."""
    check_fields(body, required=("work_item", "reason"), optional=FIELDS)
    check_id(body["work_item"], "$.work_item")
    check_text(body["reason"], "$.reason")
    if not any(name in body for name in FIELDS):
        raise malformed("a priority change names a new urgency, deadline or both", "$", "R0-12")
    if "urgency" in body:
        check_choice(body["urgency"], URGENCIES, "$.urgency")
    if "deadline" in body:
        timestamp(body["deadline"], "$.deadline")


def current_priority(item: WorkItem) -> dict[str, Any]:
    """The item's requested urgency and deadline now (its contract's, R10.1-01(f))."""
    return {name: item.contract.get(name) for name in FIELDS}


def decide_reprioritize(view: View, command: Command) -> Decision:
    """Refused on a terminal item (``ILLEGAL_TRANSITION``, R10.2-19), when it changes nothing
    (``ILLEGAL_TRANSITION``: a repeat by another hand must not look like a second change), and
    with a deadline that has already passed (``MALFORMED`` at ``$.deadline``: the start
    deadline is capped by it, so the owner would be out of time at once)."""
    body = command.body
    item = require_item(view, body["work_item"])
    S.require_state(command.type, item.state, work_item=item.id)
    previous = current_priority(item)
    wanted = {name: body.get(name, previous[name]) for name in FIELDS}
    if wanted == previous:
        raise ProtocolError(
            ErrorCode.ILLEGAL_TRANSITION,
            f"{item.id} already has urgency {previous['urgency']} and deadline "
            f"{previous['deadline']}",
            requirement="R0-12",
            details={"work_item": item.id, **previous},
        )
    if "deadline" in body and timestamp(body["deadline"], "$.deadline") <= command.now:
        raise malformed("the new deadline has already passed", "$.deadline", "R0-12")
    payload = {
        "work_item": item.id,
        **wanted,
        "previous": previous,
        "reason": body["reason"],
    }
    return Decision([NewEvent(REPRIORITIZED, payload)], {"work_item": item.id, **wanted})


def reprioritized(item: WorkItem, fact: Fact) -> WorkItem:
    """The item after ``work.reprioritized``: the contract's urgency and deadline replaced,
    the change kept (bounded). Its revision, owner, lease and queue place are untouched."""
    p = fact.payload
    contract = {**item.contract, **{name: p[name] for name in FIELDS}}
    change = {
        **{name: p[name] for name in FIELDS},
        "previous": p["previous"],
        "reason": p["reason"],
        "by": fact.actor,
        "sequence": fact.sequence,
        "recorded_at": fact.recorded_at,
    }
    changes = (*item.priority_changes, change)[-PRIORITY_LOG_LIMIT:]
    return replace(item, contract=contract, priority_changes=changes)
