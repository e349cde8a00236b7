"""``mission.create`` through the write path and the Mission projection it leaves
(wire.md §4 ``GET /groups/{g}/missions/{id}``, §9)."""

from __future__ import annotations

from typing import Any

import pytest

from apps.ledger.models import GroupLog
from apps.ledger.write_path import Outcome, submit_command
from apps.registry import services
from apps.work.selectors import mission_document
from missionweave.protocol.errors import ErrorCode, ProtocolError
from tests import factories
from tests.factories import AgentPersona, HumanPersona, World, mission_body

pytestmark = pytest.mark.django_db


def _create(world: World, persona: AgentPersona | HumanPersona, body: dict, **over: Any) -> Outcome:
    document = persona.command(world.group, "mission.create", body, **over)
    return submit_command(group_id=world.group, document=document, caller=persona.caller)


def _refused(
    world: World, persona: AgentPersona | HumanPersona, body: dict, **over: Any
) -> ProtocolError:
    head = GroupLog.objects.get(group_id=world.group).head_sequence
    with pytest.raises(ProtocolError) as refused:
        _create(world, persona, body, **over)
    assert GroupLog.objects.get(group_id=world.group).head_sequence == head
    return refused.value


def test_a_created_mission_is_served_with_the_wire_fields(world: World) -> None:
    """wire§4: state, goal, work_items, budgets, parent, children; created by the actor."""
    outcome = _create(world, world.w1, mission_body("m-1", budgets={"money": 5.0, "tokens": 10}))

    assert outcome.status == 201
    assert outcome.body["result"] == {"mission": "m-1"}
    assert [e["type"] for e in outcome.body["events"]] == ["mission.created"]
    document = mission_document(world.group, "m-1")
    assert document == {
        "id": "m-1",
        "state": "active",
        "goal": mission_body()["goal"],
        "budgets": {"limits": {"money": 5.0, "tokens": 10}, "used": {}},
        "parent": None,
        "children": [],
        "work_items": [],
        "created_by": "agent:w1",
        "created_sequence": outcome.body["events"][0]["sequence"],
        "link": None,
        "usage_series": [],
        "change_requests": [],
    }


def test_children_name_their_parent_and_the_parent_lists_them_in_order(world: World) -> None:
    """R10.4-06: a child names its parent; the parent lists its children in creation order."""
    _create(world, world.olga, mission_body("root"))
    _create(world, world.w1, mission_body("kid-b", parent="root"))
    _create(world, world.olga, mission_body("kid-a", parent="root"))
    _create(world, world.w1, mission_body("grandkid", parent="kid-a"))

    assert mission_document(world.group, "root")["children"] == ["kid-b", "kid-a"]
    assert mission_document(world.group, "kid-a")["parent"] == "root"
    assert mission_document(world.group, "kid-a")["children"] == ["grandkid"]
    assert mission_document(world.group, "grandkid")["created_by"] == "agent:w1"


def test_an_unknown_parent_or_a_duplicate_id_is_refused(world: World) -> None:
    """R10.4-06, R10.2-22: NOT_FOUND names $.parent; an existing id is ILLEGAL_TRANSITION."""
    orphan = _refused(world, world.w1, mission_body("m-orphan", parent="ghost"))
    assert (orphan.code, orphan.details["path"]) == (ErrorCode.NOT_FOUND, "$.parent")
    _create(world, world.w1, mission_body("m-1"))
    again = _refused(world, world.olga, mission_body("m-1"))
    assert again.code is ErrorCode.ILLEGAL_TRANSITION
    with pytest.raises(ProtocolError) as missing:
        mission_document(world.group, "m-orphan")
    assert missing.value.code is ErrorCode.NOT_FOUND


def test_mission_ids_are_scoped_to_their_group(world: World) -> None:
    """wire§4: the same mission id in another group is another mission, invisible here."""
    other = factories.group("g-other", world.org)
    factories.grant(world.alice, other, world.w1, "coordinator")
    _create(world, world.w1, mission_body("m-1"))
    document = world.w1.command(other, "mission.create", mission_body("m-1", goal="elsewhere"))
    submit_command(group_id=other, document=document, caller=world.w1.caller)

    assert mission_document(world.group, "m-1")["goal"] == mission_body()["goal"]
    assert mission_document(other, "m-1")["goal"] == "elsewhere"
    with pytest.raises(ProtocolError):
        mission_document(other, "m-never")


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"goal": "g", "budgets": {}}, "$.mission"),
        ({"mission": "m", "budgets": {}}, "$.goal"),
        ({"mission": "m", "goal": "g"}, "$.budgets"),
        ({"mission": "m x", "goal": "g", "budgets": {}}, "$.mission"),
        ({"mission": "m", "goal": "", "budgets": {}}, "$.goal"),
        ({"mission": "m", "goal": "g", "budgets": {"money": -1}}, "$.budgets.money"),
        ({"mission": "m", "goal": "g", "budgets": {"money": "5"}}, "$.budgets.money"),
        ({"mission": "m", "goal": "g", "budgets": {"tokens": True}}, "$.budgets.tokens"),
        ({"mission": "m", "goal": "g", "budgets": {"beer": 1}}, "$.budgets.beer"),
        ({"mission": "m", "goal": "g", "budgets": []}, "$.budgets"),
        ({"mission": "m", "goal": "g", "budgets": {}, "parent": 7}, "$.parent"),
        ({"mission": "m", "goal": "g", "budgets": {}, "owner": "me"}, "$.owner"),
    ],
)
def test_malformed_bodies_name_the_bad_field(world: World, body: dict, path: str) -> None:
    """wire§9, wire§8: MALFORMED with the JSON path of the field; nothing appended."""
    refusal = _refused(world, world.w1, body)
    assert (refusal.code, refusal.details["path"]) == (ErrorCode.MALFORMED, path)


@pytest.mark.parametrize("role", ["worker", "reviewer", "observer", "admin"])
def test_only_mission_owners_and_coordinators_create_missions(world: World, role: str) -> None:
    """wire§9: ``mission.create`` is issued by mission_owner or coordinator; others FORBIDDEN."""
    factories.grant(world.alice, world.group, world.w2, role)
    refusal = _refused(world, world.w2, mission_body())
    assert refusal.code is ErrorCode.FORBIDDEN


def test_stale_membership_epoch_and_revoked_members_are_refused(world: World) -> None:
    """wire§3 steps 7–8: after a role change the old epoch is STALE_MEMBERSHIP; a revoked
    member is NOT_A_MEMBER; a member granted again works with the new epoch."""
    old_epoch = world.w1.membership_epochs[world.group]
    factories.grant(world.alice, world.group, world.w1, "coordinator", "reviewer")
    stale = _refused(world, world.w1, mission_body(), membership_epoch=old_epoch)
    assert stale.code is ErrorCode.STALE_MEMBERSHIP
    assert stale.details["current_epoch"] == old_epoch + 1

    services.membership_revoke(
        group_id=world.group, admin=world.alice.caller, principal=world.w1.principal
    )
    assert _refused(world, world.w1, mission_body()).code is ErrorCode.NOT_A_MEMBER

    factories.grant(world.alice, world.group, world.w1, "coordinator")
    assert world.w1.membership_epochs[world.group] == old_epoch + 3
    assert _create(world, world.w1, mission_body("m-back")).status == 201


def test_an_agent_command_from_a_previous_session_is_stale_session(world: World) -> None:
    """wire§3 step 6, R11.3-10: a command signed for the old session epoch is refused."""
    old = world.w1.command(world.group, "mission.create", mission_body())
    world.w1.open_session()
    with pytest.raises(ProtocolError) as refused:
        submit_command(group_id=world.group, document=old, caller=world.w1.caller)
    assert refused.value.code is ErrorCode.STALE_SESSION
