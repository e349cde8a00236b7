"""What ending a WorkItem cleans up (R10.2-14, R10.2-18, R10.2-20, R10.2-21), as
given/when/then on the pure core: a running child mission is cancelled with its parent, the
items waiting on an ended item are told, and a replacement carries the ended item's work on.
"""

from __future__ import annotations

from typing import Any

import pytest

from missionweave.protocol import states as S
from missionweave.protocol.errors import ErrorCode
from missionweave.protocol.facts import Decision
from missionweave.protocol.missions.model import mission_key
from missionweave.protocol.work.dependencies import GRAPH_KEY
from missionweave.protocol.work.execution import unmet_dependencies
from missionweave.protocol.work.items import work_item_key

from .deciders import GROUP, Scenario
from .work_scenarios import COORDINATOR, selection_basis, work_contract

OTHER_GROUP = "g-lab"
REASON = "the plan changed"


def _mission(mission: str, **extra: Any) -> tuple[str, dict[str, Any]]:
    return ("mission.created", {"mission": mission, "goal": "g", "budgets": {}, **extra})


def _authorized(
    item: str, mission: str = "m-1", depends_on: tuple[str, ...] = (), **contract: Any
) -> tuple[str, dict[str, Any]]:
    return (
        "work.authorized",
        {
            "work_item": item,
            "mission": mission,
            "contract": work_contract(**contract),
            "depends_on": list(depends_on),
            "revision": 1,
        },
    )


def _child_created(item: str, child_group: str, child: str = "m-c") -> tuple[str, dict]:
    return (
        "mission.child_created",
        {
            "work_item": item,
            "mission": "m-1",
            "child": {"mission": child, "group": child_group, "goal": "c", "budgets": {}},
            "failure_policy": "fail_parent",
            "correlation_id": f"link:{GROUP}:c-{item}",
        },
    )


def _cancelled(item: str) -> tuple[str, dict[str, Any]]:
    return ("work.cancelled", {"work_item": item, "reason": "dropped"})


def _types(decision: Decision) -> list[tuple[str, str | None]]:
    return [(e.type, e.payload.get("work_item", e.payload.get("mission"))) for e in decision.events]


def _cancel(group: Scenario, item: str) -> Decision:
    body = {"work_item": item, "reason": REASON}
    return group.when("work.cancel", body, actor=COORDINATOR, roles=frozenset({"coordinator"}))


# --- (a) a cancelled parent cancels its running child mission ---------------------------------


def _parent_with_child_here() -> Scenario:
    """``wi-p`` blocked by ``m-c`` in this group, which holds ``wi-c1`` (open) and ``wi-c2``
    (cancelled already)."""
    group = Scenario().given(_mission("m-1"), _authorized("wi-p"), _child_created("wi-p", GROUP))
    link = {
        "group": GROUP,
        "mission": "m-1",
        "work_item": "wi-p",
        "correlation_id": f"link:{GROUP}:c-wi-p",
    }
    return group.given(
        _mission("m-c", link=link),
        _authorized("wi-c1", "m-c"),
        _authorized("wi-c2", "m-c"),
        _cancelled("wi-c2"),
    )


def test_cancelling_a_parent_cancels_its_running_child_mission_in_the_same_group() -> None:
    """R10.2-14, R10.2-18: one command cancels the parent, records that it cancelled its
    child, ends the child mission and its unfinished WorkItems — and does not tell the
    cancelled parent back."""
    group = _parent_with_child_here()
    decision = _cancel(group, "wi-p")
    assert _types(decision) == [
        ("work.cancelled", "wi-p"),
        ("mission.child_cancelled", "wi-p"),
        ("mission.cancelled", "m-c"),
        ("work.cancelled", "wi-c1"),
    ]
    child_cancelled = decision.events[1].payload
    assert child_cancelled["child"] == {"group": GROUP, "mission": "m-c"}
    assert child_cancelled["reason"] == f"wi-p was cancelled: {REASON}"
    assert decision.events[2].payload["cancelled_with"]["work_item"] == "wi-p"
    assert decision.follow_ups == ()
    group.then(decision)
    assert group.state[mission_key("m-c")].state == "cancelled"
    assert group.state[work_item_key("wi-p")].child["status"] == "cancelled"
    assert group.state[work_item_key("wi-c1")].state == S.CANCELLED


def test_cancelling_a_parent_sends_the_cancellation_to_a_child_in_another_group() -> None:
    """R10.2-14, R10.4-05: the parent's group records ``mission.child_cancelled`` and hands the
    child's group an authority follow-up whose id is stable, so a resend is a replay."""
    group = Scenario().given(
        _mission("m-1"), _authorized("wi-p"), _child_created("wi-p", OTHER_GROUP)
    )
    decision = _cancel(group, "wi-p")
    assert _types(decision) == [("work.cancelled", "wi-p"), ("mission.child_cancelled", "wi-p")]
    (follow_up,) = decision.follow_ups
    assert (follow_up.group, follow_up.type) == (OTHER_GROUP, "link.cancel_child_mission")
    assert follow_up.body == {
        "mission": "m-c",
        "correlation_id": f"link:{GROUP}:c-wi-p",
        "reason": f"wi-p was cancelled: {REASON}",
        "parent": {"group": GROUP, "work_item": "wi-p"},
    }
    assert follow_up.command_id.startswith("link.cancel_child_mission:")
    assert len(follow_up.command_id) <= 128
    assert _cancel(Scenario(state=dict(group.state)), "wi-p").follow_ups == decision.follow_ups


def test_the_child_group_cancels_the_linked_mission_without_telling_the_parent() -> None:
    """R10.2-18, R10.4-06: ``link.cancel_child_mission`` ends the child mission and its
    unfinished WorkItems; a mission not linked by that correlation id is NOT_FOUND."""
    link = {"group": "g-parent", "mission": "m-p", "work_item": "wi-p", "correlation_id": "L1"}
    group = Scenario().given(_mission("m-c", link=link), _authorized("wi-c1", "m-c"))
    body = {
        "mission": "m-c",
        "correlation_id": "L1",
        "reason": "wi-p was cancelled",
        "parent": {"group": "g-parent", "work_item": "wi-p"},
    }
    decision = group.when("link.cancel_child_mission", body, actor="authority")
    assert _types(decision) == [("mission.cancelled", "m-c"), ("work.cancelled", "wi-c1")]
    assert decision.follow_ups == ()
    error = group.refused("link.cancel_child_mission", {**body, "correlation_id": "L2"})
    assert error.code is ErrorCode.NOT_FOUND
    group.then(decision)
    again = group.refused("link.cancel_child_mission", body)
    assert again.code is ErrorCode.ILLEGAL_TRANSITION


def test_cancelling_a_mission_cancels_the_child_missions_of_its_work_items() -> None:
    """R10.2-21 (cancel the branch at mission level), R10.2-18: ``mission.cancel`` of the
    parent's mission ends its items and, through them, their running child missions."""
    group = _parent_with_child_here()
    body = {"mission": "m-1", "reason": REASON}
    decision = group.when("mission.cancel", body, actor=COORDINATOR)
    assert _types(decision) == [
        ("mission.cancelled", "m-1"),
        ("work.cancelled", "wi-p"),
        ("mission.child_cancelled", "wi-p"),
        ("mission.cancelled", "m-c"),
        ("work.cancelled", "wi-c1"),
    ]


def test_a_finally_failed_parent_cancels_its_child_too() -> None:
    """R10.2-14, R10.2-16: a failed parent can no longer use its child's approval, so the
    coordinator's ``work.fail`` of a blocked parent cancels the child like a cancel does."""
    group = _parent_with_child_here()
    body = {"work_item": "wi-p", "evidence": [_failure_evidence()]}
    decision = group.when("work.fail", body, actor=COORDINATOR, roles=frozenset({"coordinator"}))
    assert [t for t, _ in _types(decision)] == [
        "work.failed",
        "mission.child_cancelled",
        "mission.cancelled",
        "work.cancelled",
    ]
    assert decision.events[1].payload["reason"] == "wi-p was failed: gave up"


def test_a_child_that_ends_by_itself_is_not_cancelled_again() -> None:
    """R10.2-17: the child's own failure fails its parent under ``fail_parent``; the
    cleanup does not cancel the child that just ended."""
    group = _parent_with_child_here()
    decision = group.when(
        "mission.fail", {"mission": "m-c", "reason": "no data"}, actor=COORDINATOR
    )
    types = [t for t, _ in _types(decision)]
    assert types == ["mission.failed", "work.failed", "mission.child_failed"]


def test_usage_from_a_child_whose_parent_cancelled_it_sends_the_cancellation_again() -> None:
    """R10.2-14, R10.4-05: when the cancellation reached the child's group before the child
    existed there, the child's next usage report brings the same cancel command again."""
    group = Scenario().given(
        _mission("m-1"), _authorized("wi-p"), _child_created("wi-p", OTHER_GROUP)
    )
    first = _cancel(group, "wi-p")
    group.then(first)
    body = {
        "work_item": "wi-p",
        "correlation_id": f"link:{GROUP}:c-wi-p",
        "usage": {"tokens": 10},
        "source": {"group": OTHER_GROUP, "mission": "m-c", "work_item": "wi-c1"},
    }
    decision = group.when("link.child_usage", body, actor="authority")
    assert decision.follow_ups[-1] == first.follow_ups[0]


def _failure_evidence() -> dict[str, Any]:
    return {
        "criterion": "c1",
        "method": "deterministic",
        "result": {"verdict": "fail", "summary": "gave up", "data": {}},
        "producer": COORDINATOR,
        "artifacts": [],
    }


# --- (b) the items waiting on an ended item are told ------------------------------------------


def _waiting_world(policy: str = "all_verified") -> Scenario:
    """``wi-a``; ``wi-b`` and ``wi-d`` depend on it (``wi-b`` under ``policy``); ``wi-x``
    depends on ``wi-b``."""
    return Scenario().given(
        _mission("m-1"),
        _authorized("wi-a"),
        _authorized("wi-b", depends_on=("wi-a",), dependency_policy=policy),
        _authorized("wi-d", depends_on=("wi-a",)),
        _authorized("wi-x", depends_on=("wi-b",)),
    )


def test_a_cancelled_items_dependents_are_told_and_keep_their_state() -> None:
    """R10.2-14, R10.2-22, R10.4-03: each unstarted ``all_verified`` dependent gets
    ``work.dependency_ended`` naming the dependency, how it ended and why; its state is
    unchanged (the table has no move to ``blocked`` for it), its projection holds the
    entry; a dependent of a dependent is not told."""
    group = _waiting_world()
    decision = _cancel(group, "wi-a")
    assert _types(decision) == [
        ("work.cancelled", "wi-a"),
        ("work.dependency_ended", "wi-b"),
        ("work.dependency_ended", "wi-d"),
    ]
    assert decision.events[1].payload == {
        "work_item": "wi-b",
        "dependency": "wi-a",
        "outcome": "cancelled",
        "reason": REASON,
    }
    group.then(decision)
    waiting = group.state[work_item_key("wi-b")]
    assert waiting.state == S.OPEN
    (entry,) = waiting.as_dict()["ended_dependencies"]
    assert (entry["dependency"], entry["outcome"], entry["reason"]) == ("wi-a", "cancelled", REASON)


def test_all_terminal_dependents_are_not_told() -> None:
    """wire§9: under ``all_terminal`` a cancelled dependency counts as met."""
    decision = _cancel(_waiting_world("all_terminal"), "wi-a")
    assert ("work.dependency_ended", "wi-b") not in _types(decision)
    assert ("work.dependency_ended", "wi-d") in _types(decision)


def test_dependents_ended_by_the_same_command_are_not_told() -> None:
    """R10.2-18: a mission's cancellation ends its items together; none is told of another."""
    group = _waiting_world()
    decision = group.when("mission.cancel", {"mission": "m-1", "reason": REASON}, actor=COORDINATOR)
    assert "work.dependency_ended" not in [t for t, _ in _types(decision)]


def test_a_failed_item_offered_again_restores_its_dependents() -> None:
    """R10.2-20: a failed item's new offer means its work goes on: the waiting items'
    entries go (``work.dependency_restored``)."""
    group = _waiting_world()
    body = {"work_item": "wi-a", "evidence": [_failure_evidence()]}
    failed = group.when("work.fail", body, actor=COORDINATOR, roles=frozenset({"coordinator"}))
    assert [t for t, _ in _types(failed)].count("work.dependency_ended") == 2
    group.then(failed)
    offer = {
        "work_item": "wi-a",
        "offers": [{"offer": "o-9", "worker": "agent:w2", "expires_at": "2026-11-30T11:00:00Z"}],
        "mode": "sequential",
        "selection_basis": selection_basis(),
    }
    decision = group.when("work.offer", offer, actor=COORDINATOR)
    assert _types(decision) == [
        ("work.offered", "wi-a"),
        ("work.dependency_restored", "wi-b"),
        ("work.dependency_restored", "wi-d"),
    ]
    group.then(decision)
    assert group.state[work_item_key("wi-b")].ended_dependencies == ()


# --- a replacement (R10.2-21) ------------------------------------------------------------------


def _replace(group: Scenario, item: str, replaces: str, **extra: Any) -> Decision:
    body = {
        "work_item": item,
        "mission": "m-1",
        "contract": work_contract(),
        "depends_on": [],
        "replaces": replaces,
        **extra,
    }
    return group.when("work.authorize", body, actor=COORDINATOR)


def test_a_replacement_names_what_it_replaces_and_the_waiting_items_follow_it() -> None:
    """R10.2-21: ``work.authorize`` with ``replaces`` appends ``work.replaced`` for the old
    item; its dependents' entries go; they now wait for the replacement, and are told when
    it ends in turn."""
    group = _waiting_world()
    group.then(_cancel(group, "wi-a"))
    decision = _replace(group, "wi-a2", "wi-a")
    assert _types(decision) == [
        ("work.authorized", "wi-a2"),
        ("work.replaced", "wi-a"),
        ("work.dependency_restored", "wi-b"),
        ("work.dependency_restored", "wi-d"),
    ]
    assert decision.events[2].payload == {
        "work_item": "wi-b",
        "dependency": "wi-a",
        "replaced_by": "wi-a2",
    }
    group.then(decision)
    assert group.state[work_item_key("wi-a")].replaced_by == "wi-a2"
    assert group.state[work_item_key("wi-a2")].replaces == "wi-a"
    assert group.state[GRAPH_KEY].dependents_of("wi-a2") == ["wi-b", "wi-d"]
    again = _cancel(group, "wi-a2")
    assert [t for t, _ in _types(again)].count("work.dependency_ended") == 2


def test_a_dependency_on_a_replaced_item_is_met_by_its_verified_replacement() -> None:
    """R10.2-21, R10.4-03: ``work.start`` judges a replaced dependency by its replacement."""
    group = _waiting_world()
    group.then(_cancel(group, "wi-a"))
    group.then(_replace(group, "wi-a2", "wi-a"))
    waiting = group.state[work_item_key("wi-d")]
    assert unmet_dependencies(group.state, waiting) == ["wi-a"]
    review = {"verdicts": [], "summary": "done"}
    group.given(("work.result_accepted", {"work_item": "wi-a2", "review": review}))
    assert unmet_dependencies(group.state, waiting) == []


@pytest.mark.parametrize(
    ("setup", "replaces", "code", "extra"),
    [
        ((), "wi-none", ErrorCode.NOT_FOUND, {}),
        ((), "wi-a", ErrorCode.ILLEGAL_TRANSITION, {}),  # open: cancel it first
        ((_cancelled("wi-a"),), "wi-a", ErrorCode.DEPENDENCY_CYCLE, {"depends_on": ["wi-b"]}),
        ((_cancelled("wi-o"),), "wi-o", ErrorCode.MALFORMED, {}),
    ],
)
def test_what_cannot_be_replaced_is_refused(
    setup: tuple, replaces: str, code: ErrorCode, extra: dict
) -> None:
    """R10.2-21: only an existing failed or cancelled item of the same mission, and never by
    an item that waits on it (directly or not: ``wi-b`` waits on ``wi-a``)."""
    group = _waiting_world().given(_mission("m-2"), _authorized("wi-o", "m-2"), *setup)
    error = group.refused("work.authorize", _replace_body("wi-new", replaces, **extra))
    assert error.code is code


def _replace_body(item: str, replaces: str, **extra: Any) -> dict[str, Any]:
    return {
        "work_item": item,
        "mission": "m-1",
        "contract": work_contract(),
        "depends_on": [],
        "replaces": replaces,
        **extra,
    }


def test_an_item_is_replaced_once_and_a_replaced_item_is_not_offered_again() -> None:
    """R10.2-21: a second replacement and a new offer of the replaced item are
    ILLEGAL_TRANSITION naming the replacement."""
    group = _waiting_world()
    body = {"work_item": "wi-a", "evidence": [_failure_evidence()]}
    group.then(group.when("work.fail", body, actor=COORDINATOR, roles=frozenset({"coordinator"})))
    group.then(_replace(group, "wi-a2", "wi-a"))
    error = group.refused("work.authorize", _replace_body("wi-a3", "wi-a"))
    assert (error.code, error.details["replaced_by"]) == (ErrorCode.ILLEGAL_TRANSITION, "wi-a2")
    offer = {
        "work_item": "wi-a",
        "offers": [{"offer": "o-9", "worker": "agent:w2", "expires_at": "2026-11-30T11:00:00Z"}],
        "mode": "sequential",
        "selection_basis": selection_basis(),
    }
    error = group.refused("work.offer", offer, actor=COORDINATOR)
    assert (error.code, error.requirement) == (ErrorCode.ILLEGAL_TRANSITION, "R10.2-21")
