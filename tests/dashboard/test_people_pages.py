"""The People screens (issue 37 §3): a card per person of the group — roles in words, what
waits on them now (execution approvals, R10.2-06; reviews, R13.2-03; final approvals,
R10.2-16; asks by name, issue 36 §4) and their last decision — and a person's page with what
waits on them and what they decided, searched through the log in bounded pages; members
only, and a bounded number of queries however many people, WorkItems and events."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from apps.dashboard import people as people_reads
from apps.dashboard import timeline_reads
from tests.dashboard import workflows as wf
from tests.dashboard.conftest import Dashboard, People, logged_in
from tests.dashboard.html import element, text
from tests.factories import grant, human, unique

pytestmark = pytest.mark.django_db


def card_of(html: str, principal: str) -> str:
    return element(html, "data-person", principal)


def gated_item(world: object) -> str:
    """A queued WorkItem whose execution waits for two mission owners (R10.2-06)."""
    return wf.queued(world, wf.mission(world), contract=wf.gated_contract(approvals=2))


def test_the_people_pages_are_for_members_only(people: People) -> None:
    """wire§4: a group the person is not a member of is 404, and so is a person who is not a
    member of this group, an agent (its page is the Agents screen) or a malformed name."""
    group = people.group
    human("outsider")
    nina = logged_in(people.dash.nina)
    assert nina.get(f"/groups/{group}/people/").status_code == 404
    assert nina.get(f"/groups/{group}/people/petra/").status_code == 404
    assert nina.get(f"/groups/{group}/live/people/").status_code == 404
    maria = logged_in(people.dash.maria)
    assert maria.get(f"/groups/{group}/people/").status_code == 200
    assert maria.get(f"/groups/{group}/people/petra/").status_code == 200
    assert maria.get(f"/groups/{group}/live/people/petra/").status_code == 200
    assert maria.get(f"/groups/{group}/people/outsider/").status_code == 404
    assert maria.get(f"/groups/{group}/people/nina/").status_code == 404
    assert maria.get(f"/groups/{group}/people/w2/").status_code == 404  # an agent
    assert maria.get(f"/groups/{group}/people/a%20b/").status_code == 404
    assert maria.get("/groups/elsewhere/people/").status_code == 404


def test_a_card_says_roles_and_what_waits_on_each_person(people: People) -> None:
    """R10.2-06, R13.2-03: a gated item waits on the mission owners who may grant it, not on
    the observer or the reviewer; names and roles in words, principals only in the details."""
    world = people.world
    gated_item(world)
    html = logged_in(people.dash.maria).get(f"/groups/{people.group}/people/").content.decode()
    petra = card_of(html, "user:petra")
    assert "A mission owner" in text(element(petra, "data-field", "roles"))
    waiting = text(element(petra, "data-field", "waiting"))
    assert "1 decision" in waiting
    assert "1 execution approval" in waiting
    assert "1 execution approval" in text(
        element(card_of(html, "user:olga"), "data-field", "waiting")
    )
    assert "nothing" in text(element(card_of(html, "user:rita"), "data-field", "waiting"))
    assert "nothing" in text(element(card_of(html, "user:maria"), "data-field", "waiting"))
    assert "A reviewer" in text(element(card_of(html, "user:rita"), "data-field", "roles"))
    assert 'data-person="agent:' not in html  # agents have their own page
    assert "user:petra" not in text(petra).split("Technical details")[0]
    assert f'href="/groups/{people.group}/people/petra/"' in petra


def test_a_persons_page_lists_what_waits_with_links_and_who_asked(people: People) -> None:
    """Issue 36 §4: an ask by name says who asked and their note; each wait links to the
    screen where the person decides."""
    world = people.world
    item = gated_item(world)
    wf.submit(
        people.dash.world.olga,
        people.group,
        "work.ask",
        {"work_item": item, "for": "execution_approval", "asked": ["user:petra"], "note": "soon"},
    )
    html = (
        logged_in(people.dash.maria).get(f"/groups/{people.group}/people/petra/").content.decode()
    )
    waiting = element(html, "data-field", "waiting")
    assert f'href="{reverse("dashboard:approval", args=[people.group, item])}"' in waiting
    assert "Approve or refuse the execution of" in text(waiting)
    assert "Asked by olga: soon" in text(waiting)


def test_a_persons_page_shows_what_they_decided_and_the_range_searched(people: People) -> None:
    """After petra grants an execution, her card's last decision and her page say so, with the
    events the page searched; the item no longer waits on her."""
    world = people.world
    item = gated_item(world)
    wf.approve(people.petra, people.group, item)
    client = logged_in(people.dash.maria)
    html = client.get(f"/groups/{people.group}/people/").content.decode()
    last = text(element(card_of(html, "user:petra"), "data-field", "last"))
    assert "petra approved the execution of" in last
    page = client.get(f"/groups/{people.group}/people/petra/").content.decode()
    decided = element(page, "id", "person-decided")
    assert "Approved an execution" in text(decided)
    assert f'href="/groups/{people.group}/work-items/{item}/"' in decided
    head = wf.head(people.group)
    assert f"This page searched events #1 to #{head}" in text(page)
    assert "Nothing: no execution approval" in text(element(page, "data-field", "waiting"))
    # olga still may grant the second approval
    olga = client.get(f"/groups/{people.group}/people/olga/").content.decode()
    assert item in element(olga, "data-field", "waiting")


def test_a_persons_decisions_page_back_through_the_log_a_bounded_scan_at_a_time(
    people: People, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Timeline's "who" search examines at most ``SCAN_LIMIT`` events a page and says
    which; "Older" searches further back and finds the older decision."""
    world = people.world
    item = gated_item(world)
    wf.approve(people.petra, people.group, item)
    decided_at = wf.head(people.group)
    for _ in range(3):
        wf.mission(world)
    monkeypatch.setattr(timeline_reads, "SCAN_LIMIT", 3)
    client = logged_in(people.dash.maria)
    page = client.get(f"/groups/{people.group}/people/petra/").content.decode()
    head = wf.head(people.group)
    assert f"searched events #{head - 2} to #{head}" in text(page)
    assert "No decision between" in text(page)
    older = element(page, "class", "pager__older")
    assert f"before={head - 2}" in older
    back = client.get(f"/groups/{people.group}/people/petra/?before={head - 2}").content.decode()
    assert f'data-sequence="{decided_at}"' in back
    assert "before=abc" not in back
    bad = client.get(f"/groups/{people.group}/people/petra/?before=abc")
    assert "not a number of an event" in text(bad.content.decode())


def test_links_lead_to_the_people_pages(people: People) -> None:
    """From the members page's rows and header, and from the agents page's header."""
    client = logged_in(people.dash.maria)
    members = client.get(f"/groups/{people.group}/members/").content.decode()
    assert f'href="/groups/{people.group}/people/petra/"' in element(
        members, "data-principal", "user:petra"
    )
    assert f'href="/groups/{people.group}/people/"' in members
    agents_page = client.get(f"/groups/{people.group}/agents/").content.decode()
    assert f'href="/groups/{people.group}/people/"' in agents_page


def test_the_people_pages_cost_the_same_queries_however_many_people_items_and_events(
    dash: Dashboard, people: People, django_assert_max_num_queries: object
) -> None:
    """The cards and a person's page are a fixed number of indexed reads: more people,
    waiting WorkItems and decisions cost no more queries."""
    world = people.world
    wf.approve(people.petra, people.group, gated_item(world))
    gated_item(world)
    client = logged_in(dash.maria)
    client.get(f"/groups/{people.group}/people/")
    with CaptureQueriesContext(connection) as few:
        client.get(f"/groups/{people.group}/people/")
    with CaptureQueriesContext(connection) as few_person:
        client.get(f"/groups/{people.group}/people/petra/")
    for _ in range(3):
        item = gated_item(world)
        wf.approve(people.petra, people.group, item)
        wf.approve(people.world.olga, people.group, item)
        extra = human(unique("p"))
        grant(world.alice, people.group, extra, "mission_owner")
    with CaptureQueriesContext(connection) as many:
        html = client.get(f"/groups/{people.group}/people/").content.decode()
    assert html.count('class="card person-card"') == 7  # olga, maria, petra, rita and three more
    assert len(many) == len(few), [q["sql"][:120] for q in many.captured_queries]
    with django_assert_max_num_queries(len(few_person)):  # type: ignore[operator]
        client.get(f"/groups/{people.group}/people/petra/")


def test_more_waiting_items_than_read_say_the_count_is_a_lower_bound(
    people: People, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the oldest ``WAITING_READ`` waiting WorkItems of a kind are read: the card says
    "+" rather than a count it did not make."""
    monkeypatch.setattr(people_reads, "WAITING_READ", 1)
    gated_item(people.world)
    gated_item(people.world)
    html = logged_in(people.dash.maria).get(f"/groups/{people.group}/people/").content.decode()
    assert "1+ decision" in text(element(card_of(html, "user:petra"), "data-field", "waiting"))


def test_reviews_and_final_approvals_wait_on_those_who_may_give_them(people: People) -> None:
    """R13.2-03: a submitted result waits on the reviewer and the mission owners (never on its
    owner); R10.2-16, R10.2-22: a mission whose every WorkItem is verified waits on its
    owners' final approval. Olga's acceptance is her last decision."""
    world = people.world
    done = wf.mission(world)
    wf.verified_item(world, done)
    item = wf.queued(world, wf.mission(world))
    wf.submit_result(world, item, wf.start(world, item))
    client = logged_in(people.dash.maria)
    html = client.get(f"/groups/{people.group}/people/").content.decode()
    rita = text(element(card_of(html, "user:rita"), "data-field", "waiting"))
    assert "1 review" in rita
    assert "final approval" not in rita
    olga = card_of(html, "user:olga")
    assert "1 review" in text(element(olga, "data-field", "waiting"))
    assert "1 final approval" in text(element(olga, "data-field", "waiting"))
    assert "olga accepted the result of" in text(element(olga, "data-field", "last"))
    page = client.get(f"/groups/{people.group}/people/rita/").content.decode()
    waiting = element(page, "data-field", "waiting")
    assert f'href="{reverse("dashboard:review", args=[people.group, item])}"' in waiting
    olga_page = client.get(f"/groups/{people.group}/people/olga/").content.decode()
    assert "Give final approval to the mission" in text(olga_page)
    assert "Accepted a result" in text(element(olga_page, "id", "person-decided"))
