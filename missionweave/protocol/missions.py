"""Missions: create, approve, fail, cancel; child missions linked across groups.

A Mission owns a goal, budgets in the six dimensions of R10.1-01(g), its WorkItems, and links
to a parent or children (R10.4-06). There is no cross-group transaction (R10.4-05): a child in
another group is created, approved or failed through authority follow-up commands
(``link.*``) that carry a stable correlation id, so the link is an event in both logs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from . import budgets
from . import states as S
from .budgets import add_usage
from .errors import ErrorCode, ProtocolError
from .facts import Command, Decision, Fact, FollowUp, NewEvent, StateKey, View
from .validation import check_budgets, check_choice, check_fields, check_id, check_text
from .work import execution
from .work.checks import require_item
from .workitems import CHARGE_EVENTS, WorkItem, work_item_key

CREATE = "mission.create"
CREATE_CHILD = "mission.create_child"
APPROVE = "mission.approve"
FAIL = "mission.fail"
CANCEL = "mission.cancel"
LINK_CREATE = "link.create_child_mission"
LINK_APPROVED = "link.child_approved"
LINK_FAILED = "link.child_failed"

ACTIVE = "active"
ENDED = {APPROVE: "approved", FAIL: "failed", CANCEL: "cancelled"}
FAILURE_POLICIES = ("fail_parent", "block_parent")


@dataclass(frozen=True, slots=True)
class Mission:
    id: str
    state: str  # "active", "approved", "failed", "cancelled"
    goal: str
    limits: dict[str, float | int]
    used: dict[str, float | int]
    parent: str | None  # "m" in this group, "group/m" in another
    children: tuple[str, ...]  # the same notation
    work_items: tuple[str, ...]
    created_by: str
    created_sequence: int
    #: a child mission's link to the WorkItem it unblocks:
    #: {group, mission, work_item, correlation_id}
    link: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        """The Mission projection as served by ``GET /groups/{g}/missions/{id}``."""
        return {
            "id": self.id,
            "state": self.state,
            "goal": self.goal,
            "budgets": {"limits": dict(self.limits), "used": dict(self.used)},
            "parent": self.parent,
            "children": list(self.children),
            "work_items": list(self.work_items),
            "created_by": self.created_by,
            "created_sequence": self.created_sequence,
            "link": self.link,
        }


def mission_key(mission_id: str) -> StateKey:
    return ("mission", mission_id)


def mission_or_404(
    view: View, mission_id: str, path: str = "$.mission", requirement: str = "wire§4"
) -> Mission:
    mission = view.get(mission_key(mission_id))
    if mission is None:
        raise ProtocolError(
            ErrorCode.NOT_FOUND,
            f"no mission {mission_id!r} in this group",
            requirement=requirement,
            details={"path": path, "mission": mission_id},
        )
    return mission


def require_active_mission(mission: Mission, command: str) -> None:
    if mission.state != ACTIVE:
        raise ProtocolError(
            ErrorCode.ILLEGAL_TRANSITION,
            f"{command} is not allowed on a mission that is {mission.state}",
            requirement="R10.2-22",
            details={"mission": mission.id, "state": mission.state},
        )


# --- mission.create ----------------------------------------------------------------------


def validate_create(body: dict[str, Any]) -> None:
    check_fields(body, required=("mission", "goal", "budgets"), optional=("parent",))
    check_id(body["mission"], "$.mission")
    check_text(body["goal"], "$.goal")
    check_budgets(body["budgets"], "$.budgets")
    if body.get("parent") is not None:
        check_id(body["parent"], "$.parent")


def keys_of_create(command: Command, view: View) -> set[StateKey]:
    body = command.body
    keys = {mission_key(body["mission"])}
    if body.get("parent") is not None:
        keys.add(mission_key(body["parent"]))
    return keys


def _refuse_existing(view: View, mission_id: str) -> None:
    if view.get(mission_key(mission_id)) is not None:
        raise ProtocolError(
            ErrorCode.ILLEGAL_TRANSITION,
            f"mission {mission_id!r} already exists in this group",
            requirement="R10.2-22",
            details={"mission": mission_id},
        )


def decide_create(view: View, command: Command) -> Decision:
    body = command.body
    _refuse_existing(view, body["mission"])
    parent = body.get("parent")
    if parent is not None:
        mission_or_404(view, parent, "$.parent", "R10.4-06")
    return Decision([NewEvent("mission.created", dict(body))], {"mission": body["mission"]})


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
    check_budgets(child["budgets"], "$.child.budgets")
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
        _refuse_existing(view, child["mission"])
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


# --- mission.approve / fail / cancel (R10.2-16..18) ----------------------------------------


def validate_end(body: dict[str, Any], *, field_name: str) -> None:
    check_fields(body, required=("mission", field_name))
    check_id(body["mission"], "$.mission")
    check_text(body[field_name], f"$.{field_name}", empty=True)


def validate_approve(body: dict[str, Any]) -> None:
    validate_end(body, field_name="comment")


def validate_fail_or_cancel(body: dict[str, Any]) -> None:
    validate_end(body, field_name="reason")


def keys_of_mission_end(command: Command, view: View) -> set[StateKey]:
    keys = {mission_key(command.body["mission"])}
    mission: Mission | None = view.get(mission_key(command.body["mission"]))
    if mission is not None:
        keys.update(work_item_key(item) for item in mission.work_items)
        if mission.link is not None and mission.link["group"] == command.group:
            keys.add(work_item_key(mission.link["work_item"]))
    return keys


def _tell_parent(
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


def decide_approve(view: View, command: Command) -> Decision:
    """``mission.approve`` (mission_owner, human): the mission is approved once nothing in it is
    unfinished; a child mission's approval becomes its parent WorkItem's evidence (R10.2-16)."""
    mission = mission_or_404(view, command.body["mission"])
    require_active_mission(mission, APPROVE)
    unfinished = [
        item_id
        for item_id in mission.work_items
        if (item := view.get(work_item_key(item_id))) is not None and item.state in S.UNFINISHED
    ]
    if unfinished:
        raise ProtocolError(
            ErrorCode.ILLEGAL_TRANSITION,
            "a mission with unfinished WorkItems cannot be approved",
            requirement="R10.2-22",
            details={"unfinished": unfinished},
        )
    approval = {
        "criterion": "child_mission_approved",
        "method": "human_review",
        "result": {"verdict": "pass", "summary": command.body["comment"], "data": {}},
        "producer": command.actor,
        "artifacts": [],
    }
    parent_events, follow_ups = _tell_parent(
        view, mission, command, LINK_APPROVED, {"approval": approval}
    )
    events = [NewEvent("mission.approved", dict(command.body)), *parent_events]
    return Decision(events, {}, follow_ups=follow_ups)


def decide_end(view: View, command: Command) -> Decision:
    """``mission.fail``/``mission.cancel``: end the mission, then every unfinished WorkItem
    (R10.2-18), then tell a parent WorkItem under its failure policy (R10.2-17)."""
    mission = mission_or_404(view, command.body["mission"])
    require_active_mission(mission, command.type)
    outcome = ENDED[command.type]
    events = [NewEvent(f"mission.{outcome}", dict(command.body))]
    item_event = "work.failed" if command.type == FAIL else "work.cancelled"
    for item_id in mission.work_items:
        item = view.get(work_item_key(item_id))
        if item is not None and item.state in S.UNFINISHED:
            payload: dict[str, Any] = {
                "work_item": item_id,
                "reason": command.body["reason"],
                "propagated_from": f"mission.{outcome}",
                "mission": mission.id,
            }
            if command.type == FAIL:
                payload["evidence"] = [_mission_evidence(command, outcome)]
            events.append(NewEvent(item_event, payload))
    parent_events, follow_ups = _tell_parent(
        view, mission, command, LINK_FAILED, {"outcome": outcome, "reason": command.body["reason"]}
    )
    return Decision([*events, *parent_events], {}, follow_ups=follow_ups)


def _mission_evidence(command: Command, outcome: str) -> dict[str, Any]:
    return {
        "criterion": "mission_outcome",
        "method": "deterministic",
        "result": {
            "verdict": "fail",
            "summary": f"mission {outcome}: {command.body['reason']}",
            "data": {},
        },
        "producer": command.actor,
        "artifacts": [],
    }


# --- authority link commands (R10.4-05, R10.4-06) -----------------------------------------


def validate_link_create(body: dict[str, Any]) -> None:
    check_fields(body, required=("mission", "goal", "budgets", "link"))


def keys_of_link_create(command: Command, view: View) -> set[StateKey]:
    return {mission_key(command.body["mission"])}


def decide_link_create(view: View, command: Command) -> Decision:
    _refuse_existing(view, command.body["mission"])
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
    return Decision(
        [NewEvent("mission.child_usage_recorded", payload)],
        follow_ups=execution.usage_roll_up(view, item, command, usage),
    )


def _require_link(item: WorkItem, command: Command) -> None:
    if item.child is None or item.child.get("correlation_id") != command.body["correlation_id"]:
        raise ProtocolError(
            ErrorCode.NOT_FOUND,
            f"{item.id} has no child mission linked by {command.body['correlation_id']}",
            requirement="R10.4-06",
        )


# --- evolve ------------------------------------------------------------------------------


def evolve_mission(current: Mission | None, fact: Fact, key: StateKey) -> Mission:
    payload = fact.payload
    if fact.type == "mission.created":
        if key == mission_key(payload["mission"]):
            link = payload.get("link")
            parent = payload.get("parent")
            if link is not None:
                parent = (
                    link["mission"]
                    if link["group"] == fact.group
                    else f"{link['group']}/{link['mission']}"
                )
            return Mission(
                id=payload["mission"],
                state=ACTIVE,
                goal=payload["goal"],
                limits=dict(payload["budgets"]),
                used={},
                parent=parent,
                children=(),
                work_items=(),
                created_by=fact.actor,
                created_sequence=fact.sequence,
                link=link,
            )
        assert current is not None, "a child mission names an unknown parent"
        return replace(current, children=(*current.children, payload["mission"]))
    assert current is not None, f"{fact.type} for an unknown mission"
    if fact.type == "work.authorized":
        return replace(current, work_items=(*current.work_items, payload["work_item"]))
    if fact.type == "mission.child_created":
        child = payload["child"]
        name = (
            child["mission"]
            if child["group"] == fact.group
            else f"{child['group']}/{child['mission']}"
        )
        return replace(current, children=(*current.children, name))
    if fact.type in CHARGE_EVENTS:
        # R11.5-12: usage charges the whole ancestry (the decider checked every limit first)
        return replace(current, used=add_usage(current.used, payload["usage"]))
    if fact.type in ("mission.approved", "mission.failed", "mission.cancelled"):
        return replace(current, state=fact.type.removeprefix("mission."))
    raise ValueError(f"a mission does not evolve on {fact.type}")


def _routes_of_created(payload: dict[str, Any]) -> list[StateKey]:
    keys = [mission_key(payload["mission"])]
    if payload.get("parent") is not None:
        keys.append(mission_key(payload["parent"]))
    return keys


def _routes_of_end(payload: dict[str, Any]) -> list[StateKey]:
    return [mission_key(payload["mission"])]


EVENT_ROUTES = {
    "mission.created": _routes_of_created,
    "mission.approved": _routes_of_end,
    "mission.failed": _routes_of_end,
    "mission.cancelled": _routes_of_end,
}
