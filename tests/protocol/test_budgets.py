"""Budgets charged up the mission ancestry, decided purely (R10.1-01(g), R11.5-12, R11.5-13).

A WorkItem of ``m-leaf`` (child of ``m-mid``, child of ``m-root``, all in one group) reports
usage: the charge is checked against the item's contract budgets and every mission above it
before anything is decided, then charges them all — or is refused as a whole with
``BUDGET_EXCEEDED`` naming the budget it would overflow, deciding nothing.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from missionweave.protocol import budgets
from missionweave.protocol.errors import ErrorCode
from missionweave.protocol.missions.model import mission_key

from .lease_stories import SessionDriver, active, driver_of, item, refused, with_body
from .work_scenarios import MISSION_OWNER, Call, WorkStory, work_contract

ITEM_LIMITS = {"money": 5.0, "tokens": 1000, "tool_calls": 100, "compute": 3600, "side_effects": 0}


def mission_tree(root: dict[str, Any], mid: dict[str, Any], leaf: dict[str, Any]) -> SessionDriver:
    """``m-root`` ⊃ ``m-mid`` ⊃ ``m-leaf`` with those budgets, created by the mission owner."""
    driver = SessionDriver()
    for mission, limits, parent in (
        ("m-root", root, None),
        ("m-mid", mid, "m-root"),
        ("m-leaf", leaf, "m-mid"),
    ):
        body: dict[str, Any] = {"mission": mission, "goal": f"{mission} goal", "budgets": limits}
        if parent is not None:
            body["parent"] = parent
        driver.run(Call("mission.create", MISSION_OWNER, body))
    return driver


def leaf_item(
    root: dict[str, Any] | None = None,
    mid: dict[str, Any] | None = None,
    leaf: dict[str, Any] | None = None,
    limits: dict[str, Any] | None = None,
) -> WorkStory:
    """An active WorkItem of ``m-leaf`` whose contract has ``limits`` as budgets."""
    driver = mission_tree(root or {}, mid or {}, leaf or {})
    contract = work_contract(budgets=ITEM_LIMITS if limits is None else limits)
    return active(driver=driver, mission="m-leaf", contract=contract)


def charge(story: WorkStory, **usage: float) -> Any:
    return story.run(with_body(story.call("work.usage"), usage=usage))


def usage_call(story: WorkStory, **usage: float) -> Call:
    return with_body(story.call("work.usage"), usage=usage)


def used(story: WorkStory, mission: str) -> dict[str, Any]:
    found = driver_of(story).mission(mission)
    assert found is not None
    return found["budgets"]["used"]


# --- charging --------------------------------------------------------------------------------


def test_a_charge_adds_to_the_item_its_mission_and_every_same_group_ancestor() -> None:
    """R10.1-01(g), R11.5-12: the WorkItem and the full ancestry are charged, nearest first."""
    story = leaf_item(root={"tokens": 10_000}, mid={"tokens": 5000}, leaf={"tokens": 2000})
    ran = charge(story, tokens=300, tool_calls=2)
    [(kind, payload)] = ran.events
    assert kind == "work.usage_recorded"
    assert payload["charged_missions"] == ["m-leaf", "m-mid", "m-root"]
    assert payload["usage"] == {"tokens": 300, "tool_calls": 2}
    charge(story, tokens=200)
    assert item(story)["budgets"]["used"] == {"tokens": 500, "tool_calls": 2}
    for mission in ("m-leaf", "m-mid", "m-root"):
        assert used(story, mission) == {"tokens": 500, "tool_calls": 2}


def test_a_charge_reaching_a_limit_exactly_is_accepted_and_one_more_unit_is_not() -> None:
    """R11.5-13: a limit may be used up; only going past it overflows."""
    story = leaf_item()
    charge(story, tokens=1000)
    assert item(story)["budgets"]["used"]["tokens"] == 1000
    error = refused(story, usage_call(story, tokens=1), ErrorCode.BUDGET_EXCEEDED, "R11.5-13")
    assert error.details["budget"]["used"] == 1000
    # a zero amount in an exhausted dimension asks for nothing
    charge(story, tokens=0, tool_calls=1)


# --- BUDGET_EXCEEDED at each level -------------------------------------------------------------


def test_overflowing_the_items_own_budget_is_refused_naming_it() -> None:
    """R11.5-13, R10.1-01(g): details name the dimension, the budget and the request."""
    story = leaf_item(root={"tokens": 10_000})
    error = refused(story, usage_call(story, tokens=1001), ErrorCode.BUDGET_EXCEEDED, "R11.5-13")
    assert error.details == {
        "dimension": "tokens",
        "budget": {"kind": "work_item", "id": story.item, "limit": 1000, "used": 0},
        "requested": 1001,
    }


def test_overflowing_the_items_mission_is_refused_naming_the_mission() -> None:
    """R11.5-13: the item still has room, its mission does not."""
    story = leaf_item(leaf={"tokens": 500})
    charge(story, tokens=400)
    error = refused(story, usage_call(story, tokens=200), ErrorCode.BUDGET_EXCEEDED, "R11.5-13")
    assert error.details == {
        "dimension": "tokens",
        "budget": {"kind": "mission", "id": "m-leaf", "limit": 500, "used": 400},
        "requested": 200,
    }


def test_overflowing_a_grandparent_mission_refuses_the_whole_charge() -> None:
    """R11.5-13, R11.5-12: the overflow is two levels up; nothing is charged anywhere — not the
    item, not its mission, not the parent — and the next charge that fits is accepted."""
    story = leaf_item(root={"compute": 10}, mid={"compute": 100}, leaf={"compute": 100})
    charge(story, compute=6, tokens=10)
    error = refused(
        story, usage_call(story, compute=5, tokens=10), ErrorCode.BUDGET_EXCEEDED, "R11.5-13"
    )
    assert error.details == {
        "dimension": "compute",
        "budget": {"kind": "mission", "id": "m-root", "limit": 10, "used": 6},
        "requested": 5,
    }
    assert item(story)["budgets"]["used"] == {"compute": 6, "tokens": 10}
    for mission in ("m-leaf", "m-mid", "m-root"):
        assert used(story, mission) == {"compute": 6, "tokens": 10}
    charge(story, compute=4)
    assert used(story, "m-root")["compute"] == 10


def test_a_dimension_left_out_is_unlimited() -> None:
    """wire§10, R10.1-01(g): no ``tokens`` on the item or any mission: any amount passes;
    ``side_effects: 0`` is a limit of zero, not an absent one."""
    limits = {"money": 5.0, "side_effects": 0}
    story = leaf_item(limits=limits)
    charge(story, tokens=10**12)
    assert used(story, "m-root") == {"tokens": 10**12}
    error = refused(story, usage_call(story, side_effects=1), ErrorCode.BUDGET_EXCEEDED)
    assert error.details["budget"] == {
        "kind": "work_item",
        "id": story.item,
        "limit": 0,
        "used": 0,
    }


def test_the_first_overflowing_holder_is_named_item_before_missions() -> None:
    """R11.5-13: the item is checked first, then its missions nearest first."""
    story = leaf_item(root={"tokens": 50}, leaf={"tokens": 80})
    error = refused(story, usage_call(story, tokens=2000), ErrorCode.BUDGET_EXCEEDED)
    assert error.details["budget"]["kind"] == "work_item"
    error = refused(story, usage_call(story, tokens=90), ErrorCode.BUDGET_EXCEEDED)
    assert error.details["budget"]["id"] == "m-leaf"
    error = refused(story, usage_call(story, tokens=60), ErrorCode.BUDGET_EXCEEDED)
    assert error.details["budget"]["id"] == "m-root"


@pytest.mark.parametrize("usage", [{"tokens": -1}, {"tokens": "5"}, {"gpu": 1}, {"money": True}])
def test_a_malformed_usage_is_refused_before_any_budget_check(usage: dict[str, Any]) -> None:
    """wire§9, R10.1-01(g): non-negative numbers in the six dimensions only."""
    story = leaf_item()
    refused(story, with_body(story.call("work.usage"), usage=usage), ErrorCode.MALFORMED)


# --- the ancestry --------------------------------------------------------------------------------


def test_the_ancestry_stops_at_a_group_boundary() -> None:
    """docs "Budgets", R10.4-05: a parent in another group (``group/m``) has its own log and
    budget; the same-group chain ends below it."""
    story = leaf_item()
    scenario = driver_of(story).scenario
    mid = scenario.state[mission_key("m-mid")]
    view = {key: value for key, value in scenario.state.items() if key[0] == "mission"} | {
        mission_key("m-mid"): replace(mid, parent="g-other/m-top")
    }
    assert [m.id for m in budgets.ancestry(view, "m-leaf")] == ["m-leaf", "m-mid"]
    assert budgets.ancestry_keys(view, "m-leaf") == {mission_key("m-leaf"), mission_key("m-mid")}


def test_a_cycle_in_corrupt_state_does_not_loop_forever() -> None:
    """R11.5-12: the chain follows each mission once (a guard, not a reachable state)."""
    story = leaf_item()
    scenario = driver_of(story).scenario
    root = scenario.state[mission_key("m-root")]
    view = {key: value for key, value in scenario.state.items() if key[0] == "mission"} | {
        mission_key("m-root"): replace(root, parent="m-leaf")
    }
    assert [m.id for m in budgets.ancestry(view, "m-leaf")] == ["m-leaf", "m-mid", "m-root"]
