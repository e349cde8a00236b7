"""Child missions linked across groups (R10.2-15..17, R10.4-05, R10.4-06).

There is no cross-group transaction (R10.4-05): a child in another group is created, approved
or failed through authority follow-up commands (``link.*``) that carry a stable correlation
id, so the link is an event in both logs.
"""

from __future__ import annotations

import hashlib
from typing import Any

from .. import budgets
from .. import states as S
from ..canonical import canonical_bytes
from ..errors import ErrorCode, ProtocolError
from ..facts import Command, Decision, FollowUp, NewEvent, StateKey, View
from ..frozen import replace
from ..validation import check_amounts, check_choice, check_fields, check_id, check_text
from ..work import execution
from ..work.checks import require_item
from ..work.items import WorkItem, work_item_key
from .model import Mission, mission_key, refuse_existing

CREATE_CHILD = "mission.create_child"
LINK_CREATE = "link.create_child_mission"
LINK_APPROVED = "link.child_approved"
LINK_FAILED = "link.child_failed"
#: a parent WorkItem's end cancels its running child in another group (``cleanup``)
LINK_CANCEL = "link.cancel_child_mission"

FAILURE_POLICIES = ("fail_parent", "block_parent")


# --- mission.create_child (R10.2-15) -----------------------------------------------------


def validate_create_child(body: dict[str, Any]) -> None:
    check_fields(body, required=("work_item", "child", "failure_policy"))
    check_id(body["work_item"], "$.work_item")
    child = body["child"]
    if not isinstance(child, dict):
        raise ProtocolError(
            ErrorCode.MALFORMED,
            "child is an object",
            requirement="wire§9",
            details={"path": "$.child"},
        )
    check_fields(child, required=("mission", "group", "goal", "budgets"), path="$.child")
    check_id(child["mission"], "$.child.mission")
    check_id(child["group"], "$.child.group")
    check_text(child["goal"], "$.child.goal")
    check_amounts(child["budgets"], "$.child.budgets", what="budgets")
    check_choice(body["failure_policy"], FAILURE_POLICIES, "$.failure_policy")


def keys_of_create_child(command: Command, view: View) -> set[StateKey]:
    body = command.body
    keys = {work_item_key(body["work_item"])}
    item: WorkItem | None = view.get(work_item_key(body["work_item"]))
    if item is not None:
        keys.add(mission_key(item.mission))
    keys.add(mission_key(body["child"]["mission"]))  # for a child in this very group
    return keys


def correlation_id(group: str, command_id: str) -> str:
    """The stable id linking a parent WorkItem and its child mission (R10.4-06)."""
    return f"link:{group}:{command_id}"[:128]


def decide_create_child(view: View, command: Command) -> Decision:
    body = command.body
    item = require_item(view, body["work_item"])
    S.require_state(CREATE_CHILD, item.state, work_item=item.id)
    if item.child is not None and item.child.get("status") == "running":
        # R10.2-15: one linked child at a time; a second would orphan the first
        raise ProtocolError(
            ErrorCode.ILLEGAL_TRANSITION,
            f"{item.id} already waits for a running child mission",
            requirement="R10.2-15",
            details={"work_item": item.id, "child": item.child},
        )
    child = body["child"]
    correlation = correlation_id(command.group, command.id)
    link = {
        "group": command.group,
        "mission": item.mission,
        "work_item": item.id,
        "correlation_id": correlation,
    }
    created = {
        "work_item": item.id,
        "mission": item.mission,
        "child": dict(child),
        "failure_policy": body["failure_policy"],
        "correlation_id": correlation,
    }
    child_mission = {
        "mission": child["mission"],
        "goal": child["goal"],
        "budgets": child["budgets"],
        "link": link,
    }
    if child["group"] == command.group:
        refuse_existing(view, child["mission"])
        events = [
            NewEvent("mission.child_created", created),
            NewEvent("mission.created", child_mission),
        ]
        return Decision(events, {"correlation_id": correlation})
    # The child's group may still refuse (e.g. the mission id is taken there): the refusal
    # comes back to the parent as a failed child, under its failure policy (R10.2-17).
    refused = FollowUp(
        group=command.group,
        type=LINK_FAILED,
        body={
            "work_item": item.id,
            "correlation_id": correlation,
            "child": {"group": child["group"], "mission": child["mission"]},
            "outcome": "refused",
            "reason": f"{child['group']} refused to create mission {child['mission']}",
        },
        command_id=f"{correlation}:{LINK_FAILED}"[:128],
    )
    follow_up = FollowUp(
        group=child["group"],
        type=LINK_CREATE,
        body=child_mission,
        command_id=correlation,
        on_refusal=refused,
    )
    return Decision(
        [NewEvent("mission.child_created", created)],
        {"correlation_id": correlation},
        follow_ups=(follow_up,),
    )


# --- telling the parent WorkItem (R10.2-16, R10.2-17) -----------------------------------


def tell_parent(
    view: View, mission: Mission, command: Command, type_: str, body: dict[str, Any]
) -> tuple[list[NewEvent], tuple[FollowUp, ...]]:
    """The parent WorkItem learns the child's outcome (R10.2-16, R10.2-17).

    In the same group it is one more event of this command; in another group it is an
    authority follow-up command there, after this one commits (R10.4-05).
    """
    if mission.link is None:
        return [], ()
    link = mission.link
    body = {
        **body,
        "work_item": link["work_item"],
        "correlation_id": link["correlation_id"],
        "child": {"group": command.group, "mission": mission.id},
    }
    if link["group"] != command.group:
        command_id = f"{link['correlation_id']}:{type_}"[:128]
        return [], (FollowUp(link["group"], type_, body, command_id),)
    parent: WorkItem | None = view.get(work_item_key(link["work_item"]))
    if (
        parent is None
        or parent.state != S.BLOCKED
        or parent.child is None
        or parent.child.get("correlation_id") != link["correlation_id"]
    ):
        # the parent moved on (cancelled, or linked to a newer child): nothing to tell it, and
        # the child's own end must not be refused because of that
        return [], ()
    decide = decide_link_approved if type_ == LINK_APPROVED else decide_link_failed
    local = replace(command, body=body)
    return decide(view, local).events, ()


# --- authority link commands (R10.4-05, R10.4-06) -----------------------------------------


def validate_link_create(body: dict[str, Any]) -> None:
    check_fields(body, required=("mission", "goal", "budgets", "link"))


def keys_of_link_create(command: Command, view: View) -> set[StateKey]:
    return {mission_key(command.body["mission"])}


def decide_link_create(view: View, command: Command) -> Decision:
    refuse_existing(view, command.body["mission"])
    return Decision(
        [NewEvent("mission.created", dict(command.body))], {"mission": command.body["mission"]}
    )


def validate_link_outcome(body: dict[str, Any]) -> None:
    check_fields(
        body,
        required=("work_item", "correlation_id", "child"),
        optional=("approval", "outcome", "reason"),
    )


def keys_of_link_outcome(command: Command, view: View) -> set[StateKey]:
    return {work_item_key(command.body["work_item"])}


def decide_link_approved(view: View, command: Command) -> Decision:
    item = require_item(view, command.body["work_item"])
    _require_link(item, command)
    S.require_state(LINK_APPROVED, item.state, work_item=item.id)
    payload = {
        "work_item": item.id,
        "child": command.body["child"],
        "correlation_id": command.body["correlation_id"],
        "evidence": command.body["approval"],
    }
    return Decision([NewEvent("mission.child_approved", payload)])


def decide_link_failed(view: View, command: Command) -> Decision:
    item = require_item(view, command.body["work_item"])
    _require_link(item, command)
    S.require_state(LINK_FAILED, item.state, work_item=item.id)
    assert item.child is not None
    policy = item.child["failure_policy"]
    payload = {
        "work_item": item.id,
        "child": command.body["child"],
        "correlation_id": command.body["correlation_id"],
        "outcome": command.body["outcome"],
        "reason": command.body["reason"],
        "failure_policy": policy,
    }
    return Decision([NewEvent("mission.child_failed", payload)])


def validate_link_usage(body: dict[str, Any]) -> None:
    check_fields(body, required=("work_item", "correlation_id", "usage", "source"))


def keys_of_link_usage(command: Command, view: View) -> set[StateKey]:
    return execution.keys_of_charge(command, view)


def decide_link_usage(view: View, command: Command) -> Decision:
    """A child mission's usage charged to its parent WorkItem and that one's ancestry, in the
    parent's group (R10.4-05: no cross-group transaction, so it comes after the child's
    commit). The child's own budget refused what it had to; here a charge is recorded even
    past a limit, with ``over_budget`` naming the dimensions, so no usage is ever lost."""
    item = require_item(view, command.body["work_item"])
    _require_link(item, command)
    usage = command.body["usage"]
    over: list[str] = []
    try:
        payload = execution.charge(view, item, usage)
    except ProtocolError as overflow:
        over.append(overflow.details["dimension"])
        chain = budgets.ancestry(view, item.mission)
        payload = {"usage": usage, "charged_missions": [m.id for m in chain]}
    payload = {
        "work_item": item.id,
        **payload,
        "child": command.body["source"],
        "correlation_id": command.body["correlation_id"],
        "over_budget": over,
    }
    follow_ups = execution.usage_roll_up(view, item, command, usage)
    assert item.child is not None
    if item.child.get("status") == "cancelled":
        # The child still spends after its parent cancelled it: the cancellation reached its
        # group before the child existed there (the two follow-ups raced). Send it again,
        # the same command, so it cancels the child now (R10.2-14).
        follow_ups = (*follow_ups, cancel_follow_up(command.group, item))
    return Decision([NewEvent("mission.child_usage_recorded", payload)], follow_ups=follow_ups)


def cancel_follow_up(group: str, item: WorkItem, reason: str | None = None) -> FollowUp:
    """The ``link.cancel_child_mission`` that ends ``item``'s child in its own group, for
    ``reason`` (by default the one its ``mission.child_cancelled`` recorded on ``item.child``).

    The command id is a hash of the link, so every send of it is the same command: a replay
    once the child's group has it, a fresh try while it has not (R10.4-05)."""
    assert item.child is not None
    child = item.child
    link = hashlib.sha256(canonical_bytes([group, child["correlation_id"]])).hexdigest()
    body = {
        "mission": child["mission"],
        "correlation_id": child["correlation_id"],
        "reason": reason if reason is not None else child.get("cancel_reason", ""),
        "parent": {"group": group, "work_item": item.id},
    }
    return FollowUp(child["group"], LINK_CANCEL, body, command_id=f"{LINK_CANCEL}:{link}")


def _require_link(item: WorkItem, command: Command) -> None:
    if item.child is None or item.child.get("correlation_id") != command.body["correlation_id"]:
        raise ProtocolError(
            ErrorCode.NOT_FOUND,
            f"{item.id} has no child mission linked by {command.body['correlation_id']}",
            requirement="R10.4-06",
        )
