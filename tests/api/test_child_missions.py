"""Child missions and mission outcomes over HTTP (wire.md §6, §9; R10.2-15..18, R10.4-05/06).

A child mission may live in another group: there is no cross-group transaction, so the link
travels as events in both logs — the second appended by the authority after the first commits
(a ``transaction.on_commit`` follow-up, run here with ``django_capture_on_commit_callbacks``).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import timedelta
from typing import Any

import pytest
from rest_framework.test import APIClient

from apps.ledger.follow_ups import RESEND_AFTER, resend_pending
from apps.ledger.models import PendingFollowUp
from tests.factories import HumanPersona, grant, group, human

from .http import error_of, get
from .work_http import (
    Wire,
    WorkWorld,
    authorized,
    build_work_world,
    checked,
    checkpoint_body,
    contract,
    evidence,
    far,
    machine_criteria,
    offer_body,
    owned,
    review,
    started,
    submission,
)

pytestmark = pytest.mark.django_db

CHILD_GROUP = "g-child"
Commit = Callable[..., AbstractContextManager[Any]]


class ChildWorld:
    """The WorkWorld plus ``g-child``: ``w1`` coordinates both groups, ``carol`` owns missions
    in ``g-child``."""

    def __init__(self, api: APIClient) -> None:
        self.ww = build_work_world()
        group(CHILD_GROUP, self.ww.org)
        self.carol: HumanPersona = human("carol")
        grant(self.ww.alice, CHILD_GROUP, self.carol, "mission_owner")
        grant(self.ww.alice, CHILD_GROUP, self.ww.w1, "coordinator")
        self.parent = Wire(api, self.ww.group, self.ww.olga)
        self.child = Wire(api, CHILD_GROUP, self.carol)


@pytest.fixture
def cw(api: APIClient, db: None) -> ChildWorld:
    return ChildWorld(api)


def child_body(
    mission: str = "m-c", group_id: str = CHILD_GROUP, policy: str = "fail_parent"
) -> dict[str, Any]:
    return {
        "work_item": "wi-p",
        "child": {
            "mission": mission,
            "group": group_id,
            "goal": "Collect the October reports first",
            "budgets": {"money": 2.0, "tokens": 50000},
        },
        "failure_policy": policy,
    }


def _child_group(same_group: bool, cw: ChildWorld) -> tuple[str, Wire, HumanPersona]:
    """Where the child lives, a client of that group, and a human mission_owner there."""
    if same_group:
        return cw.ww.group, cw.parent, cw.ww.olga
    return CHILD_GROUP, cw.child, cw.carol


def _create_child(cw: ChildWorld, commit: Any, same_group: bool, policy: str) -> dict[str, Any]:
    """``wi-p`` in ``m-p`` (queued, owned by w2), then its child mission ``m-c``."""
    owned(cw.parent, cw.ww, "wi-p", mission="m-p")
    child_group, _, _ = _child_group(same_group, cw)
    with commit():
        return cw.parent.ok(
            cw.ww.w1, "mission.create_child", child_body("m-c", child_group, policy)
        )


# --- creation and the link -----------------------------------------------------------------


def test_child_in_the_same_group_blocks_the_parent_and_links_both_missions(
    cw: ChildWorld, commit: Any
) -> None:
    """R10.2-15, R10.4-06: one command appends mission.child_created and the child's
    mission.created (consecutive); the parent WorkItem is blocked; parent and child name each
    other."""
    authorized(cw.parent, cw.ww, "wi-p", mission="m-p")
    head = cw.parent.head()
    answer = cw.parent.ok(cw.ww.w1, "mission.create_child", child_body("m-c", cw.ww.group))
    correlation = answer["result"]["correlation_id"]

    assert [e["type"] for e in answer["events"]] == ["mission.child_created", "mission.created"]
    assert [e["sequence"] for e in answer["events"]] == [head + 1, head + 2]
    created_child, created = cw.parent.events(after=head)
    assert created_child["payload"]["correlation_id"] == correlation
    assert created["payload"]["link"]["correlation_id"] == correlation
    assert created["payload"]["link"]["work_item"] == "wi-p"
    item = cw.parent.item("wi-p")
    assert (item["state"], item["child"]["status"]) == ("blocked", "running")
    assert cw.parent.mission("m-p")["children"] == ["m-c"]
    assert cw.parent.mission("m-c")["parent"] == "m-p"


def test_child_in_another_group_is_created_there_by_the_authority_with_the_link(
    cw: ChildWorld, commit: Any
) -> None:
    """R10.4-05, R10.4-06, wire§6: the parent's log gets mission.child_created; the child's
    group gets mission.created (actor ``authority``) carrying the correlation id; the parent
    lists ``g-child/m-c`` and the child names ``g-research/m-p``."""
    authorized(cw.parent, cw.ww, "wi-p", mission="m-p")
    child_head = cw.child.head()
    with commit():
        answer = cw.parent.ok(cw.ww.w1, "mission.create_child", child_body())
    correlation = answer["result"]["correlation_id"]

    assert [e["type"] for e in answer["events"]] == ["mission.child_created"]
    (event,) = cw.child.events(after=child_head)
    assert (event["type"], event["actor"], event["group"]) == (
        "mission.created",
        "authority",
        CHILD_GROUP,
    )
    assert event["command_id"] == correlation
    assert event["payload"]["link"] == {
        "group": cw.ww.group,
        "mission": "m-p",
        "work_item": "wi-p",
        "correlation_id": correlation,
    }
    parent_event = cw.parent.events(after=answer["events"][0]["sequence"] - 1)[0]
    assert parent_event["payload"]["correlation_id"] == correlation
    assert cw.parent.item("wi-p")["state"] == "blocked"
    assert cw.parent.mission("m-p")["children"] == [f"{CHILD_GROUP}/m-c"]
    child = cw.child.mission("m-c")
    assert (child["parent"], child["state"]) == (f"{cw.ww.group}/m-p", "active")


def test_child_group_must_exist(cw: ChildWorld) -> None:
    """R10.4-06: a child in a group that does not exist is 404 NOT_FOUND; nothing appended."""
    authorized(cw.parent, cw.ww, "wi-p", mission="m-p")
    body = child_body(group_id="g-nowhere")
    error = cw.parent.refused(cw.ww.w1, "mission.create_child", body, 404, "NOT_FOUND", "R10.4-06")
    assert error["details"]["group"] == "g-nowhere"
    assert cw.parent.item("wi-p")["state"] == "open"


def test_child_group_requires_the_coordinator_to_be_a_member_there(cw: ChildWorld) -> None:
    """R10.4-06, wire§2: a coordinator may only create a child mission in a group it belongs
    to with a role that may create missions there; otherwise nothing is appended anywhere."""
    group("g-foreign", cw.ww.org)
    grant(cw.ww.alice, "g-foreign", cw.ww.w2, "worker")
    authorized(cw.parent, cw.ww, "wi-p", mission="m-p")
    cw.parent.refused(
        cw.ww.w1, "mission.create_child", child_body(group_id="g-foreign"), 403, "NOT_A_MEMBER"
    )
    grant(cw.ww.alice, "g-foreign", cw.ww.w1, "worker")
    cw.parent.refused(
        cw.ww.w1, "mission.create_child", child_body(group_id="g-foreign"), 403, "FORBIDDEN"
    )
    assert cw.parent.item("wi-p")["state"] == "open"


@pytest.mark.parametrize(
    ("policy", "parent_state"), [("fail_parent", "failed"), ("block_parent", "blocked")]
)
def test_a_child_the_other_group_refuses_is_reported_back_to_the_parent(
    cw: ChildWorld, commit: Any, policy: str, parent_state: str
) -> None:
    """R10.4-05, R10.4-06, R10.2-17: with no cross-group transaction the child's group may refuse
    the link (here: the mission id is taken). The refusal travels back as mission.child_failed
    (outcome ``refused``) under the failure policy, so the parent is never blocked for ever."""
    cw.child.ok(cw.carol, "mission.create", {"mission": "m-c", "goal": "taken", "budgets": {}})
    child_head = cw.child.head()
    answer = _create_child(cw, commit, same_group=False, policy=policy)

    assert cw.child.head() == child_head  # the child's group appended nothing
    assert cw.child.mission("m-c")["parent"] is None
    linked = cw.parent.events(after=answer["events"][0]["sequence"])
    assert [(e["type"], e["actor"]) for e in linked] == [("mission.child_failed", "authority")]
    assert linked[0]["payload"]["outcome"] == "refused"
    assert linked[0]["payload"]["correlation_id"] == answer["result"]["correlation_id"]
    item = cw.parent.item("wi-p")
    assert (item["state"], item["child"]["status"]) == (parent_state, "refused")
    if policy == "block_parent":  # no child runs: the coordinator may unblock it
        cw.parent.ok(cw.ww.w1, "work.unblock", {"work_item": "wi-p", "to": "queued"})


@pytest.mark.parametrize("state", ["submitted", "verified", "cancelled"])
def test_child_mission_only_from_a_state_the_table_allows(cw: ChildWorld, state: str) -> None:
    """R10.2-15: mission.create_child from submitted or a terminal state is ILLEGAL_TRANSITION."""
    w1, w2 = cw.ww.w1, cw.ww.w2
    lease = started(
        cw.parent,
        cw.ww,
        "wi-p",
        mission="m-p",
        contract=contract(acceptance_criteria=machine_criteria()),
    )
    if state == "cancelled":
        cw.parent.ok(w1, "work.cancel", {"work_item": "wi-p", "reason": "dropped"})
    else:
        body = submission(cw.parent, w2, "wi-p", lease, [evidence("c1", w2)])
        cw.parent.ok(w2, "work.submit", body)
    if state == "verified":
        checked(cw.parent.group, "wi-p")  # R13.2-03: acceptance waits for the checks
        cw.parent.ok(w1, "work.accept_result", {"work_item": "wi-p", "review": review("c1")})
    error = cw.parent.refused(
        w1, "mission.create_child", child_body(), 409, "ILLEGAL_TRANSITION", "R10.2-15"
    )
    assert error["details"]["state"] == state


def test_unblock_while_the_child_runs_is_illegal(cw: ChildWorld, commit: Any) -> None:
    """R10.2-15: ownership is protected while the linked child runs: work.unblock is
    ILLEGAL_TRANSITION, and so is a new offer."""
    _create_child(cw, commit, same_group=False, policy="fail_parent")
    for to in ("queued", "open"):
        cw.parent.refused(
            cw.ww.w1,
            "work.unblock",
            {"work_item": "wi-p", "to": to},
            409,
            "ILLEGAL_TRANSITION",
            "R10.2-15",
        )
    cw.parent.refused(
        cw.ww.w1,
        "work.offer",
        offer_body("wi-p", [("o-new", cw.ww.w3, far())]),
        409,
        "ILLEGAL_TRANSITION",
        "R10.2-03",
    )
    item = cw.parent.item("wi-p")
    assert (item["state"], item["owner"]) == ("blocked", cw.ww.w2.principal)


# --- the child's outcome reaches the parent ---------------------------------------------------


@pytest.mark.parametrize("same_group", [True, False], ids=["same-group", "other-group"])
def test_approving_the_child_verifies_the_parent_with_the_approval_as_evidence(
    cw: ChildWorld, commit: Any, same_group: bool
) -> None:
    """R10.2-16: mission.approve of the child (a human mission_owner of the child's group)
    turns the parent WorkItem verified; the approval is its evidence (mission.child_approved)."""
    correlation = _create_child(cw, commit, same_group, "fail_parent")["result"]["correlation_id"]
    _, child_wire, owner = _child_group(same_group, cw)
    parent_head = cw.parent.head()

    with commit():
        answer = child_wire.ok(owner, "mission.approve", {"mission": "m-c", "comment": "complete"})
    assert answer["events"][0]["type"] == "mission.approved"
    assert child_wire.mission("m-c")["state"] == "approved"
    linked = [
        e for e in cw.parent.events(after=parent_head) if e["type"] == "mission.child_approved"
    ]
    assert len(linked) == 1
    (event,) = linked
    assert event["payload"]["correlation_id"] == correlation
    assert event["actor"] == (owner.principal if same_group else "authority")
    if same_group:  # one command: consecutive events
        assert [e["type"] for e in answer["events"]] == [
            "mission.approved",
            "mission.child_approved",
        ]
    item = cw.parent.item("wi-p")
    assert item["state"] == "verified"
    assert item["child"]["status"] == "approved"
    approval = item["evidence"][-1]
    assert approval["producer"] == owner.principal
    assert approval["result"]["verdict"] == "pass"
    assert approval["result"]["summary"] == "complete"


@pytest.mark.parametrize("same_group", [True, False], ids=["same-group", "other-group"])
@pytest.mark.parametrize(
    ("policy", "parent_state"), [("fail_parent", "failed"), ("block_parent", "blocked")]
)
def test_a_failed_child_follows_the_failure_policy(
    cw: ChildWorld, commit: Any, same_group: bool, policy: str, parent_state: str
) -> None:
    """R10.2-17: the child's failure reaches the parent as mission.child_failed;
    ``fail_parent`` fails the parent WorkItem, ``block_parent`` leaves it blocked."""
    _create_child(cw, commit, same_group, policy)
    _, child_wire, _ = _child_group(same_group, cw)
    parent_head = cw.parent.head()

    with commit():
        child_wire.ok(cw.ww.w1, "mission.fail", {"mission": "m-c", "reason": "sources missing"})
    linked = [e for e in cw.parent.events(after=parent_head) if e["type"] == "mission.child_failed"]
    assert [e["payload"]["failure_policy"] for e in linked] == [policy]
    assert linked[0]["payload"]["outcome"] == "failed"
    item = cw.parent.item("wi-p")
    assert item["state"] == parent_state
    assert item["child"]["status"] == "failed"
    if policy == "block_parent":  # the coordinator decides what happens next
        cw.parent.ok(cw.ww.w1, "work.unblock", {"work_item": "wi-p", "to": "queued"})
        assert cw.parent.item("wi-p")["state"] == "queued"


def test_agents_cannot_approve_a_mission(cw: ChildWorld, commit: Any) -> None:
    """wire§9: mission.approve is for human mission_owners only: an agent holding mission_owner
    and a coordinator agent are both 403 FORBIDDEN."""
    _create_child(cw, commit, same_group=True, policy="fail_parent")
    body = {"mission": "m-c", "comment": "looks fine"}
    cw.parent.refused(cw.ww.mo_agent, "mission.approve", body, 403, "FORBIDDEN", "wire§9")
    cw.parent.refused(cw.ww.w1, "mission.approve", body, 403, "FORBIDDEN", "wire§9")
    assert cw.parent.mission("m-c")["state"] == "active"
    assert cw.parent.item("wi-p")["state"] == "blocked"


# --- a mission's end propagates to its unfinished WorkItems ----------------------------------


def _items_in_every_state(wire: Wire, ww: WorkWorld) -> dict[str, str]:
    """Items of ``m-1``, one per state; returns item → state as served."""
    machine = contract(acceptance_criteria=machine_criteria())
    authorized(wire, ww, "wi-open")
    authorized(wire, ww, "wi-offered")
    wire.ok(ww.w1, "work.offer", offer_body("wi-offered", [("o-x", ww.w3, far())]))
    owned(wire, ww, "wi-queued")
    active_lease = started(wire, ww, "wi-active", ww.w3)
    blocked_lease = started(wire, ww, "wi-blocked", ww.w3)
    block = {**checkpoint_body("wi-blocked", blocked_lease), "required_resolution": "need access"}
    wire.ok(ww.w3, "work.block", block)
    for item in ("wi-submitted", "wi-verified"):
        lease = started(wire, ww, item, contract=machine)
        wire.ok(ww.w2, "work.submit", submission(wire, ww.w2, item, lease, [evidence("c1", ww.w2)]))
    checked(ww.group, "wi-verified")  # R13.2-03: acceptance waits for the checks
    wire.ok(ww.w1, "work.accept_result", {"work_item": "wi-verified", "review": review("c1")})
    authorized(wire, ww, "wi-failed")
    failure = {"work_item": "wi-failed", "evidence": [evidence("c1", ww.w1, verdict="fail")]}
    wire.ok(ww.w1, "work.fail", failure)
    authorized(wire, ww, "wi-cancelled")
    wire.ok(ww.w1, "work.cancel", {"work_item": "wi-cancelled", "reason": "dropped"})
    states = {item: wire.item(item)["state"] for item in wire.mission("m-1")["work_items"]}
    assert wire.item("wi-active")["lease"]["lease_id"] == active_lease
    return states


@pytest.mark.parametrize(
    ("command", "mission_event", "item_event", "ended"),
    [
        ("mission.fail", "mission.failed", "work.failed", "failed"),
        ("mission.cancel", "mission.cancelled", "work.cancelled", "cancelled"),
    ],
)
def test_mission_end_propagates_to_every_unfinished_work_item_in_one_command(
    cw: ChildWorld, command: str, mission_event: str, item_event: str, ended: str
) -> None:
    """R10.2-18, wire§6: mission.fail/mission.cancel append the mission's event, then one
    work.failed/work.cancelled per unfinished WorkItem, consecutively; terminal items (and a
    failed one) are untouched; the mission cannot end twice (R10.2-22)."""
    wire, ww = cw.parent, cw.ww
    before = _items_in_every_state(wire, ww)
    assert before == {
        "wi-open": "open", "wi-offered": "offered", "wi-queued": "queued",
        "wi-active": "active", "wi-blocked": "blocked", "wi-submitted": "submitted",
        "wi-verified": "verified", "wi-failed": "failed", "wi-cancelled": "cancelled",
    }  # fmt: skip
    unfinished = [
        item for item, state in before.items() if state not in ("verified", "failed", "cancelled")
    ]
    head = wire.head()

    answer = wire.ok(ww.olga, command, {"mission": "m-1", "reason": "priorities changed"})
    assert [e["type"] for e in answer["events"]] == [mission_event] + [item_event] * len(unfinished)
    events = wire.events(after=head)
    assert [e["sequence"] for e in events] == list(range(head + 1, head + 2 + len(unfinished)))
    assert [e["payload"]["work_item"] for e in events[1:]] == unfinished
    assert all(e["command_id"] == answer["command_id"] for e in events)
    after = {item: wire.item(item)["state"] for item in before}
    for item, state in before.items():
        assert after[item] == (ended if item in unfinished else state), item
    assert wire.item("wi-active")["lease"]["status"] == "revoked"
    assert wire.item("wi-active")["owner"] == ww.w3.principal
    assert wire.mission("m-1")["state"] == ended
    wire.refused(
        ww.w1, command, {"mission": "m-1", "reason": "again"}, 409, "ILLEGAL_TRANSITION", "R10.2-22"
    )


def test_mission_reads_are_for_members_of_that_group(
    api: APIClient, cw: ChildWorld, commit: Any
) -> None:
    """wire§4: the child's group serves its mission to its members only (NOT_A_MEMBER)."""
    _create_child(cw, commit, same_group=False, policy="fail_parent")
    path = f"/groups/{CHILD_GROUP}/missions/m-c"
    error_of(get(api, path, cw.ww.w2.token), 403, "NOT_A_MEMBER")
    assert cw.child.mission("m-c", persona=cw.ww.w1)["parent"] == f"{cw.ww.group}/m-p"


def test_a_child_missions_usage_is_charged_to_its_parent_work_item_and_missions(
    cw: ChildWorld, commit: Any
) -> None:
    """R10.1-01(g), R10.4-05, R11.5-12: usage charged in the child's group climbs to the parent
    WorkItem and its mission in the parent's group after the child's commit (an authority
    follow-up, ``mission.child_usage_recorded``); the child mission's own budget refuses what
    would overflow it (R11.5-13) and then nothing travels."""
    authorized(cw.parent, cw.ww, "wi-p", mission="m-p")
    with commit():
        cw.parent.ok(cw.ww.w1, "mission.create_child", child_body())  # money 2.0, tokens 50000
    grant(cw.ww.alice, CHILD_GROUP, cw.ww.w2, "worker")
    lease = started(cw.child, cw.ww, "wi-c", mission="m-c")
    parent_head = cw.parent.head()
    usage = {"tokens": 1000, "money": 0.5}

    with commit():
        cw.child.ok(
            cw.ww.w2, "work.usage", {"work_item": "wi-c", "lease_id": lease, "usage": usage}
        )

    assert cw.child.item("wi-c")["budgets"]["used"] == usage
    assert cw.child.mission("m-c")["budgets"]["used"] == usage
    assert cw.parent.item("wi-p")["budgets"]["used"] == usage
    assert cw.parent.mission("m-p")["budgets"]["used"] == usage
    (event,) = cw.parent.events(after=parent_head)
    assert (event["type"], event["actor"]) == ("mission.child_usage_recorded", "authority")
    assert event["payload"]["child"]["group"] == CHILD_GROUP
    assert event["payload"]["over_budget"] == []

    error = cw.child.refused(
        cw.ww.w2,
        "work.usage",
        {"work_item": "wi-c", "lease_id": lease, "usage": {"money": 1.6}},
        409,
        "BUDGET_EXCEEDED",
        "R11.5-13",
    )
    assert error["details"]["budget"] == {"kind": "mission", "id": "m-c", "limit": 2.0, "used": 0.5}
    assert cw.parent.head() == parent_head + 1


def test_a_follow_up_lost_after_commit_is_resent_from_the_outbox(
    cw: ChildWorld, django_capture_on_commit_callbacks: Commit
) -> None:
    """R10.4-05, R10.4-06: the cross-group follow-up is written to an outbox in the parent's
    transaction; when the process dies before running it (its after-commit callback never
    runs), the resend task carries it later, once, and a second resend changes nothing."""
    authorized(cw.parent, cw.ww, "wi-p", mission="m-p")
    child_head = cw.child.head()
    with django_capture_on_commit_callbacks(execute=False):  # "the process died here"
        cw.parent.ok(cw.ww.w1, "mission.create_child", child_body())
    (pending,) = PendingFollowUp.objects.all()
    assert (pending.target_group, pending.follow_up["type"]) == (
        CHILD_GROUP,
        "link.create_child_mission",
    )
    assert cw.child.head() == child_head
    assert resend_pending() == 0  # too young: the committing process may still be running it

    PendingFollowUp.objects.update(created_at=pending.created_at - RESEND_AFTER - timedelta(1))
    assert resend_pending() == 1

    (created,) = cw.child.events(after=child_head)
    assert (created["type"], created["actor"]) == ("mission.created", "authority")
    assert not PendingFollowUp.objects.exists()
    assert resend_pending() == 0
    assert cw.child.head() == child_head + 1
