"""A group's own ``admin`` manages its memberships on the members screen (issue 36 §6; wire.md
§2 "admin (memberships)", wire.md §4, §9).

Gina holds ``admin`` of the world's group and is not staff; maria is an observer; nina a
member of nothing. Each grant, change and revoke is the existing membership command, sent as
gina through the one write path, which decides (membership, role, epoch) and records her as
the actor. Real PostgreSQL; forms posted as a browser would.
"""

from __future__ import annotations

import pytest

from apps.ledger.models import CommandRecord
from apps.registry import services
from apps.registry.models import Membership
from missionweave.protocol.errors import ErrorCode, ProtocolError
from tests.dashboard import workflows as wf
from tests.dashboard.conftest import Dashboard, logged_in, with_password
from tests.dashboard.html import text
from tests.factories import HumanPersona, grant, human

pytestmark = pytest.mark.django_db


def _url(group: str, suffix: str = "") -> str:
    return f"/groups/{group}/members/{suffix}"


@pytest.fixture
def gina(dash: Dashboard) -> HumanPersona:
    persona = with_password(human("gina"))
    grant(dash.world.alice, dash.world.group, persona, "admin")
    return persona


def test_a_group_admin_who_is_not_staff_sees_the_forms(dash: Dashboard, gina: HumanPersona) -> None:
    """wire§2: the group role ``admin`` administers memberships; the page offers gina the
    grant, change-roles and revoke forms and the export, like staff."""
    html = logged_in(gina).get(_url(dash.world.group)).content.decode()
    assert "Grant roles" in html
    assert "Change roles" in html
    assert "Revoke " in text(html)
    assert "/members/export/" in html
    assert "change memberships" not in text(html)


def test_a_group_admin_grants_changes_and_revokes_as_herself(
    dash: Dashboard, gina: HumanPersona
) -> None:
    """wire§4: each command is recorded with gina as its actor, epochs rising (wire§2)."""
    human("zoe")
    client = logged_in(gina)
    group = dash.world.group
    granted = client.post(
        _url(group, "grant/"), {"kind": "user", "name": "zoe", "roles": ["reviewer"]}
    )
    assert granted.status_code == 302
    event = wf.last_event(group)
    assert (event["type"], event["actor"], event["payload"]["roles"]) == (
        "membership.granted",
        "user:gina",
        ["reviewer"],
    )
    client.post(_url(group, "grant/"), {"principal": "user:zoe", "roles": ["worker"]})
    assert (wf.last_event(group)["type"], wf.last_event(group)["payload"]["epoch"]) == (
        "membership.changed",
        2,
    )
    client.post(_url(group, "revoke/"), {"principal": "user:zoe", "confirm": "on"})
    assert (wf.last_event(group)["type"], wf.last_event(group)["actor"]) == (
        "membership.revoked",
        "user:gina",
    )
    assert not Membership.objects.get(group_id=group, principal="user:zoe").active
    page = client.get(_url(group)).content.decode()
    assert 'data-type="membership.revoked"' in page


def test_a_group_admin_granting_to_nobody_is_told_it_does_not_exist(
    dash: Dashboard, gina: HumanPersona
) -> None:
    """The existence check of every grant (NOT_FOUND) holds for a group admin too."""
    group = dash.world.group
    head = wf.head(group)
    page = logged_in(gina).post(
        _url(group, "grant/"), {"principal": "user:ghost", "roles": ["worker"]}, follow=True
    )
    assert 'data-code="NOT_FOUND"' in page.content.decode()
    assert wf.head(group) == head


def test_an_admin_of_another_group_may_not_change_this_one(
    dash: Dashboard, gina: HumanPersona
) -> None:
    """The role is per group (wire§2): gina, admin of the world's group, is FORBIDDEN in a
    group where she is only an observer, and nothing is appended or recorded."""
    services.group_create(body={"id": "g-other", "organization": dash.world.org, "name": "Other"})
    grant(dash.world.alice, "g-other", gina, "observer")
    head = wf.head("g-other")
    with pytest.raises(ProtocolError) as refused:
        services.membership_grant(
            group_id="g-other",
            admin=gina.caller,
            body={"principal": "user:gina", "roles": ["admin"]},
        )
    assert refused.value.code is ErrorCode.FORBIDDEN
    assert wf.head("g-other") == head
    assert (
        logged_in(gina)
        .post(_url("g-other", "grant/"), {"principal": "user:gina", "roles": ["admin"]})
        .status_code
        == 403
    )
    assert wf.head("g-other") == head
    assert not CommandRecord.objects.filter(group_id="g-other", actor="user:gina").exists()


def test_a_revoked_admin_can_no_longer_change_memberships(
    dash: Dashboard, gina: HumanPersona
) -> None:
    """The write path judges the membership at the time of the command: once gina's admin
    role is revoked, her grant is 404 on the page (not a member) and FORBIDDEN at the door."""
    group = dash.world.group
    services.membership_revoke(group_id=group, admin=dash.world.alice.caller, principal="user:gina")
    head = wf.head(group)
    assert logged_in(gina).get(_url(group)).status_code == 404
    response = logged_in(gina).post(
        _url(group, "grant/"), {"principal": "user:maria", "roles": ["admin"]}
    )
    assert response.status_code == 404
    with pytest.raises(ProtocolError) as refused:
        services.membership_grant(
            group_id=group,
            admin=gina.caller,
            body={"principal": "user:maria", "roles": ["admin"]},
        )
    assert refused.value.code is ErrorCode.FORBIDDEN
    assert wf.head(group) == head


def test_every_member_reads_the_members_by_name_and_a_non_member_gets_404(
    dash: Dashboard, gina: HumanPersona
) -> None:
    """Issue 36 §6: the observer reads who holds which roles (names, not principals, outside
    the technical details) and whom to ask; nina, outside the group, gets 404."""
    page = logged_in(dash.maria).get(_url(dash.world.group))
    assert page.status_code == 200
    shown = text(page.content.decode())
    assert "ask gina" in shown
    assert "user:olga" not in shown.split("Technical details")[0]
    assert logged_in(dash.nina).get(_url(dash.world.group)).status_code == 404
