"""The inbox at ``/`` through Django's test client: what waits for the signed-in person across
their groups — execution approvals they may grant, reviews they may do, missions they may
approve, blocked work in their missions — each section with its count and an empty state
that says what would appear there; and the group list, which moved to ``/groups/``.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from apps.dashboard.inbox_entries import SHOWN
from missionweave.protocol.examples import example_contract
from tests.dashboard import workflows as wf
from tests.dashboard.conftest import PASSWORD, Dashboard, People, logged_in, with_password
from tests.dashboard.html import element, text
from tests.factories import HumanPersona, grant, group, human, mission_body, now_text, unique

pytestmark = pytest.mark.django_db

SECTIONS = ("approvals", "reviews", "missions", "blocked")


@pytest.fixture
def people(people: People) -> People:
    """``conftest.people``, and olga can sign in with a password too."""
    with_password(people.world.olga)
    return people


def inbox_html(persona: HumanPersona) -> str:
    response = logged_in(persona).get("/")
    assert response.status_code == 200
    return response.content.decode()


def section(html: str, key: str) -> str:
    return element(html, "id", f"inbox-{key}")


def count(html: str, key: str) -> int:
    return int(re.search(r'data-count="(\d+)"', section(html, key)).group(1))


def entries(html: str, key: str) -> list[str]:
    """The WorkItems (or missions) listed in a section, in order."""
    found = re.findall(
        r'<li class="inbox-entry[^"]*" data-group="[^"]*" data-mission="([^"]*)"'
        r'(?: data-work-item="([^"]*)")?',
        section(html, key),
    )
    return [work_item or mission for mission, work_item in found]


def gated_item(people: People, approvals: int = 2, **contract: Any) -> tuple[str, str]:
    """A queued WorkItem, authorised by the coordinator agent, needing ``approvals``."""
    mission = wf.mission(people.world)
    item = wf.queued(people.world, mission, contract=wf.gated_contract(approvals, **contract))
    return mission, item


# --- the inbox is the home page ---------------------------------------------------------------


def test_login_leads_to_the_inbox_and_the_group_list_moved_to_groups(dash: Dashboard) -> None:
    """wire§2: a person logs in and lands on what waits for them; their groups are one
    click away at ``/groups/``."""
    client = Client()
    response = client.post("/login/", {"username": "maria", "password": PASSWORD})
    assert response.status_code == 302
    assert response["Location"] == "/"
    html = client.get("/").content.decode()
    assert "<h1>Inbox</h1>" in html
    assert 'href="/groups/"' in html
    groups = client.get("/groups/").content.decode()
    assert 'data-group="g-research"' in groups
    assert client.get("/login/").status_code == 302  # already signed in: to the inbox
    assert client.get("/login/")["Location"] == "/"


def test_the_top_navigation_names_inbox_and_groups(dash: Dashboard) -> None:
    """Every page: Inbox and Groups in the main navigation, the current one marked."""
    html = logged_in(dash.maria).get("/").content.decode()
    nav = element(html, "aria-label", "Main")
    assert '<a href="/" aria-current="page">Inbox</a>' in nav
    assert '<a href="/groups/">Groups</a>' in nav


def test_an_empty_inbox_says_what_would_appear_in_each_section(dash: Dashboard) -> None:
    """An observer has nothing to decide: every section says 0 and what would appear there."""
    html = inbox_html(dash.maria)
    for key in SECTIONS:
        assert count(html, key) == 0
        assert "Nothing waits for you here." in text(section(html, key))
    assert "appear here" in text(section(html, "approvals"))
    assert "Submitted results you may review" in text(section(html, "reviews"))
    assert "every WorkItem has finished" in text(section(html, "missions"))
    assert "refused executions" in text(section(html, "blocked"))


def test_a_person_in_no_group_is_told_so(dash: Dashboard) -> None:
    """wire§2: nina belongs to no group: the inbox says so and names the username an admin
    grants a membership to — never the ``user:`` principal (issue 34 §6)."""
    html = inbox_html(dash.nina)
    assert "not a member of any group" in html
    assert "by your username, <code>nina</code>" in html
    assert "user:nina" not in html
    assert "g-research" not in html


# --- execution approvals --------------------------------------------------------------------


def test_an_item_needing_two_approvals_waits_in_both_owners_inboxes_until_each_decided(
    people: People,
) -> None:
    """R10.2-06: a queued, gated item short of its quorum is listed for every mission owner
    whose grant the write path would take, with group, mission, risk, M of N, the start-by
    deadline and how long it has waited; once a person approved, it leaves their inbox
    (DUPLICATE_APPROVAL) and stays in the other owner's, now 1 of 2."""
    mission, item = gated_item(people)

    for owner in (people.world.olga, people.petra):
        html = inbox_html(owner)
        assert entries(html, "approvals") == [item]
        entry = text(element(section(html, "approvals"), "data-work-item", item))
        assert "risk high" in entry
        assert "0 of 2 approvals" in entry
        assert "g-research" in entry
        assert f"mission {mission}" in entry
        assert "start by" in entry
        assert "waiting since" in entry
        link = element(section(html, "approvals"), "data-work-item", item)
        assert f'href="/groups/{people.group}/work-items/{item}/approval/"' in link
        assert 'data-countdown="' in link

    wf.approve(people.world.olga, people.group, item)

    assert entries(inbox_html(people.world.olga), "approvals") == []
    html = inbox_html(people.petra)
    assert entries(html, "approvals") == [item]
    assert "1 of 2 approvals" in text(section(html, "approvals"))


def test_people_who_may_not_grant_do_not_see_the_item(people: People) -> None:
    """R10.2-06, wire§9: only a human mission_owner grants; an observer and a reviewer never
    see the item among their approvals (its approval screen says why)."""
    _mission, item = gated_item(people)
    for persona in (people.dash.maria, people.rita):
        html = inbox_html(persona)
        assert item not in entries(html, "approvals")
        assert count(html, "approvals") == 0


def test_the_person_who_authorised_an_item_is_not_asked_to_approve_it(people: People) -> None:
    """R10.2-06: a human coordinator who authorised the item would be refused SELF_APPROVAL,
    so it is not in their inbox; the other owner's it is."""
    cora = with_password(human("cora"))
    grant(people.world.alice, people.group, cora, "coordinator", "mission_owner")
    mission = wf.mission(people.world)
    item = unique("wi")
    body = {
        "work_item": item,
        "mission": mission,
        "contract": wf.gated_contract(1),
        "depends_on": [],
    }
    wf.submit(cora, people.group, "work.authorize", body)
    wf.accept(people.world, item, wf.offer(people.world, item))

    assert entries(inbox_html(cora), "approvals") == []
    assert entries(inbox_html(people.petra), "approvals") == [item]


def test_approvals_are_ordered_by_urgency_then_deadline_then_age(people: People) -> None:
    """The most urgent first, then the nearest deadline, then the one waiting longest."""
    _m, later = gated_item(people, deadline="2031-01-01T00:00:00Z")
    _m, sooner = gated_item(people, deadline="2030-01-01T00:00:00Z")
    _m, urgent = gated_item(people, urgency="critical", deadline="2032-01-01T00:00:00Z")
    _m, same_deadline_newer = gated_item(people, deadline="2030-01-01T00:00:00Z")

    html = inbox_html(people.world.olga)

    assert entries(html, "approvals") == [urgent, sooner, same_deadline_newer, later]


# --- reviews ----------------------------------------------------------------------------------


def submitted(people: People) -> tuple[str, str]:
    """An item w2 submitted; the example contract's c2 is a ``human_review`` criterion."""
    world = people.world
    mission = wf.mission(world)
    item = wf.queued(world, mission)
    lease = wf.start(world, item)
    wf.submit_result(world, item, lease)
    return mission, item


def test_submitted_results_wait_for_reviewers_with_the_criteria_a_person_must_judge(
    people: People,
) -> None:
    """R13.2-03: a submitted item is listed for reviewers, coordinators and mission owners
    (``evidence.record``), with the ``human_review`` criteria nobody has judged; an observer
    may not review and sees nothing."""
    _mission, item = submitted(people)

    for persona in (people.rita, people.world.olga):
        html = inbox_html(persona)
        assert entries(html, "reviews") == [item]
        entry = text(element(section(html, "reviews"), "data-work-item", item))
        assert "1 criterion needs a person's verdict" in entry
        assert "c2 Accurate and neutral" in entry
        # c1 is judged by its test result, not by a person (its id alone could match a
        # random WorkItem id in the entry's meta line)
        assert "Covers every report" not in entry
    assert entries(inbox_html(people.dash.maria), "reviews") == []


def test_a_criterion_judged_by_a_person_no_longer_waits(people: People) -> None:
    """R13.2-03: once a person recorded a verdict on c2, the item asks nobody for it."""
    _mission, item = submitted(people)
    wf.submit(
        people.rita,
        people.group,
        "evidence.record",
        {**wf.evidence(people.rita.principal, "c2"), "work_item": item},
    )
    entry = text(element(section(inbox_html(people.world.olga), "reviews"), "data-work-item", item))
    assert "needs a person's verdict" not in entry


def test_a_review_reserved_by_another_reviewer_says_who_and_until_when(people: People) -> None:
    """R13.2-03: the reservation shows in the others' inboxes by the holder's name and until
    when, in the viewer's local time ("Rita Quinn is reviewing, until …"), in the holder's as
    their own."""
    get_user_model().objects.filter(username="rita").update(first_name="Rita", last_name="Quinn")
    _mission, item = submitted(people)
    outcome = wf.submit(people.rita, people.group, "review.reserve", {"work_item": item})
    assert outcome.status in (200, 201)

    entry = element(section(inbox_html(people.world.olga), "reviews"), "data-work-item", item)
    assert re.search(r"Rita Quinn is reviewing, until \d{4}-\d\d-\d\d \d\d:\d\d UTC", text(entry))
    assert 'data-local-time="datetime"' in entry
    own = element(section(inbox_html(people.rita), "reviews"), "data-work-item", item)
    assert "You are reviewing it" in text(own)


# --- missions to approve ------------------------------------------------------------------


def test_an_active_mission_whose_work_has_all_finished_waits_for_final_approval(
    people: People,
) -> None:
    """R10.2-16, R10.2-22: listed for mission owners once no WorkItem is unfinished; not
    while one is; not for a reviewer, who may not approve missions."""
    world = people.world
    mission = wf.mission(world)
    first = wf.authorize(world, mission)
    second = wf.authorize(world, mission)
    wf.submit(world.w1, world.group, "work.cancel", {"work_item": first, "reason": "not needed"})
    assert mission not in entries(inbox_html(world.olga), "missions")

    wf.submit(world.w1, world.group, "work.cancel", {"work_item": second, "reason": "not needed"})

    html = inbox_html(world.olga)
    assert entries(html, "missions") == [mission]
    assert "both WorkItems finished" in text(section(html, "missions"))
    assert entries(inbox_html(people.rita), "missions") == []


# --- blocked in the person's missions --------------------------------------------------------


def test_blocked_work_and_work_waiting_on_a_failed_dependency_show_in_owners_inboxes(
    people: People,
) -> None:
    """R10.2-09, R10.4-03: a group's mission owners see its blocked WorkItems, with why, and
    those waiting on a dependency that was cancelled; a reviewer owns no mission there."""
    world = people.world
    mission = wf.mission(world)
    blocked = wf.queued(world, mission)
    lease = wf.start(world, blocked)
    wf.submit(
        world.w2,
        world.group,
        "work.block",
        {
            "work_item": blocked,
            "lease_id": lease,
            "required_resolution": "read access to the archive",
            "checkpoint": {"ref": "ckpt", "state_digest": wf.sha256_digest(b"c"), "artifacts": []},
        },
    )
    dependency = wf.authorize(world, mission)
    waiting = wf.authorize(world, mission, depends_on=(dependency,))
    wf.submit(world.w1, world.group, "work.cancel", {"work_item": dependency, "reason": "dropped"})

    html = inbox_html(world.olga)
    assert sorted(entries(html, "blocked")) == sorted([blocked, waiting])
    reason = text(element(section(html, "blocked"), "data-work-item", blocked))
    # the agent that stopped is named, and its need quoted: "its owner" read as the mission's
    assert "Stopped by w2, who needs: \u201cread access to the archive\u201d" in reason
    reason = text(element(section(html, "blocked"), "data-work-item", waiting))
    goal = example_contract()["goal"]  # the dependency, named by its goal
    assert f"Waiting on \u201c{goal}\u201d (cancelled)" in reason
    assert entries(inbox_html(people.rita), "blocked") == []


def test_a_refused_execution_shows_as_blocked_with_who_refused_and_why(people: People) -> None:
    """R10.2-06, issue 34 §4: a refused revision cannot start: its mission's owners see it as
    "needs a corrected contract", with who refused it, when and why; it is nobody's approval
    to give any more."""
    _mission, item = gated_item(people)
    wf.submit(
        people.world.olga,
        people.group,
        "approval.refuse_execution",
        {"work_item": item, "contract_revision": 1, "comment": "too broad: name the tables"},
    )

    html = inbox_html(people.petra)
    assert entries(html, "approvals") == []
    entry = text(element(section(html, "blocked"), "data-work-item", item))
    assert "needs a corrected contract" in entry
    assert re.search(r"Execution refused by olga, [-\d: ]+UTC ?: too broad: name the tables", entry)


# --- live refresh and cost ----------------------------------------------------------------------


def test_the_section_partial_is_the_inbox_alone_for_live_refreshes(people: People) -> None:
    """wire§7: ``GET /inbox/section/`` renders only the sections, with the present state;
    the page carries each group's head for its stream to start after."""
    client = logged_in(people.world.olga)
    before = client.get("/inbox/section/").content.decode().strip()
    assert element(before, "id", "inbox-sections") == before
    assert count(before, "approvals") == 0

    _mission, item = gated_item(people)

    after = client.get("/inbox/section/").content.decode()
    assert entries(after, "approvals") == [item]
    page = client.get("/").content.decode()
    data = element(page, "id", "inbox-data")
    assert f'"group": "{people.group}"' in data
    assert f'"head_sequence": {wf.head(people.group)}' in data


def test_the_inbox_reads_a_handful_of_queries_per_group_whatever_the_number_of_items(
    people: People,
) -> None:
    """Per group, never per item: twelve waiting items cost what two do."""
    world = people.world
    mission = wf.mission(world)
    for _ in range(2):
        wf.queued(world, mission, contract=wf.gated_contract(2))
    client = logged_in(world.olga)
    client.get("/")
    with CaptureQueriesContext(connection) as few:
        client.get("/inbox/section/")
    for _ in range(10):
        wf.queued(world, mission, contract=wf.gated_contract(2))
    with CaptureQueriesContext(connection) as many:
        html = client.get("/inbox/section/").content.decode()
    assert count(html, "approvals") == 12
    assert len(many) == len(few), [q["sql"][:120] for q in many.captured_queries]


def gated_in(people: People, group_id: str) -> str:
    """A queued item needing one approval in ``group_id`` (w1 coordinates, w2 works there)."""
    world = people.world
    mission = unique("m")
    wf.submit(world.w1, group_id, "mission.create", mission_body(mission))
    item = unique("wi")
    body = {"work_item": item, "mission": mission, "contract": wf.gated_contract(1)}
    wf.submit(world.w1, group_id, "work.authorize", {**body, "depends_on": []})
    offer = unique("o")
    wf.submit(
        world.w1,
        group_id,
        "work.offer",
        {
            "work_item": item,
            "offers": [{"offer": offer, "worker": world.w2.principal, "expires_at": now_text(600)}],
            "mode": "urgent",
            "selection_basis": wf.SELECTION_BASIS,
        },
    )
    wf.submit(
        world.w2,
        group_id,
        "work.accept_offer",
        {"work_item": item, "offer": offer, "contract_revision": 1},
    )
    return item


def test_every_group_of_the_person_contributes_and_other_groups_do_not(people: People) -> None:
    """wire§4: entries come from every group with an active membership, each named; a group
    the person does not belong to never shows, even with work waiting for approval."""
    world = people.world
    for group_id, member in (("g-other", True), ("g-secret", False)):
        group(group_id, world.org)
        grant(world.alice, group_id, world.w1, "coordinator")
        grant(world.alice, group_id, world.w2, "worker")
        if member:
            grant(world.alice, group_id, world.olga, "mission_owner")
    here = gated_in(people, people.group)
    there = gated_in(people, "g-other")
    secret = gated_in(people, "g-secret")

    html = inbox_html(world.olga)

    assert sorted(entries(html, "approvals")) == sorted([here, there])
    assert secret not in html
    assert "g-secret" not in html
    entry = element(section(html, "approvals"), "data-work-item", there)
    assert 'data-group="g-other"' in entry
    data = element(html, "id", "inbox-data")
    assert '"group": "g-other"' in data
    assert "g-secret" not in data


def test_inbox_entries_link_to_screens_that_exist(people: People) -> None:
    """Each approval entry links to its approval screen, which the person may open."""
    gated_item(people)
    client = logged_in(people.world.olga)
    html = client.get("/").content.decode()
    urls = re.findall(r'class="inbox-entry__title" href="([^"]+)"', html)
    assert urls
    for url in urls:
        assert client.get(url).status_code == 200, url


def test_a_long_section_shows_the_most_urgent_first_and_all_on_request(people: People) -> None:
    """Every section counts everything waiting; it lists the first ``SHOWN`` (the most
    urgent, then the oldest) and the rest on request, with a way back."""
    world = people.world
    mission = wf.mission(world)
    items = [wf.queued(world, mission, contract=wf.gated_contract(2)) for _ in range(SHOWN + 2)]
    client = logged_in(world.olga)

    html = client.get("/").content.decode()

    assert count(html, "approvals") == SHOWN + 2
    assert entries(html, "approvals") == items[:SHOWN]  # the same urgency: the oldest first
    more = text(element(section(html, "approvals"), "data-field", "more"))
    assert f"The {SHOWN} most urgent are shown. Show all {SHOWN + 2}" in more
    full = client.get("/?show=approvals").content.decode()
    assert entries(full, "approvals") == items
    assert "Show only the most urgent" in text(section(full, "approvals"))
    assert 'data-refresh-url="/inbox/section/?show=approvals"' in full
    partial = client.get("/inbox/section/?show=approvals").content.decode()
    assert entries(partial, "approvals") == items


def test_a_refused_item_without_an_approval_gate_is_blocked_too(people: People) -> None:
    """R10.2-06: a mission owner may refuse any queued WorkItem's execution; a refused
    revision cannot start whether or not its contract asked for approval."""
    world = people.world
    item = wf.queued(world, wf.mission(world))
    wf.submit(
        people.petra,
        people.group,
        "approval.refuse_execution",
        {"work_item": item, "contract_revision": 1, "comment": "wrong data set"},
    )
    entry = text(element(section(inbox_html(world.olga), "blocked"), "data-work-item", item))
    assert "needs a corrected contract" in entry
    assert "Execution refused by petra" in entry
    assert "wrong data set" in entry


def blocked_reason(persona: HumanPersona, item: str) -> str:
    return text(element(section(inbox_html(persona), "blocked"), "data-work-item", item))


def test_work_waiting_for_a_child_mission_names_the_child_by_its_goal(
    people: People, django_capture_on_commit_callbacks: Any
) -> None:
    """R10.2-15: a WorkItem blocked on its child mission is in the owners' inbox "waiting for
    the child mission “Dig through the archive”", by the goal people gave it, not its id."""
    world = people.world
    with django_capture_on_commit_callbacks(execute=True):
        item, child = wf.blocked_on_child(world, world.group, "Dig through the archive")

    reason = blocked_reason(world.olga, item)
    assert "Waiting for the child mission “Dig through the archive”" in reason
    assert child not in reason


def test_work_waiting_for_a_child_mission_whose_work_is_done_links_its_final_approval(
    people: People, django_capture_on_commit_callbacks: Any
) -> None:
    """R10.2-16, R10.2-22: once the child mission's work is all verified, the parent waits for
    a person, not for work: its entry says so and links the child's final approval, where
    approving it verifies the parent."""
    world = people.world
    with django_capture_on_commit_callbacks(execute=True):
        item, child = wf.blocked_on_child(world, world.group, "Dig through the archive")
    reason = element(section(inbox_html(world.olga), "blocked"), "data-work-item", item)
    assert "final approval" not in text(reason)
    assert 'data-field="next-step"' not in reason

    wf.verified_item(world, child)
    reason = element(section(inbox_html(world.olga), "blocked"), "data-work-item", item)
    assert (
        "Waiting for the child mission “Dig through the archive”, whose work is all done: it "
        "waits for its final approval. Open its final approval →"
    ) in text(reason)
    assert f'href="/groups/{world.group}/missions/{child}/final-approval/"' in reason


def test_a_child_mission_in_another_group_is_named_by_its_goal_only_for_its_members(
    people: People, django_capture_on_commit_callbacks: Any
) -> None:
    """R10.4-06: another group's goal is that group's to show. Olga, not a member there, reads
    the child by its id; once a member, by its goal."""
    world = people.world
    other = unique("g-lab")
    group(other, world.org)
    grant(world.alice, other, world.w1, "coordinator")
    with django_capture_on_commit_callbacks(execute=True):
        item, child = wf.blocked_on_child(world, other, "Lab work")

    assert f"Waiting for the child mission {child}" in blocked_reason(world.olga, item)
    assert "Lab work" not in blocked_reason(world.olga, item)
    grant(world.alice, other, world.olga, "observer")
    assert "Waiting for the child mission “Lab work”" in blocked_reason(world.olga, item)
