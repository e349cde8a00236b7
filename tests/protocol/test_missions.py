"""``mission.create`` and the Mission aggregate (wire.md §9), as given/when/then."""

from __future__ import annotations

import pytest

from missionweave.protocol.errors import ErrorCode
from missionweave.protocol.missions.lifecycle import CREATE
from missionweave.protocol.missions.model import mission_key

from .deciders import Scenario

OLGA = "user:olga"


def _body(mission: str, **extra: object) -> dict:
    return {"mission": mission, "goal": "Summarise", "budgets": {"money": 5.0}, **extra}


def test_create_appends_mission_created_with_the_body() -> None:
    """wire§6: mission.create → mission.created; the projection starts active."""
    group = Scenario()
    decision = group.when(CREATE, _body("m-1"), actor=OLGA)
    assert decision.status == 201
    assert decision.result == {"mission": "m-1"}
    assert group.then(decision, actor=OLGA) == [("mission.created", _body("m-1"))]
    mission = group.state[mission_key("m-1")]
    assert mission.as_dict() == {
        "id": "m-1",
        "state": "active",
        "goal": "Summarise",
        "budgets": {"limits": {"money": 5.0}, "used": {}},
        "parent": None,
        "children": [],
        "work_items": [],
        "created_by": OLGA,
        "created_sequence": 1,
        "link": None,
        "usage_series": [],
        "change_requests": [],
    }


def test_creating_an_existing_mission_is_an_illegal_transition() -> None:
    """R10.2-22: a mission id is created once per group."""
    group = Scenario().given(("mission.created", _body("m-1")))
    error = group.refused(CREATE, _body("m-1", goal="again"))
    assert error.code is ErrorCode.ILLEGAL_TRANSITION
    assert error.status == 409
    assert error.details == {"mission": "m-1"}


def test_child_mission_with_unknown_parent_is_not_found() -> None:
    """R10.4-06: the parent must exist in the group."""
    error = Scenario().refused(CREATE, _body("m-2", parent="m-missing"))
    assert error.code is ErrorCode.NOT_FOUND
    assert error.details == {"path": "$.parent", "mission": "m-missing"}


def test_parent_lists_its_children_in_creation_order() -> None:
    """R10.4-06: a child names its parent, and the parent's children list the child."""
    group = Scenario().given(("mission.created", _body("m-1")))
    group.then(group.when(CREATE, _body("m-2", parent="m-1")))
    group.then(group.when(CREATE, _body("m-3", parent="m-1")))
    assert group.state[mission_key("m-1")].children == ("m-2", "m-3")
    assert group.state[mission_key("m-2")].parent == "m-1"
    assert group.state[mission_key("m-2")].children == ()


def test_explicit_null_parent_is_a_top_level_mission() -> None:
    """wire§9: parent is optional."""
    group = Scenario()
    group.then(group.when(CREATE, _body("m-1", parent=None)))
    assert group.state[mission_key("m-1")].parent is None


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"goal": "g", "budgets": {}}, "$.mission"),
        (_body("m 1"), "$.mission"),
        (_body("m-1", goal=""), "$.goal"),
        (_body("m-1", goal=3), "$.goal"),
        (_body("m-1", budgets=[]), "$.budgets"),
        (_body("m-1", budgets={"money": -1}), "$.budgets.money"),
        (_body("m-1", budgets={"money": True}), "$.budgets.money"),
        (_body("m-1", budgets={"money": "5"}), "$.budgets.money"),
        (_body("m-1", budgets={"gold": 1}), "$.budgets.gold"),
        (_body("m-1", parent="bad parent"), "$.parent"),
        (_body("m-1", colour="red"), "$.colour"),
    ],
)
def test_malformed_create_bodies_name_the_field(body: dict, path: str) -> None:
    """wire§3 step 9: the body's shape is MALFORMED with details.path."""
    error = Scenario().refused(CREATE, body)
    assert error.code is ErrorCode.MALFORMED
    assert error.details["path"] == path
