"""The dashboard pages through Django's test client: login, the group list, a group's
timeline with paging by sequence, and 404 for anyone who is not a member.
"""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from apps.ledger.write_path import submit_batch, submit_command
from apps.registry import services
from tests.dashboard.conftest import PASSWORD, Dashboard, logged_in
from tests.dashboard.html import element, text
from tests.factories import World, grant, group, mission_body

pytestmark = pytest.mark.django_db


def create_missions(world: World, count: int) -> list[str]:
    """``count`` accepted ``mission.create`` commands from the coordinator w1, one batch."""
    bodies = [mission_body() for _ in range(count)]
    outcomes = submit_batch(
        group_id=world.group,
        documents=[world.w1.command(world.group, "mission.create", body) for body in bodies],
        caller=world.w1.caller,
    )
    assert all(outcome.status == 201 for outcome in outcomes)  # type: ignore[union-attr]
    return [body["mission"] for body in bodies]


def without_csrf(content: bytes) -> bytes:
    """A page without its CSRF token, which is masked differently on every response."""
    return re.sub(rb'name="csrfmiddlewaretoken" value="[^"]+"', b"", content)


def timeline_shown(html: str) -> list[int]:
    """The sequences of the Timeline page's lines, in order."""
    return [int(n) for n in re.findall(r'id="event-\d+"\s+data-sequence="(\d+)"', html)]


def test_pages_redirect_anonymous_visitors_to_the_login_page(db: None) -> None:
    """wire§2: people act as ``user:<name>`` only once authenticated; pages need a login."""
    client = Client()
    for path in ("/", "/groups/", "/groups/g-research/"):
        response = client.get(path)
        assert response.status_code == 302
        assert response["Location"] == f"/login/?next={path}"


def test_login_with_a_password_leads_to_the_inbox_and_the_groups(dash: Dashboard) -> None:
    """wire§2: a human logs in with Django auth, lands on their inbox (``/``) and sees the
    groups of ``user:<name>`` at ``/groups/``."""
    client = Client()
    page = client.get("/login/")
    assert page.status_code == 200
    assert b'name="password"' in page.content
    response = client.post("/login/", {"username": "maria", "password": PASSWORD})
    assert response.status_code == 302
    assert response["Location"] == "/"
    assert b"<h1>Inbox</h1>" in client.get("/").content
    assert b'data-group="g-research"' in client.get("/groups/").content


def test_a_wrong_password_stays_on_the_login_page(dash: Dashboard) -> None:
    """wire§2: no session without the right password."""
    response = Client().post("/login/", {"username": "maria", "password": "nope"})
    assert response.status_code == 200
    assert b'role="alert"' in response.content


def test_logout_is_a_post_and_ends_the_session(dash: Dashboard) -> None:
    """wire§2: after logging out, pages need a login again."""
    client = logged_in(dash.maria)
    assert client.post("/logout/").status_code == 302
    assert client.get("/").status_code == 302


def test_group_list_shows_only_groups_with_an_active_membership(dash: Dashboard) -> None:
    """wire§2, wire§4 memberships: a member sees the group with its head sequence; a group
    where the user was never granted, or was revoked, is not listed."""
    world = dash.world
    group("g-secret", world.org)
    group("g-former", world.org)
    grant(world.alice, "g-former", dash.maria, "observer")
    services.membership_revoke(
        group_id="g-former", admin=world.alice.caller, principal=dash.maria.principal
    )
    html = logged_in(dash.maria).get("/groups/").content.decode()
    assert 'data-group="g-research"' in html
    assert "g-secret" not in html
    assert "g-former" not in html
    # build_world granted 3 memberships, the fixture one more: 4 events, said in words
    assert "<strong>4</strong> events" in html
    assert "head" not in text(element(html, "data-group", "g-research"))
    assert '<span class="role">observer</span>' in html


def test_a_user_in_no_group_is_told_so(dash: Dashboard) -> None:
    """wire§2: nina (no membership) sees an empty list that names her username, which an
    admin grants a membership to (never the ``user:`` principal, issue 34 §6)."""
    html = logged_in(dash.nina).get("/groups/").content.decode()
    assert "not a member of any group" in html
    assert "<code>nina</code>" in html
    assert "user:nina" not in html
    assert "g-research" not in html


@pytest.mark.parametrize("path", ["/groups/g-research/", "/groups/g-research/?before=2"])
def test_a_non_member_gets_404_exactly_like_for_a_group_that_does_not_exist(
    dash: Dashboard, path: str
) -> None:
    """wire§4: existence is not revealed to non-members (the rule ``GET /artifacts`` states)."""
    client = logged_in(dash.nina)
    existing = client.get(path)
    missing = client.get("/groups/g-nowhere/")
    assert existing.status_code == missing.status_code == 404
    assert without_csrf(existing.content) == without_csrf(missing.content)


def test_a_revoked_member_gets_404(dash: Dashboard) -> None:
    """wire§4 memberships: after ``membership.revoked`` the group's page is gone for them."""
    services.membership_revoke(
        group_id=dash.world.group, admin=dash.world.alice.caller, principal=dash.maria.principal
    )
    assert logged_in(dash.maria).get("/groups/g-research/").status_code == 404


def test_group_page_shows_the_missions_and_leads_to_the_verified_log(dash: Dashboard) -> None:
    """Issue 37 §1, wire§6: the group page is an overview with the group's missions and
    their state; every event, newest first, each re-hashed and linked, is on the Timeline it
    links to, its type, principals and payload in each line's collapsed JSON."""
    missions = create_missions(dash.world, 2)
    client = logged_in(dash.maria)
    response = client.get("/groups/g-research/")
    assert response.status_code == 200
    html = response.content.decode()
    for mission in missions:
        assert f'data-mission="{mission}"' in html
    assert html.count('class="state state--active"') == 2
    assert 'href="/groups/g-research/timeline/">Timeline: every event, in words' in html

    html = client.get("/groups/g-research/timeline/").content.decode()
    assert timeline_shown(html) == [6, 5, 4, 3, 2, 1]
    assert html.count('data-verdict="verified"') == 6
    assert "✓ Verified" in html
    assert "&quot;type&quot;: &quot;mission.created&quot;" in html
    assert "&quot;actor&quot;: &quot;agent:w1&quot;" in html
    assert "&quot;goal&quot;: &quot;Summarise" in html


def test_group_page_embeds_what_the_live_script_needs(dash: Dashboard) -> None:
    """wire§7: the overview subscribes after the head it was read at, and names the event
    families that refresh its counts, its attention list and its approval queue."""
    create_missions(dash.world, 1)
    response = logged_in(dash.maria).get("/groups/g-research/")
    stream = response.context["stream"]
    assert stream["group"] == "g-research"
    assert stream["head_sequence"] == 5
    assert "work" in stream["overview_families"]
    embedded = re.search(
        r'<script id="overview-data" type="application/json">(.*?)</script>',
        response.content.decode(),
        re.S,
    )
    assert embedded is not None
    assert json.loads(embedded.group(1))["head_sequence"] == 5


def test_the_log_pages_of_the_group_page_are_the_timelines(dash: Dashboard) -> None:
    """wire§6, issue 37 §1: ``?before=N`` of the group page (links kept from before the
    Timeline) is the Timeline's page of the events before #N: exact, since sequences have
    no gaps (the Timeline's own paging: test_timeline_page)."""
    create_missions(dash.world, 56)  # 4 membership events + 56 = head 60
    client = logged_in(dash.maria)
    older = client.get("/groups/g-research/?before=11", follow=True)
    assert older.redirect_chain == [("/groups/g-research/timeline/?before=11", 302)]
    assert timeline_shown(older.content.decode()) == list(range(10, 0, -1))
    assert older.context["page"].verified


def test_before_past_the_head_shows_the_newest_page(dash: Dashboard) -> None:
    """wire§4 ``after ≥ head`` analogue: a cursor beyond the head is simply the newest page."""
    html = logged_in(dash.maria).get("/groups/g-research/?before=999", follow=True)
    assert timeline_shown(html.content.decode()) == [4, 3, 2, 1]


@pytest.mark.parametrize("before", ["abc", "0", "-3", "1.5", "²", "9" * 40])
def test_before_must_be_a_positive_integer(dash: Dashboard, before: str) -> None:
    """wire§4: a malformed cursor is refused, not guessed at."""
    response = logged_in(dash.maria).get(f"/groups/g-research/?before={before}")
    assert response.status_code == 400


def test_an_event_appended_after_the_page_is_not_on_it(dash: Dashboard) -> None:
    """wire§4: the page is cut at the head read first, like ``GET …/events``; the overview
    subscribes after that head."""
    client = logged_in(dash.maria)
    before = client.get("/groups/g-research/")
    world = dash.world
    submit_command(
        group_id=world.group,
        document=world.w1.command(world.group, "mission.create", mission_body()),
        caller=world.w1.caller,
    )
    after = client.get("/groups/g-research/")
    assert after.context["head_sequence"] == before.context["head_sequence"] + 1
    timeline = client.get("/groups/g-research/timeline/").context["page"]
    assert timeline.head_sequence == after.context["head_sequence"]
    assert timeline.lines[0].checked.sequence == timeline.head_sequence
