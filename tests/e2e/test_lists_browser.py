"""The group's lists in Chromium (issue 13 §4–§6): a mission found by search from the group
page, rows re-rendered one by one as events arrive (the rest of the page untouched, the
bytes of one row), new missions on top of a page that keeps its size, the log's newest page
keeping fifty events while its counter follows the head, and each screen at 390 px."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from playwright.sync_api import Page, Response, expect

from apps.dashboard import listings
from tests.dashboard import workflows as wf
from tests.e2e.screens import check_screen, snap
from tests.e2e.test_dashboard_browser import log_in, with_password
from tests.factories import World, build_world
from tests.live_server import LiveServer, in_plain_thread

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

LIVE_TIMEOUT_MS = 5_000


@dataclass
class Lists:
    world: World
    missions: list[str]  # oldest first
    item: str  # a WorkItem of missions[-2]


@pytest.fixture
def lists(transactional_db: None) -> Lists:
    """More missions than a page holds, committed before the browser starts."""
    world = build_world()
    with_password(world.olga)
    missions = [
        wf.mission(world, goal=f"Reconcile the ledger of week {week}")
        for week in range(listings.PER_PAGE + 2)
    ]
    item = wf.authorize(world, missions[-2])
    return Lists(world, missions, item)


def mission_ids(page: Page) -> list[str]:
    return page.locator("#missions-rows > li").evaluate_all(
        "(rows) => rows.map((row) => row.dataset.mission)"
    )


def test_an_old_mission_is_found_from_the_group_page_and_the_lists_fit_a_phone(
    lists: Lists, live_asgi_server: LiveServer, page: Page
) -> None:
    """Issue 13 §4 and §6: the oldest mission, long off the group page, is two clicks away —
    search, open; the mission list pages and filters; both lists pass axe-core and fit 390 px."""
    server, world = live_asgi_server, lists.world
    log_in(page, server, "olga")
    page.goto(f"{server.url}/groups/{world.group}/")
    oldest = lists.missions[0]
    expect(page.locator(f'#missions-rows li[data-mission="{oldest}"]')).to_have_count(0)
    check_screen(page, "lists-group-page")

    page.get_by_role("searchbox", name="Search missions").fill("week 0")
    page.get_by_role("button", name="Search").click()  # click 1
    expect(page).to_have_url(re.compile(r"/missions/\?q=week\+0"))
    page.get_by_role("link", name="Reconcile the ledger of week 0", exact=True).click()  # click 2
    expect(page).to_have_url(f"{server.url}/groups/{world.group}/missions/{oldest}/")
    expect(page.get_by_role("navigation", name="Breadcrumb")).to_contain_text("Missions")

    page.goto(f"{server.url}/groups/{world.group}/missions/")
    expect(page.locator("#missions-rows > li")).to_have_count(listings.PER_PAGE)
    expect(page.get_by_role("navigation", name="Missions pages")).to_contain_text("Page 1 of 2")
    check_screen(page, "lists-missions")
    page.get_by_role("link", name="Older ›").click()
    assert mission_ids(page) == lists.missions[:2][::-1]

    page.goto(f"{server.url}/groups/{world.group}/work-items/?state=open")
    expect(page.locator("#work-items-rows > li[data-work-item]")).to_have_count(1)
    check_screen(page, "lists-work-items")


def test_rows_follow_their_events_one_by_one_and_the_page_keeps_its_size(
    lists: Lists, live_asgi_server: LiveServer, page: Page
) -> None:
    """Issue 13 §5: an event re-renders only its mission's row (the other rows are the same
    DOM nodes), fetched alone; a new mission goes on top and the oldest row falls off, so
    the list keeps its size; the group page's counter follows the head."""
    server, world = live_asgi_server, lists.world
    log_in(page, server, "olga")
    fetched: list[tuple[str, int]] = []

    def record(response: Response) -> None:
        if "/live/" in response.url:
            fetched.append((response.url, len(response.body())))

    page.on("response", record)
    page.goto(f"{server.url}/groups/{world.group}/missions/")
    expect(page.locator("#connection-status")).to_have_attribute("data-state", "live")
    before = mission_ids(page)
    page.locator("#missions-rows > li").evaluate_all(
        "(rows) => rows.forEach((row) => (row.__untouched = true))"
    )
    touched = lists.missions[-2]

    in_plain_thread(wf.offer, world, lists.item)
    row = page.locator(f'#missions-rows li[data-mission="{touched}"]')
    expect(row).to_contain_text("1 offered", timeout=LIVE_TIMEOUT_MS)
    untouched = page.locator("#missions-rows > li").evaluate_all(
        "(rows) => rows.filter((row) => row.__untouched).map((row) => row.dataset.mission)"
    )
    assert untouched == [m for m in before if m != touched]
    [(url, size)] = fetched
    assert f"work_item={lists.item}" in url
    assert size < 4_000, f"one row, not the list: {size} bytes"

    created = in_plain_thread(wf.mission, world)
    expect(page.locator("#missions-rows > li").first).to_have_attribute(
        "data-mission", created, timeout=LIVE_TIMEOUT_MS
    )
    expect(page.locator("#missions-rows > li")).to_have_count(listings.PER_PAGE)
    assert mission_ids(page) == [created, *before[:-1]]
    snap(page, "lists-missions-live")

    in_plain_thread(lambda: [wf.mission(world) for _ in range(25)])  # a log of 50+ events
    page.goto(f"{server.url}/groups/{world.group}/timeline/")
    expect(page.locator("#connection-status")).to_have_attribute("data-state", "live")
    events = page.locator("#timeline-lines > li.tl-line")
    expect(events).to_have_count(50)
    head = int(events.first.get_attribute("data-sequence") or 0)
    for _ in range(3):
        in_plain_thread(wf.mission, world)
    expect(events.first).to_have_attribute("data-sequence", str(head + 3), timeout=LIVE_TIMEOUT_MS)
    expect(events).to_have_count(50)  # the live Timeline keeps a page of lines
    expect(events.last).to_have_attribute("data-sequence", str(head + 3 - 49))
