"""Missions: ``mission.create`` and the Mission aggregate.

A Mission owns a goal, budgets in the six dimensions of R10.1-01(g), optional parent link
(R10.4-06) and the list of its WorkItems (filled by the WorkItem commands of the next issue).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from .errors import ErrorCode, ProtocolError
from .facts import Command, Decision, Fact, NewEvent, StateKey, View
from .validation import check_budgets, check_fields, check_id, check_text

CREATE = "mission.create"


@dataclass(frozen=True, slots=True)
class Mission:
    id: str
    state: str  # "active", later "approved", "failed", "cancelled"
    goal: str
    limits: dict[str, float | int]
    used: dict[str, float | int]
    parent: str | None
    children: tuple[str, ...]
    work_items: tuple[str, ...]
    created_by: str
    created_sequence: int

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
        }


def mission_key(mission_id: str) -> StateKey:
    return ("mission", mission_id)


def validate_create(body: dict[str, Any]) -> None:
    check_fields(body, required=("mission", "goal", "budgets"), optional=("parent",))
    check_id(body["mission"], "$.mission")
    check_text(body["goal"], "$.goal")
    check_budgets(body["budgets"], "$.budgets")
    if body.get("parent") is not None:
        check_id(body["parent"], "$.parent")


def keys_of_create(body: dict[str, Any]) -> set[StateKey]:
    keys = {mission_key(body["mission"])}
    if body.get("parent") is not None:
        keys.add(mission_key(body["parent"]))
    return keys


def decide_create(view: View, command: Command) -> Decision:
    body = command.body
    if view.get(mission_key(body["mission"])) is not None:
        raise ProtocolError(
            ErrorCode.ILLEGAL_TRANSITION,
            f"mission {body['mission']!r} already exists in this group",
            requirement="R10.2-22",
            details={"mission": body["mission"]},
        )
    parent = body.get("parent")
    if parent is not None and view.get(mission_key(parent)) is None:
        raise ProtocolError(
            ErrorCode.NOT_FOUND,
            f"parent mission {parent!r} does not exist in this group",
            requirement="R10.4-06",
            details={"path": "$.parent"},
        )
    return Decision([NewEvent("mission.created", dict(body))], {"mission": body["mission"]})


def evolve_mission(current: Mission | None, fact: Fact, key: StateKey) -> Mission:
    payload = fact.payload
    if fact.type == "mission.created":
        if key == mission_key(payload["mission"]):
            return Mission(
                id=payload["mission"],
                state="active",
                goal=payload["goal"],
                limits=dict(payload["budgets"]),
                used={},
                parent=payload.get("parent"),
                children=(),
                work_items=(),
                created_by=fact.actor,
                created_sequence=fact.sequence,
            )
        assert current is not None, "a child mission names an unknown parent"
        return replace(current, children=(*current.children, payload["mission"]))
    raise ValueError(f"a mission does not evolve on {fact.type}")


def _routes_of_created(payload: dict[str, Any]) -> list[StateKey]:
    keys = [mission_key(payload["mission"])]
    if payload.get("parent") is not None:
        keys.append(mission_key(payload["parent"]))
    return keys


EVENT_ROUTES = {"mission.created": _routes_of_created}
