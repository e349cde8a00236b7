"""Approving and cancelling missions from the group page, through the one write path.

State is built with real commands (``tests.dashboard.workflows``); the forms are read from the
rendered page and posted back with Django's test client, as a browser would.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from apps.ledger.models import Event
from apps.work.models import Mission
from tests.dashboard import workflows as wf
from tests.dashboard.conftest import Dashboard, logged_in
from tests.dashboard.html import element, not_sent, text
from tests.factories import HumanPersona, grant, human, unique

pytestmark = pytest.mark.django_db


@dataclass
class People:
    dash: Dashboard
    petra: HumanPersona  # a mission_owner
    carl: HumanPersona  # a human coordinator

    @property
    def group(self) -> str:
        return self.dash.world.group


@pytest.fixture
def people(dash: Dashboard) -> People:
    petra, carl = human("petra"), human("carl")
    grant(dash.world.alice, dash.world.group, petra, "mission_owner")
    grant(dash.world.alice, dash.world.group, carl, "coordinator")
    return People(dash, petra, carl)


def group_page(client: Client, group: str) -> str:
    response = client.get(f"/groups/{group}/")
    assert response.status_code == 200, response.status_code
    return response.content.decode()


def mission_block(html: str, mission: str) -> str:
    return element(html, "data-mission", mission)


def form_fields(html: str, key: str) -> dict[str, str]:
    """The hidden fields of the form ``data-form-key=key`` on the page."""
    form = element(html, "data-form-key", key)
    return dict(re.findall(r'<input type="hidden" name="([a-z_]+)" value="([^"]*)"', form))


def post(client: Client, group: str, mission: str, action: str, **fields: object) -> str:
    """POST a mission form, follow the redirect back, return the page it lands on."""
    response = client.post(f"/groups/{group}/missions/{mission}/{action}/", fields, follow=True)
    if response.status_code == 403:  # a refusal of the person (wire§8 403): a page of its own
        return response.content.decode()
    assert response.redirect_chain, "the form answers with a redirect (post/redirect/get)"
    assert response.redirect_chain[0][1] == 302
    return response.content.decode()


def events_of(group: str, type_: str) -> list[dict[str, object]]:
    return [
        json.loads(document)
        for document in Event.objects.filter(group_id=group, type=type_)
        .order_by("sequence")
        .values_list("document", flat=True)
    ]


def flash(html: str) -> str:
    return text(element(html, "id", "flash"))


def refused(
    client: Client, group: str, mission: str, action: str, status: int, **fields: object
) -> str:
    """POST a mission form the server does not act on: it answers ``status`` with a page
    (issue 34 §3: the reason in words and the typed text kept), never a redirect."""
    response = client.post(f"/groups/{group}/missions/{mission}/{action}/", fields)
    assert response.status_code == status, response.status_code
    return response.content.decode()


def mission_state(group: str, mission: str) -> str:
    return Mission.objects.get(group_id=group, mission_id=mission).state


def test_a_mission_owner_approves_a_mission_with_nothing_unfinished(people: People) -> None:
    """R10.2-16, R10.2-22, wire§3: "Approve mission" submits ``mission.approve`` as
    user:<name> with the page's command id; the mission ends ``approved``, with a
    confirmation, and no action is offered on it any more."""
    world = people.dash.world
    mission = wf.mission(world)
    done = wf.authorize(world, mission)
    wf.submit(world.w1, people.group, "work.cancel", {"work_item": done, "reason": "not needed"})
    client = logged_in(people.petra)
    form = form_fields(group_page(client, people.group), f"mission-approve:{mission}")
    assert form["next"] == f"/groups/{people.group}/"

    html = post(client, people.group, mission, "approve", **form, comment="All done")

    [approved] = events_of(people.group, "mission.approved")
    assert approved["actor"] == "user:petra"
    assert approved["command_id"] == form["command_id"]
    assert approved["payload"] == {"mission": mission, "comment": "All done"}
    assert mission_state(people.group, mission) == "approved"
    assert "Approved the mission “Summarise the incident reports of November”." in flash(html)
    block = mission_block(html, mission)
    assert 'data-field="mission-state">Approved<' in block
    assert "mission-actions" not in block


def test_approving_a_mission_with_an_unfinished_work_item_is_refused(people: People) -> None:
    """R10.2-22: while a WorkItem is unfinished the approval is ILLEGAL_TRANSITION; the row
    does not offer it (it counts the unfinished items), a POST from a page that did (it was
    finished a moment ago) answers with the final-approval page, the refusal in words (its
    code collapsed in the technical details) and the comment kept; nothing is appended."""
    world = people.dash.world
    mission = wf.mission(world)
    wf.queued(world, mission)
    client = logged_in(people.petra)
    html = group_page(client, people.group)
    row = mission_block(html, mission)
    assert f"mission-approve:{mission}" not in row
    assert "0 of 1 WorkItem finished" in text(row)
    form = {"command_id": unique("cmd"), "next": f"/groups/{people.group}/"}

    before = wf.head(people.group)
    html = refused(client, people.group, mission, "approve", 409, **form, comment="Done, I think")

    assert wf.head(people.group) == before
    assert events_of(people.group, "mission.approved") == []
    assert mission_state(people.group, mission) == "active"
    box = element(html, "id", "not-sent")
    assert 'role="alert"' in box
    assert not_sent(html).startswith("Nothing was recorded. 1 WorkItem is not finished:")
    assert "ILLEGAL_TRANSITION" in element(box, "class", "technical-details")
    assert "Done, I think</textarea>" in box  # the form is gone: the comment is given back


def test_cancelling_a_mission_cancels_its_unfinished_work_items(people: People) -> None:
    """R10.2-18: "Cancel mission" with a reason submits ``mission.cancel``; every unfinished
    WorkItem gets ``work.cancelled`` carrying the reason, in the same command."""
    world = people.dash.world
    mission = wf.mission(world)
    queued = wf.queued(world, mission)
    active = wf.queued(world, mission)
    wf.start(world, active)
    client = logged_in(people.petra)
    form = form_fields(group_page(client, people.group), f"mission-cancel:{mission}")

    html = post(client, people.group, mission, "cancel", **form, reason="Out of scope")

    [cancelled] = events_of(people.group, "mission.cancelled")
    assert cancelled["actor"] == "user:petra"
    assert cancelled["payload"] == {"mission": mission, "reason": "Out of scope"}
    propagated = events_of(people.group, "work.cancelled")
    assert {event["payload"]["work_item"] for event in propagated} == {queued, active}
    assert all(event["command_id"] == form["command_id"] for event in propagated)
    assert all(event["payload"]["reason"] == "Out of scope" for event in propagated)
    assert wf.state_of(people.group, queued) == wf.state_of(people.group, active) == "cancelled"
    assert (
        "Cancelled the mission “Summarise the incident reports of November”: "
        "2 unfinished WorkItems cancelled." in flash(html)
    )


def test_a_cancellation_without_a_reason_is_refused_as_malformed(people: People) -> None:
    """R10.2-18, wire§1: the dashboard asks for the reason the WorkItems will carry."""
    world = people.dash.world
    mission = wf.mission(world)
    client = logged_in(people.petra)
    form = form_fields(group_page(client, people.group), f"mission-cancel:{mission}")
    before = wf.head(people.group)
    html = refused(client, people.group, mission, "cancel", 400, **form, reason="")
    assert wf.head(people.group) == before
    assert not_sent(html) == (
        "Nothing was recorded. Your reason for cancelling is empty: write it, then send it again."
    )


def test_approving_a_child_mission_verifies_its_parent_work_item(people: People) -> None:
    """R10.2-16, R10.4-06: the approval of a child mission in the same group verifies the
    parent WorkItem it blocked, in the same command, with the approval as evidence."""
    world = people.dash.world
    parent = wf.mission(world)
    item = wf.authorize(world, parent)
    child = unique("m-child")
    wf.submit(
        world.w1,
        people.group,
        "mission.create_child",
        {
            "work_item": item,
            "child": {"mission": child, "group": people.group, "goal": "Dig", "budgets": {}},
            "failure_policy": "block_parent",
        },
    )
    assert wf.state_of(people.group, item) == "blocked"
    client = logged_in(people.petra)
    form = form_fields(group_page(client, people.group), f"mission-approve:{child}")

    html = post(client, people.group, child, "approve", **form, comment="Dug deep enough")

    assert wf.state_of(people.group, item) == "verified"
    [told] = events_of(people.group, "mission.child_approved")
    assert told["command_id"] == form["command_id"]
    assert told["payload"]["work_item"] == item
    assert told["payload"]["evidence"]["producer"] == "user:petra"
    assert told["payload"]["evidence"]["result"]["summary"] == "Dug deep enough"
    assert "Its parent WorkItem is verified." in flash(html)


def test_a_coordinator_may_cancel_but_is_not_offered_the_approval(people: People) -> None:
    """wire§9 roles: ``mission.cancel`` is for mission_owners and coordinators,
    ``mission.approve`` for mission_owners only; a forged approval is FORBIDDEN."""
    world = people.dash.world
    mission = wf.mission(world)
    client = logged_in(people.carl)
    block = mission_block(group_page(client, people.group), mission)
    assert f'data-form-key="mission-cancel:{mission}"' in block
    assert "mission-approve:" not in block

    before = wf.head(people.group)
    html = refused(client, people.group, mission, "approve", 403, comment="forged")
    assert wf.head(people.group) == before
    assert "Only mission owners approve a mission; you are a coordinator." in not_sent(html)
    assert "forged</textarea>" in element(html, "id", "not-sent")


def test_an_observer_sees_no_actions_and_a_forged_post_appends_nothing(people: People) -> None:
    """R10.2-16, R10.2-18, wire§9: an observer gets neither form; posting anyway is refused by
    the write path with FORBIDDEN and the log is unchanged."""
    world = people.dash.world
    mission = wf.mission(world)
    client = logged_in(people.dash.maria)
    block = mission_block(group_page(client, people.group), mission)
    assert "<form" not in block
    assert "mission-actions" not in block

    before = wf.head(people.group)
    for action, field, words in (
        ("approve", "comment", "Only mission owners approve a mission; you are an observer."),
        (
            "cancel",
            "reason",
            "Only coordinators and mission owners cancel a mission; you are an observer.",
        ),
    ):
        html = refused(client, people.group, mission, action, 403, **{field: "forged"})
        assert words in not_sent(html)
    assert wf.head(people.group) == before
    assert mission_state(people.group, mission) == "active"


def test_non_members_get_404_and_nothing_is_appended(people: People) -> None:
    """wire§9 NOT_A_MEMBER: a person outside the group cannot even reach the form's target."""
    world = people.dash.world
    mission = wf.mission(world)
    before = wf.head(people.group)
    response = logged_in(people.dash.nina).post(
        f"/groups/{people.group}/missions/{mission}/cancel/", {"reason": "forged"}
    )
    assert response.status_code == 404
    assert wf.head(people.group) == before


def test_a_resubmitted_form_is_replayed_once(people: People) -> None:
    """wire§3 step 5: the form carries the command id minted with the page, so submitting it
    twice appends one ``mission.approved``; the second answer is the replayed one."""
    world = people.dash.world
    mission = wf.mission(world)
    client = logged_in(people.petra)
    form = form_fields(group_page(client, people.group), f"mission-approve:{mission}")
    post(client, people.group, mission, "approve", **form, comment="ok")
    head = wf.head(people.group)
    again = post(client, people.group, mission, "approve", **form, comment="ok")
    assert wf.head(people.group) == head
    assert len(events_of(people.group, "mission.approved")) == 1
    assert "Approved the mission “Summarise the incident reports of November”." in flash(again)


def test_mission_forms_are_csrf_protected(people: People) -> None:
    """Another site cannot make a mission owner cancel a mission."""
    world = people.dash.world
    mission = wf.mission(world)
    client = Client(enforce_csrf_checks=True)
    client.force_login(get_user_model().objects.get(username=people.petra.username))
    before = wf.head(people.group)
    response = client.post(
        f"/groups/{people.group}/missions/{mission}/cancel/", {"reason": "forged"}
    )
    assert response.status_code == 403
    assert wf.head(people.group) == before
