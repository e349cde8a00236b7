"""The Timeline in Chromium (issue 37 §2; docs/dashboard.md "Timeline"): reached from the
group page, it reads in words, a filter narrows it, a filter that cannot be read is said next
to its field, and each line's JSON opens on demand; every screen passes axe-core, fits
390 px and keeps the Content-Security-Policy (``screens.check_screen``)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from playwright.sync_api import Page, expect

from tests.dashboard import workflows as wf
from tests.e2e.screens import check_screen
from tests.e2e.test_dashboard_browser import log_in, with_password
from tests.factories import World, build_world
from tests.live_server import LiveServer

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@dataclass
class Story:
    world: World
    item: str


@pytest.fixture
def story(transactional_db: None) -> Story:
    """A short history, committed before the browser starts: missions, a WorkItem run to a
    lease, a progress report and a block with the owner's words."""
    world = build_world()
    with_password(world.olga)
    for week in (1, 2):
        wf.mission(world, goal=f"Reconcile the ledger of week {week}")
    item = wf.queued(world, wf.mission(world, goal="Summarise the incident reports"))
    lease = wf.start(world, item)
    wf.use(world, item, lease, tokens=1200)
    wf.block(world, item, lease, "Which month exactly?")
    return Story(world, item)


def test_the_timeline_reads_filters_says_a_bad_filter_and_opens_the_json(
    story: Story, live_asgi_server: LiveServer, page: Page
) -> None:
    """Issue 37 §2, R16-03, wire§6."""
    server, world = live_asgi_server, story.world
    log_in(page, server, "olga")
    page.goto(f"{server.url}/groups/{world.group}/")
    page.get_by_role("link", name="Timeline", exact=True).click()
    expect(page).to_have_url(f"{server.url}/groups/{world.group}/timeline/")

    lines = page.locator("#timeline-lines > li")
    expect(lines.first).to_contain_text("w2 stopped on")
    expect(page.locator("#timeline-lines")).to_contain_text("w1 created the mission “Reconcile")
    # names, never principals, outside the collapsed JSON
    expect(page.locator(".tl-line__words").filter(has_text="agent:")).to_have_count(0)
    expect(page.locator("#chain-status")).to_contain_text("✓ Verified")
    check_screen(page, "timeline")

    # the JSON of an event, on demand
    first = lines.first
    json = first.locator('[data-field="json"]')
    expect(json).to_be_hidden()
    first.locator("summary").click()
    expect(json).to_be_visible()
    expect(json).to_contain_text('"type": "work.blocked"')
    check_screen(page, "timeline-json")

    # a filter by kind, in words
    page.get_by_label("What happened").select_option(label="Mission created")
    page.get_by_role("button", name="Show").click()
    expect(page).to_have_url(re.compile(r"/timeline/\?kind=mission\.created&"))
    expect(lines).to_have_count(3)
    for index in range(3):
        expect(lines.nth(index)).to_contain_text("created the mission")
    check_screen(page, "timeline-filtered")

    # a filter that cannot be read: said next to its field, the page still answers
    page.goto(f"{server.url}/groups/{world.group}/timeline/?from=yesterday&work_item={story.item}")
    error = page.locator("#tl-from-error")
    expect(error).to_have_text("“yesterday” is not a time; write it as 2026-12-07 14:30 (UTC).")
    expect(page.get_by_label("From (UTC)")).to_have_attribute("aria-invalid", "true")
    expect(lines).to_have_count(0)
    check_screen(page, "timeline-bad-filter")

    # the WorkItem's own events, by its title
    page.get_by_label("From (UTC)").fill("")
    page.get_by_role("button", name="Show").click()
    expect(lines.first).to_contain_text("“Summarise the incident reports of November”")
    expect(page.locator(".tl-field__note")).to_contain_text("Summarise the incident reports of")
