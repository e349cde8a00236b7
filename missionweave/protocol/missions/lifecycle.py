"""A mission's own life: ``mission.create``, then ``mission.approve``, ``mission.fail`` or
``mission.cancel`` (R10.2-16..18, R10.2-22)."""

from __future__ import annotations

from typing import Any

from .. import states as S
from ..errors import ErrorCode, ProtocolError
from ..facts import Command, Decision, NewEvent, StateKey, View
from ..validation import check_amounts, check_fields, check_id, check_text
from ..work.items import work_item_key
from .changes import require_no_open_requests
from .children import LINK_APPROVED, LINK_FAILED, tell_parent
from .model import Mission, mission_key, mission_or_404, refuse_existing, require_active_mission

CREATE = "mission.create"
APPROVE = "mission.approve"
FAIL = "mission.fail"
CANCEL = "mission.cancel"

ENDED = {APPROVE: "approved", FAIL: "failed", CANCEL: "cancelled"}


# --- mission.create ----------------------------------------------------------------------


def validate_create(body: dict[str, Any]) -> None:
    check_fields(body, required=("mission", "goal", "budgets"), optional=("parent",))
    check_id(body["mission"], "$.mission")
    check_text(body["goal"], "$.goal")
    check_amounts(body["budgets"], "$.budgets", what="budgets")
    if body.get("parent") is not None:
        check_id(body["parent"], "$.parent")


def keys_of_create(command: Command, view: View) -> set[StateKey]:
    body = command.body
    keys = {mission_key(body["mission"])}
    if body.get("parent") is not None:
        keys.add(mission_key(body["parent"]))
    return keys


def decide_create(view: View, command: Command) -> Decision:
    body = command.body
    refuse_existing(view, body["mission"])
    parent = body.get("parent")
    if parent is not None:
        mission_or_404(view, parent, "$.parent", "R10.4-06")
    return Decision([NewEvent("mission.created", dict(body))], {"mission": body["mission"]})


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
    require_no_open_requests(view, mission)  # issue 36 §5: changes asked, not yet replaced
    approval = {
        "criterion": "child_mission_approved",
        "method": "human_review",
        "result": {"verdict": "pass", "summary": command.body["comment"], "data": {}},
        "producer": command.actor,
        "artifacts": [],
    }
    parent_events, follow_ups = tell_parent(
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
    events = ending_events(
        view, mission, outcome=outcome, payload=dict(command.body), producer=command.actor
    )
    parent_events, follow_ups = tell_parent(
        view, mission, command, LINK_FAILED, {"outcome": outcome, "reason": command.body["reason"]}
    )
    return Decision([*events, *parent_events], {}, follow_ups=follow_ups)


def ending_events(
    view: View, mission: Mission, *, outcome: str, payload: dict[str, Any], producer: str
) -> list[NewEvent]:
    """``mission.failed`` or ``mission.cancelled`` (``payload``: ``mission``, ``reason`` and
    anything more the cause records), then the same end for every unfinished WorkItem of it
    (R10.2-18): the ending's own events, which ``mission.fail``/``mission.cancel`` and a
    parent's cancellation (``cleanup``) share."""
    events = [NewEvent(f"mission.{outcome}", payload)]
    item_event = "work.failed" if outcome == "failed" else "work.cancelled"
    for item_id in mission.work_items:
        item = view.get(work_item_key(item_id))
        if item is not None and item.state in S.UNFINISHED:
            item_payload: dict[str, Any] = {
                "work_item": item_id,
                "reason": payload["reason"],
                "propagated_from": f"mission.{outcome}",
                "mission": mission.id,
            }
            if outcome == "failed":
                item_payload["evidence"] = [_mission_evidence(producer, outcome, payload["reason"])]
            events.append(NewEvent(item_event, item_payload))
    return events


def _mission_evidence(producer: str, outcome: str, reason: str) -> dict[str, Any]:
    return {
        "criterion": "mission_outcome",
        "method": "deterministic",
        "result": {"verdict": "fail", "summary": f"mission {outcome}: {reason}", "data": {}},
        "producer": producer,
        "artifacts": [],
    }
