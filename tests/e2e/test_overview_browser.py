"""The group page as an overview in Chromium (issue 37 §1; docs/dashboard.md "The group page"):
its counts and "Needs attention now" move live when a WorkItem changes state through the one
write path, it links to the Timeline, which itself goes live; every screen passes axe-core,
fits 390 px and keeps the Content-Security-Policy (``screens.check_screen``)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.dashboard import workflows as wf
from tests.e2e.screens import NARROW_WIDTH, check_screen, snap
from tests.e2e.test_dashboard_browser import LIVE_TIMEOUT_MS, log_in, with_password
from tests.factories import World, build_world
from tests.live_server import LiveServer, in_plain_thread

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@dataclass
class Story:
    world: World
    mission: str
    item: str


@pytest.fixture
def story(transactional_db: None) -> Story:
    """A mission with one queued WorkItem, committed before the browser starts."""
    world = build_world()
    with_password(world.olga)
    mission = wf.mission(world, goal="Reconcile the ledger of week 12")
    return Story(world, mission, wf.queued(world, mission))


def count(page: Page, table: str, state: str) -> Locator:
    return page.locator(f'#{table} [data-state="{state}"] [data-field="count"]')


def test_the_overview_counts_and_attention_move_live(
    story: Story, live_asgi_server: LiveServer, page: Page
) -> None:
    """Issue 37 §1: w2 starts, then blocks, its WorkItem; without a reload the counts move
    from queued to running to blocked, and the blocked item appears under "Needs attention
    now" with the worker's words and a link to it."""
    server, world = live_asgi_server, story.world
    log_in(page, server, "olga")
    page.goto(f"{server.url}/groups/{world.group}/")
    expect(page.locator("#connection-status")).to_have_attribute("data-state", "live")
    expect(count(page, "work-counts", "queued")).to_have_text("1")
    expect(count(page, "work-counts", "active")).to_have_text("0")
    expect(count(page, "mission-counts", "active")).to_have_text("1")
    expect(page.get_by_role("link", name="Timeline: every event, in words")).to_be_visible()
    page.evaluate("() => (window.__sameDocument = true)")

    lease = in_plain_thread(wf.start, world, story.item)
    expect(count(page, "work-counts", "active")).to_have_text("1", timeout=LIVE_TIMEOUT_MS)
    expect(count(page, "work-counts", "queued")).to_have_text("0")

    in_plain_thread(wf.block, world, story.item, lease, "Which month exactly?")
    expect(count(page, "work-counts", "blocked")).to_have_text("1", timeout=LIVE_TIMEOUT_MS)
    row = page.locator(f"#attention-blocked-{story.item}")
    expect(row).to_contain_text("Blocked: its worker needs “Which month exactly?”")
    expect(page.locator('[data-field="attention-total"]')).to_have_text("1")
    assert page.evaluate("() => window.__sameDocument") is True
    check_screen(page, "overview")

    page.set_viewport_size({"width": NARROW_WIDTH, "height": 844})
    snap(page, "overview-390")
    assert page.evaluate("() => document.documentElement.scrollWidth") <= NARROW_WIDTH
    page.set_viewport_size({"width": 1280, "height": 900})

    row.get_by_role("link", name="Open the WorkItem").click()
    expect(page).to_have_url(f"{server.url}/groups/{world.group}/work-items/{story.item}/")


def test_the_timeline_prepends_new_events_in_words_as_they_happen(
    story: Story, live_asgi_server: LiveServer, page: Page
) -> None:
    """Issue 37 §1, R16-03, wire§7: on the Timeline's newest page an event appended by the
    write path arrives at the top, in words, checked by the server and by the browser."""
    server, world = live_asgi_server, story.world
    log_in(page, server, "olga")
    page.goto(f"{server.url}/groups/{world.group}/")
    page.get_by_role("link", name="Timeline: every event, in words").click()
    expect(page).to_have_url(f"{server.url}/groups/{world.group}/timeline/")
    expect(page.locator("#connection-status")).to_have_attribute("data-state", "live")
    lines = page.locator("#timeline-lines > li")
    before = lines.count()
    head = int(lines.first.get_attribute("data-sequence") or 0)

    in_plain_thread(wf.start, world, story.item)
    newest = lines.first
    expect(newest).to_have_attribute("data-sequence", str(head + 1), timeout=LIVE_TIMEOUT_MS)
    expect(newest).to_contain_text("w2 started")
    expect(newest).to_have_attribute("data-verdict", "verified")
    expect(newest).to_have_attribute("data-browser", "verified")
    expect(lines).to_have_count(before + 1)
    expect(page.locator("#timeline-live")).to_contain_text("Re-checked in your browser: ✓ 1")
    # the page's verdict and its pager speak of what it shows now
    expect(page.locator("#chain-status")).to_contain_text(f"each of these {before + 1} events")
    expect(page.locator(".tl-pager .pager__range").first).to_have_text(f"#{head + 1} – #1")
    check_screen(page, "timeline-live")
