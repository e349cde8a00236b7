"""The mission and WorkItem lists (issue 13 §4, §5) through Django's test client: paged on
the server, filtered, searched, every mission reachable from the group page in a few clicks,
and the rows a live update asks for — only those."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from apps.dashboard import listings
from apps.work.models import Mission
from missionweave.protocol.examples import example_contract
from tests.dashboard import workflows as wf
from tests.dashboard.conftest import Dashboard, logged_in
from tests.dashboard.html import element, text
from tests.factories import HumanPersona, grant, human

pytestmark = pytest.mark.django_db


def page(client: Client, path: str) -> str:
    response = client.get(path)
    assert response.status_code == 200, (path, response.status_code)
    return response.content.decode()


def shown_missions(html: str) -> list[str]:
    return re.findall(r'<li class="row mission-row" id="mission-row-([^"]+)"', html)


def shown_items(html: str) -> list[str]:
    return re.findall(r'<li class="row item-row" id="item-row-([^"]+)"', html)


def links(html: str) -> list[str]:
    return [href.replace("&amp;", "&") for href in re.findall(r'href="([^"]+)"', html)]


@pytest.fixture
def owner(dash: Dashboard) -> HumanPersona:
    """petra, a mission_owner: approvals and final approvals wait on her."""
    petra = human("petra")
    grant(dash.world.alice, dash.world.group, petra, "mission_owner")
    return petra


def test_the_mission_list_pages_every_mission_newest_first(
    dash: Dashboard, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 13 §4: server-side pages of PER_PAGE rows, newest first, with first/last links,
    "page n of m" and the count of the whole group; a page number past the end shows the
    last page and one that is no number the first (never an error)."""
    monkeypatch.setattr(listings, "PER_PAGE", 3)
    world = dash.world
    made = [wf.mission(world) for _ in range(7)]
    client = logged_in(dash.maria)
    path = f"/groups/{world.group}/missions/"

    first = page(client, path)
    assert shown_missions(first) == made[::-1][:3]
    assert "Page 1 of 3" in text(first)
    assert "1–3 of 7 missions" in text(element(first, "data-field", "summary"))
    assert shown_missions(page(client, path + "?page=2")) == made[::-1][3:6]
    assert shown_missions(page(client, path + "?page=3")) == made[:1]
    assert shown_missions(page(client, path + "?page=99")) == made[:1]
    assert shown_missions(page(client, path + "?page=x")) == made[::-1][:3]
    everything = [m for n in (1, 2, 3) for m in shown_missions(page(client, f"{path}?page={n}"))]
    assert sorted(everything) == sorted(made)


def test_a_mission_row_counts_its_work_items_by_state_and_links_to_them(dash: Dashboard) -> None:
    """wire§4 missions/work-items: the row says how many WorkItems finished, counts each
    state (linking to the WorkItem list filtered to it) and links the mission's page."""
    world = dash.world
    mission = wf.mission(world)
    wf.queued(world, mission)
    wf.authorize(world, mission)
    row = element(
        page(logged_in(dash.maria), f"/groups/{world.group}/missions/"), "data-mission", mission
    )
    assert "0 of 2 WorkItems finished" in text(row)
    assert f'href="/groups/{world.group}/missions/{mission}/"' in row
    assert f"/groups/{world.group}/work-items/?mission={mission}&state=queued" in links(row)
    assert "1 open" in text(row)
    assert "1 queued" in text(row)


def test_missions_filter_by_state_owner_urgency_and_search(
    dash: Dashboard, owner: HumanPersona
) -> None:
    """Issue 13 §4: each filter narrows the list to what it names, they combine, and the
    search finds a mission by a piece of its id or of its goal, whatever its age."""
    world = dash.world
    old = wf.mission(world, goal="Audit the invoices of 2019")
    urgent = wf.mission(world)
    wf.authorize(world, urgent, contract=example_contract(urgency="critical"))
    by_owner = f"m-petra-{urgent[-6:]}"
    wf.submit(
        owner,
        world.group,
        "mission.create",
        {"mission": by_owner, "goal": "Petra's", "budgets": {}},
    )
    cancelled = wf.mission(world)
    wf.submit(owner, world.group, "mission.cancel", {"mission": cancelled, "reason": "dropped"})
    client = logged_in(dash.maria)
    base = f"/groups/{world.group}/missions/"

    assert shown_missions(page(client, base + "?state=cancelled")) == [cancelled]
    assert cancelled not in shown_missions(page(client, base + "?state=active"))
    assert shown_missions(page(client, base + f"?owner={owner.principal}")) == [by_owner]
    assert shown_missions(page(client, base + "?urgency=critical")) == [urgent]
    assert shown_missions(page(client, base + "?q=invoices+of+2019")) == [old]
    assert shown_missions(page(client, base + f"?q={old[-5:]}")) == [old]
    assert shown_missions(page(client, base + f"?q={old}&state=cancelled")) == []
    html = page(client, base + "?q=no-such-thing")
    assert "No missions match these filters." in text(html)


def test_ready_for_final_approval_and_waiting_on_me(dash: Dashboard, owner: HumanPersona) -> None:
    """R10.2-22, R10.2-06: "ready for final approval" is an active mission whose every
    WorkItem finished; "waiting on me" is what the inbox lists for the viewer — here an
    item that waits for petra's execution approval, and the ready mission she may approve."""
    world = dash.world
    ready = wf.mission(world)
    done = wf.authorize(world, ready)
    wf.submit(owner, world.group, "work.cancel", {"work_item": done, "reason": "not needed"})
    gated_mission = wf.mission(world)
    gated = wf.queued(world, gated_mission, contract=wf.gated_contract(approvals=1))
    wf.mission(world)  # active, nothing in it: not ready, nothing waits
    base = f"/groups/{world.group}/missions/"

    assert shown_missions(page(logged_in(dash.maria), base + "?ready=on")) == [ready]
    mine = shown_missions(page(logged_in(owner), base + "?waiting=on"))
    assert sorted(mine) == sorted([ready, gated_mission])
    items = page(logged_in(owner), f"/groups/{world.group}/work-items/?waiting=on")
    assert shown_items(items) == [gated]
    assert shown_missions(page(logged_in(dash.maria), base + "?waiting=on")) == []


def test_a_filter_it_cannot_read_is_said_not_ignored(dash: Dashboard) -> None:
    """A state that does not exist or an owner that is no principal: the page answers 200
    with the field's error and narrows by the filters it could read."""
    world = dash.world
    mission = wf.mission(world)
    html = page(logged_in(dash.maria), f"/groups/{world.group}/missions/?state=sideways&owner=bob")
    errors = text(element(html, "class", "filters__errors"))
    assert "state" in errors
    assert "owner" in errors
    assert shown_missions(html) == [mission]


def test_every_mission_is_reachable_from_the_group_page_in_at_most_three_clicks(
    dash: Dashboard, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 13 §4 must-hold, at a small scale (the benchmark repeats it on 20,000+
    missions): however old, a mission is found from the group page by its search (click 1:
    Search) and opened (click 2); or through "All missions" (click 1), the page that holds
    it (click 2: the pager's "Go to page") and its link (click 3)."""
    monkeypatch.setattr(listings, "PER_PAGE", 4)
    world = dash.world
    made = [wf.mission(world) for _ in range(11)]
    client = logged_in(dash.maria)
    group_page = page(client, f"/groups/{world.group}/")
    search = element(group_page, "role", "search")
    action = re.search(r'action="([^"]+)"', search).group(1)  # type: ignore[union-attr]
    all_missions = f"/groups/{world.group}/missions/"
    assert all_missions in links(group_page)
    pages = -(-len(made) // 4)
    for mission in made:
        mission_url = f"/groups/{world.group}/missions/{mission}/"
        assert mission_url in links(page(client, f"{action}?q={mission}"))
        on_some_page = [
            n
            for n in range(1, pages + 1)
            if mission_url in links(page(client, f"{all_missions}?page={n}"))
        ]
        assert len(on_some_page) == 1
    assert f'name="page" min="1" max="{pages}"' in page(client, all_missions)


def test_the_work_item_list_filters_by_state_owner_urgency_mission_and_search(
    dash: Dashboard,
) -> None:
    """Issue 13 §4: the WorkItem list, newest first, narrowed by each filter."""
    world = dash.world
    m1, m2 = wf.mission(world), wf.mission(world)
    queued = wf.queued(world, m1)
    urgent = wf.authorize(
        world, m1, contract=example_contract(urgency="high", goal="Call the bank")
    )
    other = wf.authorize(world, m2)
    client = logged_in(dash.maria)
    base = f"/groups/{world.group}/work-items/"

    assert shown_items(page(client, base)) == [other, urgent, queued]
    assert shown_items(page(client, base + "?state=queued")) == [queued]
    assert shown_items(page(client, base + f"?owner={world.w2.principal}")) == [queued]
    assert shown_items(page(client, base + "?urgency=high")) == [urgent]
    assert shown_items(page(client, base + f"?mission={m2}")) == [other]
    assert shown_items(page(client, base + "?q=call+the+BANK")) == [urgent]
    row = element(page(client, base), "data-work-item", queued)
    assert "queued" in text(row)
    assert "owner w2" in text(row)  # by name (the agent card's), never agent:w2
    assert f'href="/groups/{world.group}/missions/{m1}/"' in row


def test_a_live_update_renders_only_the_rows_its_events_touched(dash: Dashboard) -> None:
    """Issue 13 §5: the rows endpoint answers the named missions and the missions of the
    named WorkItems, nothing else; its size depends on what changed, not on how many
    missions the group holds."""
    world = dash.world
    touched = wf.mission(world)
    item = wf.authorize(world, touched)
    client = logged_in(dash.maria)
    rows_url = f"/groups/{world.group}/live/mission-rows/"

    small = page(client, f"{rows_url}?work_item={item}")
    assert shown_missions(small) == [touched]
    for _ in range(30):
        wf.mission(world)
    large = page(client, f"{rows_url}?work_item={item}")
    assert shown_missions(large) == [touched]
    assert len(large) == len(small)
    both = page(
        client,
        f"{rows_url}?work_item={item}&mission={Mission.objects.filter(group_id=world.group).order_by('-id').first().mission_id}",
    )
    assert len(shown_missions(both)) == 2
    items = page(
        client, f"/groups/{world.group}/live/work-item-rows/?work_item={item}&work_item=wi-none"
    )
    assert shown_items(items) == [item]


def test_a_non_member_gets_404_from_the_lists_and_their_rows(dash: Dashboard) -> None:
    """As on every group page: a group the person is not a member of is 404."""
    client = logged_in(dash.nina)
    for path in ("missions/", "work-items/", "live/mission-rows/", "live/work-item-rows/"):
        assert client.get(f"/groups/{dash.world.group}/{path}").status_code == 404


def test_the_timeline_jumps_to_a_sequence(dash: Dashboard) -> None:
    """Issue 13 §4: ``?at=N`` shows the page of the log that starts with event N, marked (on
    the Timeline, where the group page sends it, issue 37 §1)."""
    world = dash.world
    for _ in range(3):
        wf.mission(world)
    response = logged_in(dash.maria).get(f"/groups/{world.group}/?at=2", follow=True)
    assert response.status_code == 200
    html = response.content.decode()
    assert re.findall(r'data-sequence="(\d+)"', html)[0] == "2"
    marked = r'id="event-2"\s+data-sequence="2" data-verdict="verified" aria-current="true"'
    assert re.search(marked, html)
    assert logged_in(dash.maria).get(f"/groups/{world.group}/?at=zwei").status_code == 400
