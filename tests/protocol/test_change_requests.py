"""Asking for changes at the final approval, on the pure core: ``mission.request_changes`` →
``mission.changes_requested`` (R13.2-03 step 5, R10.2-19, R10.2-21; issue 36 §5). No database.

A mission owner names verified WorkItems of an active mission with a note; the request is kept
on the mission and holds its approval until the coordinator has replaced every item it names
(``work.authorize`` with ``replaces``, which the request is what allows for a verified item).
Every refusal appends nothing.
"""

from __future__ import annotations

from typing import Any

import pytest

from missionweave.protocol import states as S
from missionweave.protocol.commands import COMMANDS
from missionweave.protocol.errors import ErrorCode
from missionweave.protocol.missions.changes import (
    REQUEST,
    REQUESTED,
    awaiting_replacement,
    open_change_requests,
)
from missionweave.protocol.missions.model import mission_key
from missionweave.protocol.snapshots import _mission
from missionweave.protocol.timefmt import format_timestamp
from missionweave.protocol.work.dependencies import GRAPH_KEY
from missionweave.protocol.work.items import work_item_key

from .deciders import NOW, Scenario
from .work_scenarios import COORDINATOR, MISSION_OWNER, work_contract

OWNER_ROLES = frozenset({"mission_owner"})
NOTE = "The summary misses the March incidents."


def _authorized(item: str, mission: str = "m-1", depends_on: tuple[str, ...] = ()) -> tuple:
    payload = {
        "work_item": item,
        "mission": mission,
        "contract": work_contract(),
        "depends_on": list(depends_on),
        "revision": 1,
    }
    return ("work.authorized", payload)


def _accepted(item: str) -> tuple[str, dict[str, Any]]:
    return (
        "work.result_accepted",
        {"work_item": item, "review": {"verdicts": [], "summary": "ok"}},
    )


def _finished() -> Scenario:
    """``m-1`` with ``wi-a`` and ``wi-b`` (waits on ``wi-a``) both verified; ``m-2`` with a
    verified ``wi-o``; ``wi-open`` of ``m-1`` still open is added by the tests that need it."""
    return Scenario().given(
        ("mission.created", {"mission": "m-1", "goal": "g", "budgets": {}}),
        ("mission.created", {"mission": "m-2", "goal": "g2", "budgets": {}}),
        _authorized("wi-a"),
        _authorized("wi-b", depends_on=("wi-a",)),
        _authorized("wi-o", "m-2"),
        _accepted("wi-a"),
        _accepted("wi-b"),
        _accepted("wi-o"),
    )


def _request(*items: str, note: str = NOTE, mission: str = "m-1") -> dict[str, Any]:
    return {"mission": mission, "work_items": list(items), "note": note}


def _ask(group: Scenario, body: dict[str, Any]):
    return group.when(REQUEST, body, actor=MISSION_OWNER, roles=OWNER_ROLES)


def _approve(group: Scenario):
    body = {"mission": "m-1", "comment": ""}
    return group.when("mission.approve", body, actor=MISSION_OWNER, roles=OWNER_ROLES)


def _replace(group: Scenario, item: str, replaces: str, depends_on: tuple[str, ...] = ()):
    body = {
        "work_item": item,
        "mission": "m-1",
        "contract": work_contract(),
        "depends_on": list(depends_on),
        "replaces": replaces,
    }
    return group.when("work.authorize", body, actor=COORDINATOR, roles=frozenset({"coordinator"}))


def test_the_command_is_a_human_mission_owners_as_mission_approve_is() -> None:
    """R13.2-03 step 5: the same people who may approve may ask for changes instead."""
    spec, approve = COMMANDS[REQUEST], COMMANDS["mission.approve"]
    assert (
        (spec.roles, spec.humans_only)
        == (approve.roles, approve.humans_only)
        == (
            OWNER_ROLES,
            True,
        )
    )


def test_a_request_is_kept_on_the_mission_and_leaves_the_items_verified() -> None:
    """R13.2-03, R10.2-19: one ``mission.changes_requested`` with the body; the mission keeps
    the request with who asked and when; the items stay verified (terminal)."""
    group = _finished()
    decision = _ask(group, _request("wi-b"))
    assert [(e.type, e.payload) for e in decision.events] == [
        (REQUESTED, {"mission": "m-1", "work_items": ["wi-b"], "note": NOTE})
    ]
    assert decision.result == {"mission": "m-1", "work_items": ["wi-b"]}
    group.then(decision, actor=MISSION_OWNER)
    mission = group.state[mission_key("m-1")]
    (kept,) = mission.change_requests
    assert kept == {
        "work_items": ["wi-b"],
        "note": NOTE,
        "by": MISSION_OWNER,
        "sequence": group.sequence,
        "recorded_at": format_timestamp(NOW),
    }
    assert mission.as_dict()["change_requests"] == [kept]
    assert group.state[work_item_key("wi-b")].state == S.VERIFIED
    lookup = lambda i: group.state.get(work_item_key(i))  # noqa: E731
    assert [r["waiting"] for r in open_change_requests(mission, lookup)] == [["wi-b"]]


@pytest.mark.parametrize(
    ("setup", "body", "code", "details"),
    [
        ((), _request("wi-none"), ErrorCode.NOT_FOUND, {"work_item": "wi-none"}),
        ((), _request("wi-a", "wi-o"), ErrorCode.MALFORMED, {"work_item": "wi-o"}),
        (
            (_authorized("wi-open"),),
            _request("wi-a", "wi-open"),
            ErrorCode.ILLEGAL_TRANSITION,
            {"work_item": "wi-open", "state": S.OPEN},
        ),
        (
            (("mission.cancelled", {"mission": "m-1", "reason": "x"}),),
            _request("wi-a"),
            ErrorCode.ILLEGAL_TRANSITION,
            {"mission": "m-1", "state": "cancelled"},
        ),
    ],
)
def test_what_cannot_be_sent_back_is_refused_and_appends_nothing(
    setup: tuple, body: dict[str, Any], code: ErrorCode, details: dict[str, Any]
) -> None:
    """wire.md §8: an unknown item is 404, another mission's 400 ``MALFORMED``, one that is
    not verified 409 ``ILLEGAL_TRANSITION`` — each naming the item and its path — and an
    ended mission 409 ``ILLEGAL_TRANSITION`` (R10.2-22)."""
    group = _finished().given(*setup)
    before = (group.sequence, dict(group.state))
    error = group.refused(REQUEST, body, actor=MISSION_OWNER, roles=OWNER_ROLES)
    assert error.code is code
    assert details.items() <= error.details.items()
    if "work_item" in details:
        index = body["work_items"].index(details["work_item"])
        assert error.details["path"] == f"$.work_items[{index}]"
    assert (group.sequence, dict(group.state)) == before


@pytest.mark.parametrize(
    ("body", "path"),
    [
        (_request(), "$.work_items"),
        (_request(*(f"wi-{n}" for n in range(51))), "$.work_items"),
        (_request("wi-a", "wi-a"), "$.work_items[1]"),
        (_request("wi-a", note="   "), "$.note"),
        (_request("wi-a", note="x" * 10_001), "$.note"),
        ({"mission": "m-1", "work_items": ["wi-a"]}, "$.note"),
    ],
)
def test_a_malformed_body_is_refused_at_its_path(body: dict[str, Any], path: str) -> None:
    """wire§9: 1..50 distinct ids and a non-blank note of at most 10,000 characters."""
    error = _finished().refused(REQUEST, body, actor=MISSION_OWNER, roles=OWNER_ROLES)
    assert error.code is ErrorCode.MALFORMED
    assert error.details["path"] == path


def test_approval_waits_while_a_request_is_open_and_then_for_the_replacement() -> None:
    """R13.2-03 step 5, R10.2-22: with a request open ``mission.approve`` is refused naming the
    items unreplaced; once replaced, the replacement is unfinished work; once it is verified
    the mission is approved."""
    group = _finished()
    group.then(_ask(group, _request("wi-a", "wi-b")), actor=MISSION_OWNER)
    error = group.refused(
        "mission.approve", {"mission": "m-1", "comment": ""}, actor=MISSION_OWNER, roles=OWNER_ROLES
    )
    assert (error.code, error.requirement) == (ErrorCode.ILLEGAL_TRANSITION, "R13.2-03")
    assert error.details == {"changes_requested": ["wi-a", "wi-b"]}

    group.then(_replace(group, "wi-a-r1", "wi-a"))
    error = group.refused(
        "mission.approve", {"mission": "m-1", "comment": ""}, actor=MISSION_OWNER, roles=OWNER_ROLES
    )
    assert error.details == {"unfinished": ["wi-a-r1"]}
    group.then(_replace(group, "wi-b-r1", "wi-b", depends_on=("wi-a",)))
    mission = group.state[mission_key("m-1")]
    assert awaiting_replacement(mission, lambda i: group.state.get(work_item_key(i))) == []

    group.given(_accepted("wi-a-r1"), _accepted("wi-b-r1"))
    assert [e.type for e in _approve(group).events] == ["mission.approved"]


def test_a_verified_item_is_replaced_only_when_an_open_request_names_it() -> None:
    """R10.2-21 (issue 36 §5): without a request a verified item cannot be replaced; named by
    an open request it can, once; it stays verified with ``replaced_by`` and what depends on
    it now waits for the replacement."""
    group = _finished()
    error = group.refused("work.authorize", _replace_body("wi-a-r1", "wi-a"), actor=COORDINATOR)
    assert (error.code, error.details["state"]) == (ErrorCode.ILLEGAL_TRANSITION, S.VERIFIED)

    group.then(_ask(group, _request("wi-b")), actor=MISSION_OWNER)
    error = group.refused("work.authorize", _replace_body("wi-a-r1", "wi-a"), actor=COORDINATOR)
    assert error.code is ErrorCode.ILLEGAL_TRANSITION  # wi-a is not named

    decision = _replace(group, "wi-b-r1", "wi-b", depends_on=("wi-a",))
    assert [e.type for e in decision.events] == ["work.authorized", "work.replaced"]
    group.then(decision)
    replaced = group.state[work_item_key("wi-b")]
    assert (replaced.state, replaced.replaced_by) == (S.VERIFIED, "wi-b-r1")
    assert group.state[GRAPH_KEY].resolve("wi-b") == "wi-b-r1"
    again = group.refused("work.authorize", _replace_body("wi-b-r2", "wi-b"), actor=COORDINATOR)
    assert (again.code, again.details["replaced_by"]) == (ErrorCode.ILLEGAL_TRANSITION, "wi-b-r1")
    named_again = group.refused(REQUEST, _request("wi-b"), actor=MISSION_OWNER, roles=OWNER_ROLES)
    assert named_again.details["replaced_by"] == "wi-b-r1"


def _replace_body(item: str, replaces: str) -> dict[str, Any]:
    return {
        "work_item": item,
        "mission": "m-1",
        "contract": work_contract(),
        "depends_on": [],
        "replaces": replaces,
    }


def test_the_requests_survive_a_snapshot() -> None:
    """wire.md §4: a snapshot restores the mission's ``change_requests``."""
    group = _finished()
    group.then(_ask(group, _request("wi-a")), actor=MISSION_OWNER, at=NOW)
    mission = group.state[mission_key("m-1")]
    assert _mission(mission.as_dict()) == mission
