"""The memberships screen (issue 13 §1, issue 36 §6): staff administer memberships of any group
through the existing membership commands (wire§4), each through the one write path; the other
members read it (group admins: tests/dashboard/test_group_admin_memberships.py).

Alice is the world's staff admin (a member of nothing); maria an observer; nina a member of
nothing. Real PostgreSQL; forms posted as a browser would.
"""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from apps.ledger.models import Event, GroupLog
from apps.registry import services
from apps.registry.models import Membership
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.exports import verify_export
from tests.dashboard import workflows as wf
from tests.dashboard.conftest import Dashboard, logged_in
from tests.dashboard.html import element, text
from tests.factories import human

pytestmark = pytest.mark.django_db


def _url(group: str, suffix: str = "") -> str:
    return f"/groups/{group}/members/{suffix}"


def test_non_staff_non_member_gets_404_everywhere(dash: Dashboard) -> None:
    """A page never reveals a group to a person outside it (wire§4), whatever the screen."""
    nina = logged_in(dash.nina)
    group = dash.world.group
    assert nina.get(_url(group)).status_code == 404
    assert nina.get(_url(group, "export/")).status_code == 404
    body = {"principal": "user:nina", "roles": ["admin"]}
    assert nina.post(_url(group, "grant/"), body).status_code == 404
    assert nina.post(_url(group, "revoke/"), {"principal": "agent:w2"}).status_code == 404
    assert logged_in(dash.nina).get(_url("g-nowhere")).status_code == 404


def test_a_member_who_is_not_an_admin_reads_the_members_and_may_not_change_them(
    dash: Dashboard,
) -> None:
    """Issue 36 §6 (wire§2): every member sees who is in the group and their roles, by name,
    read-only; changing them is staff's or the group admin's, so an observer's posts get a 403
    page in words and nothing is appended."""
    maria = logged_in(dash.maria)
    group = dash.world.group
    head = wf.head(group)
    page = maria.get(_url(group))
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-principal="user:olga"' in html
    assert "Only the group" in text(html)
    assert "change memberships" in text(html)
    assert "members-grant" not in html
    assert "/members/grant/" not in html
    assert "Revoke" not in text(html)
    assert "/members/export/" not in html
    grant = maria.post(_url(group, "grant/"), {"principal": "user:maria", "roles": ["admin"]})
    assert grant.status_code == 403
    assert "change memberships: ask one of them" in text(grant.content.decode())
    assert maria.post(_url(group, "revoke/"), {"principal": "agent:w2"}).status_code == 403
    assert maria.get(_url(group, "export/")).status_code == 403
    assert wf.head(group) == head


def test_staff_see_members_roles_epochs_and_since_even_without_membership(
    dash: Dashboard,
) -> None:
    """Staff open the screen of any group (alice is a member of nothing)."""
    page = logged_in(dash.world.alice).get(_url(dash.world.group))
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-principal="agent:w1"' in html
    assert 'data-principal="user:maria"' in html
    assert "member since" in html
    assert "Membership changes" in html


def test_grant_change_and_revoke_each_append_their_event_by_the_staff_person(
    dash: Dashboard,
) -> None:
    """wire§2/§4/§6: granted (epoch 1), changed (2), revoked (3), actor user:alice."""
    human("zoe")
    alice = logged_in(dash.world.alice)
    group = dash.world.group
    response = alice.post(_url(group, "grant/"), {"principal": "user:zoe", "roles": ["observer"]})
    assert response.status_code == 302
    assert (wf.last_event(group)["type"], wf.last_event(group)["actor"]) == (
        "membership.granted",
        "user:alice",
    )
    alice.post(_url(group, "grant/"), {"principal": "user:zoe", "roles": ["worker", "reviewer"]})
    changed = wf.last_event(group)
    assert (changed["type"], changed["payload"]["roles"], changed["payload"]["epoch"]) == (
        "membership.changed",
        ["reviewer", "worker"],
        2,
    )
    asked = alice.post(_url(group, "revoke/"), {"principal": "user:zoe"})
    assert asked.status_code == 200  # the confirmation page: nothing revoked yet
    assert wf.last_event(group)["type"] == "membership.changed"
    alice.post(_url(group, "revoke/"), {"principal": "user:zoe", "confirm": "on"})
    revoked = wf.last_event(group)
    assert (revoked["type"], revoked["payload"]["epoch"]) == ("membership.revoked", 3)
    assert not Membership.objects.get(group_id=group, principal="user:zoe").active
    audit = alice.get(_url(group)).content.decode()
    assert audit.index('data-type="membership.revoked"') < audit.index(
        'data-type="membership.changed"'
    )  # newest first
    # each change's number opens it in the group's verified timeline
    seq = revoked["sequence"]
    entry = audit.split(f'data-sequence="{seq}"')[1].split("</li>")[0]
    assert f'href="/groups/{group}/timeline/?before={seq + 1}#event-{seq}"' in entry


def test_regranting_the_same_roles_appends_nothing_and_keeps_the_epoch(
    dash: Dashboard,
) -> None:
    """Issue 13 §1 (wire§2): the same roles again are a no-op: 200 with the current epoch."""
    group = dash.world.group
    head = wf.head(group)
    outcome = services.membership_grant(
        group_id=group,
        admin=dash.world.alice.caller,
        body={"principal": "agent:w2", "roles": ["worker"]},
    )
    assert (outcome.status, outcome.body["result"]["epoch"]) == (200, 1)
    assert wf.head(group) == head
    follow = logged_in(dash.world.alice).post(
        _url(group, "grant/"), {"principal": "agent:w2", "roles": ["worker"]}, follow=True
    )
    assert "w2 holds worker." in text(follow.content.decode())
    assert wf.head(group) == head


@pytest.mark.parametrize("principal", ["user:ghost", "agent:ghost"])
def test_granting_to_a_principal_that_does_not_exist_is_not_found(
    dash: Dashboard, principal: str
) -> None:
    """wire§4: roles go only to a Django user or a registered agent; NOT_FOUND otherwise."""
    group = dash.world.group
    head = wf.head(group)
    with pytest.raises(ProtocolError) as refused:
        services.membership_grant(
            group_id=group,
            admin=dash.world.alice.caller,
            body={"principal": principal, "roles": ["worker"]},
        )
    assert refused.value.code is ErrorCode.NOT_FOUND
    page = logged_in(dash.world.alice).post(
        _url(group, "grant/"), {"principal": principal, "roles": ["worker"]}, follow=True
    )
    assert page.status_code == 200
    assert 'data-code="NOT_FOUND"' in page.content.decode()
    assert wf.head(group) == head


@pytest.mark.parametrize(
    ("kind", "said"),
    [
        ("user", "There is no person with the username “nobdy”. Check the spelling"),
        ("agent", "There is no agent with the id “nobdy”: an agent is registered before"),
    ],
)
def test_a_grant_to_a_name_nobody_has_keeps_what_was_typed_and_says_why_beside_it(
    dash: Dashboard, kind: str, said: str
) -> None:
    """wire§4 NOT_FOUND, as a person reads it: the members page again (404, nothing
    appended), the kind, the name and the roles as typed, and the reason next to the name
    field — not a generic "it no longer exists" at the top of a blank form."""
    group = dash.world.group
    head = wf.head(group)
    typed = {"kind": kind, "name": "nobdy", "roles": ["reviewer", "worker"]}
    page = logged_in(dash.world.alice).post(_url(group, "grant/"), typed)
    assert page.status_code == 404
    html = page.content.decode()
    assert 'value="nobdy"' in html
    assert 'aria-invalid="true"' in html
    assert said in text(element(html, "data-field", "grant-name-problem"))
    assert f'<option value="{kind}" selected>' in html
    assert 'value="reviewer" checked' in html
    assert 'value="worker" checked' in html
    assert 'value="admin" checked' not in html
    assert 'data-code="NOT_FOUND"' in html  # in the collapsed technical details
    assert wf.head(group) == head


def test_a_grant_without_roles_keeps_the_name_typed(dash: Dashboard) -> None:
    """A form the server cannot send (no role ticked) comes back with the name kept (400)."""
    group = dash.world.group
    head = wf.head(group)
    page = logged_in(dash.world.alice).post(_url(group, "grant/"), {"kind": "user", "name": "zoe"})
    assert page.status_code == 400
    assert 'value="zoe"' in page.content.decode()
    assert wf.head(group) == head


def test_forms_need_the_csrf_token(dash: Dashboard) -> None:
    """Every form carries Django's CSRF token; a post without it is refused, nothing sent."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(get_user_model().objects.get(username="alice"))
    group = dash.world.group
    head = wf.head(group)
    assert client.post(_url(group, "revoke/"), {"principal": "agent:w2"}).status_code == 403
    assert wf.head(group) == head
    assert "csrfmiddlewaretoken" in client.get(_url(group)).content.decode()


def test_the_export_downloads_as_a_verifiable_file(dash: Dashboard) -> None:
    """R16-08, R16-10: the export_group format, checked by verify_export."""
    response = logged_in(dash.world.alice).get(_url(dash.world.group, "export/"))
    assert response.status_code == 200
    assert "attachment" in response["Content-Disposition"]
    lines = b"".join(response.streaming_content).splitlines(keepends=True)
    assert verify_export(lines).ok


def test_staff_see_every_group_and_others_only_their_own(dash: Dashboard) -> None:
    """A group created over the API is visible to staff, who need not be its members."""
    services.group_create(body={"id": "g-api", "organization": dash.world.org, "name": "Via API"})
    assert 'data-group="g-api"' in logged_in(dash.world.alice).get("/groups/").content.decode()
    assert 'data-group="g-api"' not in logged_in(dash.maria).get("/groups/").content.decode()


def test_a_group_created_on_the_dashboard_starts_with_its_creator_as_admin(
    dash: Dashboard,
) -> None:
    """Its first event grants the staff creator admin + mission_owner (wire§4); a non-staff
    person may not create one."""
    body = {"id": "g-dash", "organization": dash.world.org, "name": "From the dashboard"}
    response = logged_in(dash.world.alice).post("/groups/", body)
    assert (response.status_code, response["Location"]) == (302, "/groups/g-dash/")
    first = json.loads(Event.objects.get(group_id="g-dash", sequence=1).document)
    assert (first["type"], first["payload"]["principal"], first["payload"]["roles"]) == (
        "membership.granted",
        "user:alice",
        ["admin", "mission_owner"],
    )
    refused = logged_in(dash.maria).post("/groups/", {**body, "id": "g-maria"})
    assert refused.status_code == 403
    assert not GroupLog.objects.filter(group_id="g-maria").exists()
