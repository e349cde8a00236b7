"""The mission page and its final-approval screen through Django's test client (issue 12 §4).

Every scene is built with real commands through the one write path
(``tests.dashboard.workflows``) on real PostgreSQL; pages are read as a browser gets them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from apps.dashboard import mission_reviews, mission_waiting, missions
from apps.registry import services
from apps.work.models import WorkItem
from missionweave.protocol.examples import example_contract
from tests.dashboard import workflows as wf
from tests.dashboard.conftest import Dashboard, logged_in
from tests.dashboard.html import element, not_sent, text
from tests.dashboard.plain_words import visible_text
from tests.factories import HumanPersona, grant, group, human, now_text, unique

pytestmark = pytest.mark.django_db


@dataclass
class Scene:
    dash: Dashboard
    rita: HumanPersona  # a reviewer
    mission: str

    @property
    def group(self) -> str:
        return self.dash.world.group

    def url(self, suffix: str = "") -> str:
        return f"/groups/{self.group}/missions/{self.mission}/{suffix}"


@pytest.fixture
def scene(dash: Dashboard) -> Scene:
    rita = human("rita")
    grant(dash.world.alice, dash.world.group, rita, "reviewer")
    return Scene(dash, rita, wf.mission(dash.world, goal="Map the outage"))


def page(client: Client, path: str) -> str:
    response = client.get(path)
    assert response.status_code == 200, response.status_code
    return response.content.decode()


def field(html: str, name: str) -> str:
    return text(element(html, "data-field", name))


def verified(scene: Scene) -> str:
    return wf.verified_item(scene.dash.world, scene.mission)


def progress(scene: Scene, item: str, lease: str, **report: object) -> None:
    body = {
        "work_item": item,
        "lease_id": lease,
        "phase": "drafting",
        "milestones_completed": ["sources read", "outline"],
        "next_checkpoint": "first draft",
        "blockers": [],
        "estimate": {"finish_at": now_text(3600), "confidence": 0.7},
        "evidence_refs": [],
        **report,
    }
    wf.submit(scene.dash.world.w2, scene.group, "work.progress", body)


# --- the mission page ----------------------------------------------------------------------


def test_the_mission_page_shows_goal_state_creator_and_counts_per_state(scene: Scene) -> None:
    """wire§4 missions/{id}: the goal, state, who created it, a breadcrumb back to the group,
    and how many WorkItems are in each state."""
    world = scene.dash.world
    wf.authorize(world, scene.mission)
    wf.authorize(world, scene.mission)
    wf.queued(world, scene.mission)
    html = page(logged_in(scene.dash.maria), scene.url())

    assert field(html, "goal") == "Map the outage"
    assert field(html, "state") == "active"
    assert field(html, "created-by") == "w1"  # the agent card's name, never ``agent:w1``
    # the page's title is the mission's goal (issue 34 §6), its id beside it
    assert (
        text(element(html, "class", "mission-title")) == f"Map the outage mission {scene.mission}"
    )
    assert "<title>Map the outage · " in html
    crumbs = text(element(html, "class", "crumbs"))
    assert crumbs == f"Groups / {world.group} / {scene.mission}" or scene.mission in crumbs
    assert f'href="/groups/{scene.group}/"' in element(html, "class", "crumbs")
    counts = element(html, "data-field", "counts")
    assert text(element(counts, "data-state", "open")) == "open 2"
    assert text(element(counts, "data-state", "queued")) == "queued 1"


def test_the_group_page_links_each_mission_to_its_page(scene: Scene) -> None:
    html = page(logged_in(scene.dash.maria), f"/groups/{scene.group}/")
    assert f'href="/groups/{scene.group}/missions/{scene.mission}/"' in html


def test_the_dependency_graph_is_an_svg_whose_nodes_link_to_their_work_items(
    scene: Scene,
) -> None:
    """R10.4-04: an arrow from each dependency to its dependent; each node a link with its
    id, goal and state in words (colour is never the only signal), a text summary for the
    picture and the same graph as a list."""
    world = scene.dash.world
    first = wf.authorize(world, scene.mission)
    second = wf.authorize(world, scene.mission, depends_on=(first,))
    html = page(logged_in(scene.dash.maria), scene.url())

    svg = element(html, "class", "graph")
    assert 'role="img"' in svg
    label = re.search(r'aria-label="([^"]+)"', svg)
    assert label is not None
    assert "2 WorkItems in 2 columns with 1 dependency: 2 open" in label.group(1)
    links = element(html, "class", "graph-links")
    for item in (first, second):
        assert ">open</text>" in element(svg, "data-work-item", item)
        link = element(links, "data-work-item", item)
        assert f'href="/groups/{scene.group}/work-items/{item}/"' in link
        assert f"<title>{item}: Summarise the incident reports of November — open</title>" in link
    assert svg.count('marker-end="url(#graph-arrow)"') == 1
    listed = text(element(html, "class", "graph-list"))
    assert f"{second} open — Summarise the incident reports of November; waits for {first}" in (
        listed
    )


def test_a_large_mission_draws_its_graph_on_a_page_of_its_own(
    scene: Scene, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past ``INLINE_GRAPH_LIMIT`` WorkItems the mission page links the graph (which its
    script loads into the page) instead of drawing hundreds of KB inline."""
    monkeypatch.setattr(missions, "INLINE_GRAPH_LIMIT", 1)
    world = scene.dash.world
    first = wf.authorize(world, scene.mission)
    second = wf.authorize(world, scene.mission, depends_on=(first,))
    client = logged_in(scene.dash.maria)
    html = page(client, scene.url())
    deferred = element(html, "id", "graph-deferred")
    assert f'href="{scene.url("graph/")}"' in deferred
    assert 'class="graph"' not in html
    graph = page(client, scene.url("graph/"))
    for item in (first, second):
        assert f'href="/groups/{scene.group}/work-items/{item}/"' in element(
            graph, "class", "graph-links"
        )
    assert f"waits for {first}" in text(element(graph, "class", "graph-list"))


def test_the_final_approval_screen_pages_its_reviews_and_counts_them_all(
    scene: Scene, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large mission's reviews come a page at a time; the counts and the unfinished
    WorkItems that keep it from approval (R10.2-22) are the whole mission's."""
    monkeypatch.setattr(mission_reviews, "REVIEWS_PER_PAGE", 1)
    world = scene.dash.world
    first = wf.authorize(world, scene.mission)
    second = wf.authorize(world, scene.mission)
    client = logged_in(world.olga)
    one = page(client, scene.url("final-approval/"))
    two = page(client, scene.url("final-approval/") + "?page=2")
    assert "WorkItems 1–1 of 2" in one
    assert f'data-work-item="{first}"' in one
    assert f'data-work-item="{second}"' not in one
    assert f'data-work-item="{second}"' in two
    assert "2 WorkItems are not finished" in one
    beyond = page(client, scene.url("final-approval/") + "?page=99")  # the last page
    assert f'data-work-item="{second}"' in beyond


def test_a_mission_without_work_items_says_what_would_appear(scene: Scene) -> None:
    html = page(logged_in(scene.dash.maria), scene.url())
    assert "No WorkItems yet" in text(element(html, "id", "graph"))
    assert "Nothing is in progress" in text(element(html, "id", "progress"))
    assert "No child missions" in text(element(html, "id", "children"))


def test_progress_shows_the_latest_structured_report_and_never_a_percentage(
    scene: Scene,
) -> None:
    """R11.4-01..03: phase, milestones, next checkpoint, blockers and the estimate with its
    confidence, from the latest ``work.progress``; no invented percentage."""
    world = scene.dash.world
    item = wf.queued(world, scene.mission)
    lease = wf.start(world, item)
    progress(scene, item, lease, phase="reading")
    progress(scene, item, lease, blockers=["waiting for the March logs"])
    idle = wf.queued(world, scene.mission)
    html = page(logged_in(scene.dash.maria), scene.url())

    row = element(element(html, "id", "progress"), "data-work-item", item)
    assert field(row, "phase") == "drafting"
    assert field(row, "milestones") == "2: sources read, outline"
    assert field(row, "next-checkpoint") == "first draft"
    assert field(row, "blockers") == "waiting for the March logs"
    assert "the worker's confidence: 0.7" in text(element(row, "data-field", "estimate")).replace(
        "&#x27;", "'"
    )
    assert "%" not in text(element(html, "id", "progress")).replace("(R11.4-02)", "")
    silent = element(element(html, "id", "progress"), "data-work-item", idle)
    assert "No progress reported yet." in text(silent)


def test_a_done_items_last_report_shows_no_estimate_or_next_checkpoint(scene: Scene) -> None:
    """R11.4-01: once the work is submitted, its last report is history: phase and
    milestones stay, but "finish by …" and the next checkpoint no longer say anything."""
    world = scene.dash.world
    item = wf.queued(world, scene.mission)
    lease = wf.start(world, item)
    progress(scene, item, lease, phase="writing up")
    wf.submit_result(world, item, lease)
    html = page(logged_in(scene.dash.maria), scene.url())

    row = element(element(html, "id", "progress"), "data-work-item", item)
    assert "The work is done; its last report" in text(element(row, "data-field", "last-report"))
    assert field(row, "phase") == "writing up"
    assert field(row, "milestones") == "2: sources read, outline"
    assert 'data-field="estimate"' not in row
    assert 'data-field="next-checkpoint"' not in row
    assert "finish by" not in text(row)


def test_budgets_are_charted_per_dimension_with_the_limit_and_unlimited_ones_say_so(
    scene: Scene,
) -> None:
    """R11.5-12: charges to a WorkItem reach its mission; each dimension is a chart of used
    against the limit with a text equivalent; a dimension without a limit is unlimited."""
    world = scene.dash.world
    item = wf.queued(world, scene.mission)
    lease = wf.start(world, item)
    wf.use(world, item, lease, tokens=1200)
    wf.use(world, item, lease, tokens=800, money=0.5)
    html = page(logged_in(scene.dash.maria), scene.url())

    tokens = element(html, "data-dimension", "tokens")
    assert "2,000 of 200,000 used (1%)" in text(tokens)
    svg = element(tokens, "class", "chart")
    assert 'role="img"' in svg
    assert 'class="chart__limit"' in svg
    assert "limit 200,000" in svg
    table = text(element(tokens, "class", "sr-only"))
    assert "1,200" in table
    assert "2,000" in table
    compute = element(html, "data-dimension", "compute")
    assert "compute 0 s used · unlimited (no limit set)" in text(compute)
    assert "Nothing used yet." in text(compute)


def test_child_missions_are_linked_and_a_child_links_back_to_its_parent(scene: Scene) -> None:
    """R10.4-06: a child mission of this group is a link named by its goal, with its id and
    its state."""
    world = scene.dash.world
    child = wf.mission(world, parent=scene.mission, goal="Trace the DNS change")
    client = logged_in(scene.dash.maria)
    html = page(client, scene.url())
    children = element(html, "data-field", "children")
    assert f'href="/groups/{scene.group}/missions/{child}/"' in children
    assert text(children) == f"Trace the DNS change {child} active"

    child_html = page(client, f"/groups/{scene.group}/missions/{child}/")
    assert f'href="/groups/{scene.group}/missions/{scene.mission}/"' in element(
        child_html, "data-field", "parent"
    )


def test_a_child_in_another_group_is_linked_only_for_its_members_and_names_its_group(
    scene: Scene, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    """R10.4-05, R10.4-06: a child mission in another group is named with its group id, and
    linked only for a viewer who is a member there (its page belongs to that group); the
    child's page names its parent the same way and the WorkItem it unblocks."""
    world = scene.dash.world
    other = "g-child"
    group(other, world.org)
    grant(world.alice, other, world.w1, "coordinator")
    item = wf.authorize(world, scene.mission)
    child = unique("m-child")
    with django_capture_on_commit_callbacks(execute=True):  # the link's follow-up command
        wf.submit(
            world.w1,
            world.group,
            "mission.create_child",
            {
                "work_item": item,
                "child": {"mission": child, "group": other, "goal": "Dig", "budgets": {}},
                "failure_policy": "block_parent",
            },
        )
    client = logged_in(scene.dash.maria)
    children = element(page(client, scene.url()), "data-field", "children")
    assert text(children) == f"{child} in group {other}"
    assert "href" not in children  # maria may not see g-child yet

    grant(world.alice, other, scene.dash.maria, "observer")
    children = element(page(client, scene.url()), "data-field", "children")
    # a member there reads it by its goal, the id beside it
    assert text(children) == f"Dig {child} in group {other}"
    assert f'href="/groups/{other}/missions/{child}/"' in children

    child_page = page(client, f"/groups/{other}/missions/{child}/")
    parent = text(element(child_page, "data-field", "parent"))
    assert parent == f"Map the outage {scene.mission} in group {world.group}"
    # the WorkItem it unblocks, by its goal and linked: maria is a member of its group
    title = WorkItem.objects.get(group_id=world.group, work_item_id=item).title
    link = element(child_page, "data-field", "link")
    assert text(link) == f"{title} in {world.group}"
    assert f'href="/groups/{world.group}/work-items/{item}/"' in link
    # and its final approval says what approving it moves on
    final = page(client, f"/groups/{other}/missions/{child}/final-approval/")
    unblocks = element(final, "data-field", "unblocks")
    assert f"Approving it verifies the WorkItem “{title}” in {world.group}, which" in text(unblocks)
    assert f'href="/groups/{world.group}/work-items/{item}/"' in unblocks

    # lena belongs to the child's group only: the parent is named by its id and group
    lena = human("lena")
    grant(world.alice, other, lena, "observer")
    lenas = page(logged_in(lena), f"/groups/{other}/missions/{child}/")
    assert text(element(lenas, "data-field", "link")) == f"{item} in group {world.group}"
    final = page(logged_in(lena), f"/groups/{other}/missions/{child}/final-approval/")
    unblocks = element(final, "data-field", "unblocks")
    assert f"waits for it in another group ({world.group})" in text(unblocks)
    assert title not in text(unblocks)
    assert "href" not in unblocks


def test_the_timeline_slice_lists_the_newest_events_each_linked_to_the_group_timeline(
    scene: Scene,
) -> None:
    """wire§6: the mission's own events and its WorkItems' merged newest first, each linked
    to its place in the group's verified timeline."""
    world = scene.dash.world
    item = wf.queued(world, scene.mission)
    wf.submit(world.w1, scene.group, "work.message", {"work_item": item, "text": "Hello"})
    head = wf.head(scene.group)
    html = page(logged_in(scene.dash.maria), scene.url())

    timeline = element(html, "data-field", "timeline")
    sequences = [int(s) for s in re.findall(r'data-sequence="(\d+)"', timeline)]
    assert sequences == sorted(sequences, reverse=True)
    assert sequences[0] == head
    created = re.search(r"#event-(\d+)", element(html, "class", "facts facts--inline"))
    assert sequences[-1] == int(created.group(1))  # type: ignore[union-attr]
    newest = element(timeline, "data-sequence", str(head))
    # issue 37 §2: into the Timeline, filtered to the mission, the event on top
    assert (
        f'href="/groups/{scene.group}/timeline/?mission={scene.mission}&amp;before={head + 1}'
        f'#event-{head}"'
    ) in newest
    assert "wrote on “" in visible_text(newest)  # the event in words, the type on hover
    assert "work.message_posted" in newest
    assert f'href="/groups/{scene.group}/work-items/{item}/"' in newest
    assert "mission.created" in timeline


def test_an_observer_is_told_who_may_approve_and_cancel(scene: Scene) -> None:
    """R10.2-16, R10.2-18, wire§9: no form, and in words which roles may."""
    html = page(logged_in(scene.dash.maria), scene.url())
    assert field(html, "approve-note") == (
        "Only mission owners approve a mission; you are an observer."
    )
    assert field(html, "cancel-note") == (
        "Only coordinators and mission owners cancel a mission; you are an observer."
    )
    assert 'data-form-key="mission-cancel' not in html
    assert field(html, "final-approval-link") == "Read the final review"


def test_a_reviewer_is_told_only_mission_owners_approve(scene: Scene) -> None:
    html = page(logged_in(scene.rita), scene.url())
    assert field(html, "approve-note") == (
        "Only mission owners approve a mission; you are a reviewer."
    )


def test_a_mission_with_no_work_yet_does_not_put_approving_it_forward(scene: Scene) -> None:
    """R10.2-22 lets a mission with nothing unfinished be approved, and one just created has
    nothing at all: its page does not make "Review and approve" the primary step (as the inbox
    does not list it); it says there is no work done to approve."""
    html = page(logged_in(scene.dash.world.olga), scene.url())
    assert field(html, "final-approval-link") == "Read the final review"
    assert "button" not in element(html, "data-field", "final-approval-link").split(">")[0]
    assert (
        field(html, "approve-note") == "It has no WorkItems yet: there is no work done to approve."
    )


def test_a_mission_owner_is_offered_the_final_approval_and_told_what_is_unfinished(
    scene: Scene,
) -> None:
    """R10.2-22, issue 34 §7: unfinished WorkItems are named; the final review is a link to
    read, not the primary "Review and approve" of a mission that cannot be approved yet;
    cancel is offered."""
    world = scene.dash.world
    goals = ("Collect the figures", "Check the figures", "Write the report")
    for goal in goals:
        wf.authorize(world, scene.mission, contract=example_contract(goal=goal))
    html = page(logged_in(world.olga), scene.url())
    assert field(html, "final-approval-link") == "Read the final review"
    assert "button" not in element(html, "data-field", "final-approval-link").split(">")[0]
    # named by what they are, not by id (people know WorkItems by their goals)
    assert field(html, "approve-note") == (
        "3 WorkItems are not finished: \u201cCollect the figures\u201d, \u201cCheck the "
        "figures\u201d, \u201cWrite the report\u201d. The mission can be approved once "
        "every WorkItem has ended."
    )
    form = element(html, "data-form-key", f"mission-cancel:{scene.mission}")
    assert f'action="/groups/{scene.group}/missions/{scene.mission}/cancel/"' in form
    assert f'name="next" value="/groups/{scene.group}/missions/{scene.mission}/"' in form


def test_cancelling_from_the_mission_page_returns_to_it_showing_who_and_why(
    scene: Scene,
) -> None:
    """R10.2-18: the reason travels with ``mission.cancel``; the page then shows the end."""
    world = scene.dash.world
    wf.authorize(world, scene.mission)
    client = logged_in(world.olga)
    html = page(client, scene.url())
    form = element(html, "data-form-key", f"mission-cancel:{scene.mission}")
    fields = dict(re.findall(r'<input type="hidden" name="([a-z_]+)" value="([^"]*)"', form))
    response = client.post(scene.url("cancel/"), {**fields, "reason": "Out of scope"}, follow=True)
    assert response.redirect_chain[-1][0] == scene.url()
    html = response.content.decode()
    assert field(html, "state") == "cancelled"
    ending = field(html, "ending")
    assert ending.startswith("Cancelled by olga")
    assert "Out of scope" in ending
    assert "nothing left to approve or cancel" in field(html, "approve-note")


def test_the_live_section_is_the_body_alone(scene: Scene) -> None:
    """R16-09: the page's script swaps this in when an event about the mission arrives."""
    response = logged_in(scene.dash.maria).get(scene.url("section/"))
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith("{#") is False
    assert 'id="mission-body"' in html
    assert "<html" not in html
    assert f'data-refresh-url="/groups/{scene.group}/missions/{scene.mission}/section/"' in html


def test_the_page_subscribes_after_the_head_and_follows_the_missions_work_items(
    scene: Scene,
) -> None:
    world = scene.dash.world
    item = wf.authorize(world, scene.mission)
    head = wf.head(scene.group)
    html = page(logged_in(scene.dash.maria), scene.url())
    data = re.search(r'<script id="mission-data" type="application/json">(.*?)</script>', html)
    assert data is not None
    stream = __import__("json").loads(data.group(1))
    assert stream["head_sequence"] == head
    assert stream["mission"] == scene.mission
    assert stream["work_items"] == [item]


def _progress_rows(html: str) -> list[str]:
    return re.findall(r'<li class="progress-item" data-work-item="([^"]+)"', html)


def test_a_large_mission_keeps_its_queries_and_pages_its_progress_rows(
    scene: Scene, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 37: the page makes as many queries with five WorkItems as with one (one read
    of the mission's rows, whatever their number) and renders ``PROGRESS_SHOWN`` progress
    rows at a time, paged: every row is on exactly one page, and a refresh keeps the page."""
    monkeypatch.setattr(missions, "PROGRESS_SHOWN", 2)
    world = scene.dash.world
    client = logged_in(scene.dash.maria)
    wf.authorize(world, scene.mission)
    page(client, scene.url())  # the first request of a session does a little more once

    def queries() -> int:
        with CaptureQueriesContext(connection) as context:
            page(client, scene.url())
        return len(context.captured_queries)

    one = queries()
    for _ in range(4):
        wf.authorize(world, scene.mission)
    assert queries() == one

    first = page(client, scene.url())
    assert len(_progress_rows(first)) == 2
    pager = text(element(first, "data-field", "progress-pager"))
    assert pager.startswith("WorkItems 1–2 of 5, newest report first.")
    assert "(page 1 of 3)" in pager
    assert 'href="?progress=2#progress-heading"' in first
    seen = [
        row for n in (1, 2, 3) for row in _progress_rows(page(client, scene.url(f"?progress={n}")))
    ]
    assert len(seen) == len(set(seen)) == 5
    last = page(client, scene.url("?progress=3"))
    assert "Newer</a>" in last
    assert "Older</a>" not in last
    refresh = f"/groups/{scene.group}/missions/{scene.mission}/section/?progress=3"
    assert f'data-refresh-url="{refresh}"' in last
    assert _progress_rows(page(client, refresh)) == _progress_rows(last)
    assert _progress_rows(page(client, scene.url("?progress=99"))) == _progress_rows(last)


def test_the_state_counts_open_the_work_item_list_of_the_mission(scene: Scene) -> None:
    """Issue 37: the page counts WorkItems per state; the list pages and filters them."""
    wf.authorize(scene.dash.world, scene.mission)
    html = page(logged_in(scene.dash.maria), scene.url())
    counts = element(html, "data-field", "counts")
    state = re.search(r'<li data-state="([a-z_]+)">', counts)
    assert state is not None
    listed = f"/groups/{scene.group}/work-items/?mission={scene.mission}"
    assert f'href="{listed}&amp;state={state.group(1)}"' in counts
    assert f'href="{listed}"' in element(html, "data-field", "work-item-list-link")


def test_the_waiting_card_names_a_bounded_number_and_counts_the_rest(
    scene: Scene, monkeypatch: pytest.MonkeyPatch
) -> None:
    """R10.2-20, issue 37: a cancelled dependency of many WorkItems lists ``SHOWN`` of them
    and says how many more wait; the count is of them all."""
    monkeypatch.setattr(mission_waiting, "SHOWN", 1)
    world = scene.dash.world
    first = wf.authorize(world, scene.mission)
    for _ in range(3):
        wf.authorize(world, scene.mission, depends_on=(first,))
    wf.submit(world.w1, world.group, "work.cancel", {"work_item": first, "reason": "moved"})
    html = page(logged_in(scene.dash.maria), scene.url())
    card = element(html, "id", "waiting-on-ended")
    assert text(element(card, "class", "count")) == "3"
    assert len(re.findall(r"<li data-work-item=", card)) == 1
    assert field(html, "waiting-more").startswith("and 2 more")


def test_an_ended_missions_final_approval_names_its_ending(scene: Scene) -> None:
    """R10.2-18: the screen finds the ending near its WorkItems' newest event, read as one
    aggregate (``missions.latest_sequence``)."""
    world = scene.dash.world
    item = wf.authorize(world, scene.mission)
    wf.submit(world.w1, world.group, "work.cancel", {"work_item": item, "reason": "moved"})
    wf.submit(
        world.olga, world.group, "mission.cancel", {"mission": scene.mission, "reason": "Done"}
    )
    html = page(logged_in(scene.dash.maria), scene.url("final-approval/"))
    ending = field(html, "ending")
    assert ending.startswith("Cancelled by olga")
    assert "Done" in ending


# --- the final-approval screen ---------------------------------------------------------------


def test_final_approval_lists_each_work_item_with_its_retained_review(scene: Scene) -> None:
    """R13.2-03 step 5: the accepted review (who, when, verdicts with their notes, summary),
    the review's status per criterion, and the evidence with its producer, method, result
    and artifacts linked to their pages."""
    item = verified(scene)
    html = page(logged_in(scene.dash.world.olga), scene.url("final-approval/"))

    block = element(html, "data-work-item", item)
    accepted = text(element(block, "data-field", "accepted-review"))
    assert accepted.startswith("Accepted by olga ")
    assert "Good to go." in accepted
    assert "c1 pass — checks pass" in accepted
    assert "c2 pass — reads neutral to me" in accepted
    c1 = element(block, "data-criterion", "c1")
    # the verdict of the accepted review, not the evidence summary's stale "claimed"
    assert text(element(c1, "data-field", "status")) == "pass in the accepted review"
    assert "w2: pass" in text(c1)
    integrity = element(block, "data-criterion", "authority:integrity")
    assert text(element(integrity, "data-field", "status")) == "pass"
    assert f'href="/groups/{scene.group}/artifacts/sha256:' in block
    evidence = element(block, "class", "evidence-list")
    assert "by w2" in text(evidence)
    assert "deterministic, with the submission" in text(evidence)


def test_final_approval_shows_execution_approvals_with_their_comments(scene: Scene) -> None:
    """R10.2-06: an approval's comment is shown wherever the decision is."""
    world = scene.dash.world
    item = wf.queued(world, scene.mission, contract=wf.gated_contract(1))
    wf.approve(world.olga, scene.group, item)
    html = page(logged_in(scene.dash.maria), scene.url("final-approval/"))
    block = element(html, "data-work-item", item)
    assert "Execution approvals: olga granted revision 1 ( fine by me )" in text(block)
    assert "<q>fine by me</q>" in block


def test_final_approval_offers_the_form_once_nothing_is_unfinished(scene: Scene) -> None:
    """R10.2-16: the form posts ``mission.approve`` and returns here; afterwards the screen
    shows who approved, when, and the comment, and no form."""
    verified(scene)
    client = logged_in(scene.dash.world.olga)
    html = page(client, scene.url("final-approval/"))
    form = element(html, "data-form-key", f"mission-approve:{scene.mission}")
    assert f'action="/groups/{scene.group}/missions/{scene.mission}/approve/"' in form
    assert '<label for="approve-comment">' in form
    fields = dict(re.findall(r'<input type="hidden" name="([a-z_]+)" value="([^"]*)"', form))

    response = client.post(scene.url("approve/"), {**fields, "comment": "Ship it"}, follow=True)

    assert response.redirect_chain[-1][0] == scene.url("final-approval/")
    html = response.content.decode()
    assert field(html, "state") == "approved"
    ending = field(html, "ending")
    assert ending.startswith("Approved by olga ")
    assert ending.endswith("“Ship it”") or "Ship it" in ending
    assert 'data-form-key="mission-approve' not in html
    mission_page = page(client, scene.url())
    assert "Ship it" in field(mission_page, "ending")


def test_final_approval_says_which_work_items_are_unfinished(scene: Scene) -> None:
    """R10.2-22: the write path's own refusal, previewed, names the unfinished items."""
    world = scene.dash.world
    verified(scene)
    waiting = wf.queued(world, scene.mission)
    html = page(logged_in(world.olga), scene.url("final-approval/"))
    assert 'data-form-key="mission-approve' not in html
    goal = example_contract()["goal"]
    assert field(html, "refusal") == (
        f"1 WorkItem is not finished: \u201c{goal}\u201d. The mission can be approved once "
        "every WorkItem has ended."
    )
    block = element(html, "data-work-item", waiting)
    assert "not finished" in text(block)
    assert field(block, "not-reviewed") == "Nothing submitted yet: no review to read."


def test_final_approval_tells_a_reviewer_that_only_mission_owners_approve(scene: Scene) -> None:
    verified(scene)
    html = page(logged_in(scene.rita), scene.url("final-approval/"))
    assert 'data-form-key="mission-approve' not in html
    assert field(html, "refusal") == "Only mission owners approve a mission; you are a reviewer."


# --- access -----------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", ["", "section/", "final-approval/", "graph/"])
def test_every_mission_route_is_404_for_a_non_member(scene: Scene, suffix: str) -> None:
    """wire§4: a group's pages never tell a non-member what it holds."""
    response = logged_in(scene.dash.nina).get(scene.url(suffix))
    assert response.status_code == 404


@pytest.mark.parametrize("suffix", ["", "section/", "final-approval/", "graph/"])
def test_every_mission_route_is_404_for_a_mission_the_group_does_not_have(
    scene: Scene, suffix: str
) -> None:
    missing = unique("m-missing")
    response = logged_in(scene.dash.maria).get(f"/groups/{scene.group}/missions/{missing}/{suffix}")
    assert response.status_code == 404


def test_the_mission_page_needs_a_sign_in(scene: Scene) -> None:
    response = Client().get(scene.url())
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


# --- live, stale forms and plain words (issue 34 §3–§7) ------------------------------------------

#: what a person never reads outside technical details (issue 34 §6)
JARGON = re.compile(r"\bR\d+\.\d+-\d+\b|wire§|\b[A-Z]{2,}(?:_[A-Z]+)+\b|\b(?:user|agent):[a-z]")


def outside_details(html: str) -> str:
    html = re.sub(r'<details class="technical-details">.*?</details>', " ", html, flags=re.S)
    return text(re.sub(r"<script\b.*?</script>", " ", html, flags=re.S))


def test_review_and_approve_is_the_primary_action_once_every_work_item_has_ended(
    scene: Scene,
) -> None:
    """Issue 34 §7, R10.2-22: the primary button appears when the approval can be given."""
    verified(scene)
    html = page(logged_in(scene.dash.world.olga), scene.url())
    link = element(html, "data-field", "final-approval-link")
    assert text(link) == "Review and approve the mission"
    assert 'class="button' in link


def test_a_refused_execution_shows_once_on_the_mission_page_by_whom_why_and_when(
    scene: Scene,
) -> None:
    """Issue 34 §4, R10.2-06: the refused item's row says "Execution refused", by whom (a
    name), why and when, and that it waits for a corrected contract — never a code."""
    world = scene.dash.world
    item = wf.queued(world, scene.mission, contract=wf.gated_contract(1))
    wf.submit(
        world.olga,
        scene.group,
        "approval.refuse_execution",
        {"work_item": item, "contract_revision": 1, "comment": "Name the tables first."},
    )
    html = page(logged_in(scene.dash.maria), scene.url())
    row = element(element(html, "id", "progress"), "data-work-item", item)
    refused = text(element(row, "data-field", "execution-refused"))
    assert refused.startswith("Execution refused by olga ")
    assert "Name the tables first." in refused
    assert "waits for a corrected contract or a cancel" in refused
    assert '<time datetime="' in element(row, "data-field", "execution-refused")
    assert html.count("Name the tables first.") == 1
    assert not JARGON.search(outside_details(html))


def test_the_final_approval_follows_the_log_through_its_own_section(scene: Scene) -> None:
    """Issue 34 §5: the screen's body has a section of its own that the page re-fetches when
    an event about the mission or its WorkItems arrives; the page subscribes after the head
    and names the WorkItems it follows."""
    item = verified(scene)
    client = logged_in(scene.dash.world.olga)
    html = page(client, scene.url("final-approval/"))
    body = element(html, "id", "final-approval")
    section_url = f"/groups/{scene.group}/missions/{scene.mission}/final-approval/section/"
    assert f'data-refresh-url="{section_url}"' in body
    data = re.search(
        r'<script id="final-approval-data" type="application/json">(.*?)</script>', html
    )
    assert data is not None
    stream = json.loads(data.group(1))
    assert stream["mission"] == scene.mission
    assert stream["work_items"] == [item]
    assert stream["head_sequence"] == wf.head(scene.group)
    assert "membership" in stream["families"]
    section = page(client, section_url).strip()
    assert element(section, "id", "final-approval") == section
    assert 'data-form-key="mission-approve:' in section


def test_a_stale_final_approval_answers_with_the_page_the_reason_and_the_comment(
    scene: Scene,
) -> None:
    """Issue 34 §3: petra's page was drawn before olga approved; her click answers 409 with
    the screen (who approved), the reason in words and her comment kept to copy."""
    verified(scene)
    petra = human("petra")
    grant(scene.dash.world.alice, scene.group, petra, "mission_owner")
    stale = page(logged_in(petra), scene.url("final-approval/"))
    fields = dict(
        re.findall(
            r'<input type="hidden" name="([a-z_]+)" value="([^"]*)"',
            element(stale, "data-form-key", f"mission-approve:{scene.mission}"),
        )
    )
    wf.submit(
        scene.dash.world.olga,
        scene.group,
        "mission.approve",
        {"mission": scene.mission, "comment": ""},
    )
    response = logged_in(petra).post(
        scene.url("approve/"), {**fields, "comment": "Read every review: yes."}
    )
    assert response.status_code == 409
    html = response.content.decode()
    assert not_sent(html).startswith(
        "Nothing was recorded. This mission has ended: there is nothing left to approve."
    )
    assert "Read every review: yes.</textarea>" in element(html, "id", "not-sent")
    assert field(html, "ending").startswith("Approved by olga")
    assert 'data-form-key="mission-approve' not in html


def test_a_former_members_final_approval_is_a_page_with_the_comment_not_a_bare_404(
    scene: Scene,
) -> None:
    """Issue 34 §3, wire.md §4: after a revocation the click is 404 — the group is not hers
    to see — answered with a page that gives her comment back and names nothing of it."""
    verified(scene)
    petra = human("petra")
    grant(scene.dash.world.alice, scene.group, petra, "mission_owner")
    services.membership_revoke(
        group_id=scene.group, admin=scene.dash.world.alice.caller, principal=petra.principal
    )
    response = logged_in(petra).post(scene.url("approve/"), {"comment": "All verified."})
    assert response.status_code == 404
    html = response.content.decode()
    assert "Nothing was recorded" in html
    assert "You are not a member of this group" in not_sent(html)
    assert "All verified.</textarea>" in html
    assert scene.mission not in outside_details(html)


def test_a_comment_over_its_limit_is_stated_as_a_limit_on_the_final_approval(
    scene: Scene,
) -> None:
    """Issue 34 §6: "22,000 characters; at most 10,000", the comment kept in its form."""
    verified(scene)
    comment = "z" * 22_000
    response = logged_in(scene.dash.world.olga).post(scene.url("approve/"), {"comment": comment})
    assert response.status_code == 400
    html = response.content.decode()
    assert "22,000 characters; at most 10,000." in not_sent(html)
    form = element(html, "data-form-key", f"mission-approve:{scene.mission}")
    assert f">{comment}</textarea>" in form


def test_the_mission_and_final_approval_pages_have_no_protocol_words_outside_details(
    scene: Scene,
) -> None:
    """Issue 34 §6: names, local times, no R-ID, wire§ or error code in what people read."""
    verified(scene)
    wf.queued(scene.dash.world, scene.mission)
    for persona in (scene.dash.world.olga, scene.rita, scene.dash.maria):
        client = logged_in(persona)
        for path in (scene.url(), scene.url("final-approval/")):
            found = JARGON.findall(outside_details(page(client, path)))
            assert not found, (persona.username, path, found)


def test_unfinished_work_items_are_named_by_goal_and_by_id_when_none_is_known() -> None:
    """R10.2-22 in words: the first five unfinished WorkItems are named, each by its goal (cut
    to a title) or, with no goal known, by its id; the rest are counted."""
    ids = [f"wi-{n}" for n in range(7)]
    titles = {"wi-0": "Collect the figures", "wi-1": "x" * 80, "wi-2": ""}
    sentence = missions.unfinished_sentence(ids, titles)
    cut = "x" * 59 + "\u2026"  # 60 characters with the ellipsis
    assert sentence == (
        f"7 WorkItems are not finished: \u201cCollect the figures\u201d, \u201c{cut}\u201d, "
        "wi-2, wi-3, wi-4 and 2 more."
    )
    assert missions.unfinished_sentence(["wi-9"]) == "1 WorkItem is not finished: wi-9."


def test_latest_events_saying_the_same_in_a_row_are_one_line_counted() -> None:
    """The authority's two checks of a submission ("recorded evidence for “…”: pass") are one
    line, "2 times in a row"; the same words about another WorkItem, or with another event
    between, stay lines of their own."""
    entry = missions.TimelineEntry
    said = "The authority recorded evidence for “Write it up”: pass"
    lines = missions.run_together(
        [
            entry(9, "evidence.recorded", "authority", "wi-1", words=said),
            entry(8, "evidence.recorded", "authority", "wi-1", words=said),
            entry(7, "evidence.recorded", "authority", "wi-2", words=said),
            entry(6, "work.submitted", "agent:w2", "wi-1", words="w2 submitted “Write it up”"),
            entry(5, "evidence.recorded", "authority", "wi-1", words=said),
            entry(4, "mission.created", "agent:w1", None, words=""),
            entry(3, "mission.created", "agent:w1", None, words=""),
        ]
    )
    assert [(line.sequence, line.repeats, line.since) for line in lines] == [
        (9, 2, 8),
        (7, 1, None),
        (6, 1, None),
        (5, 1, None),
        (4, 1, None),  # no words: never merged
        (3, 1, None),
    ]
