"""The People screens in Chromium against a real server (issue 37 §3): an observer opens the
group's people from the agents page, reads petra's card (her roles, what waits on her, her
last decision: an execution she approved), watches olga's card change live when olga
approves, then opens petra's page — what waits on her, with links to each screen, and what
she decided, with the events searched — and follows a link to the approval screen. Every
screen is shot, checked with axe-core, at 390 px and under the Content-Security-Policy.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from playwright.sync_api import Page, expect

from tests.dashboard import workflows as wf
from tests.e2e.screens import check_screen
from tests.e2e.test_dashboard_browser import log_in, with_password
from tests.factories import HumanPersona, World, build_world, grant, human
from tests.live_server import LiveServer, in_plain_thread

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

LIVE_TIMEOUT_MS = 5_000


@dataclass
class Scene:
    world: World
    maria: HumanPersona  # observer
    petra: HumanPersona  # a second mission owner
    decided: str  # the WorkItem petra approved
    waiting: str  # a WorkItem that waits on petra and olga


@pytest.fixture
def scene(transactional_db: None) -> Scene:
    """Committed before the browser starts, so the server process sees it."""
    world = build_world()
    maria = with_password(human("maria"))
    grant(world.alice, world.group, maria, "observer")
    petra = human("petra")
    grant(world.alice, world.group, petra, "mission_owner")
    rita = human("rita")
    grant(world.alice, world.group, rita, "reviewer")
    mission = wf.mission(world)
    gated = wf.gated_contract(approvals=2)
    decided = wf.queued(world, mission, contract=gated)
    wf.approve(petra, world.group, decided)
    waiting = wf.queued(world, mission, contract=gated)
    return Scene(world, maria, petra, decided, waiting)


def assert_fits_390(page: Page, name: str) -> None:
    """At 390 px the page does not scroll sideways (``check_screen`` shoots it there)."""
    size = page.viewport_size
    page.set_viewport_size({"width": 390, "height": 844})
    try:
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, f"{name} scrolls sideways at 390 px: {width}"
    finally:
        if size:
            page.set_viewport_size(size)


def test_an_observer_reads_who_decided_what_and_what_waits_on_them(
    scene: Scene, live_asgi_server: LiveServer, page: Page
) -> None:
    """R10.2-06: petra's approval is her last decision and heads her page; olga's approval
    reaches her card without a reload; what still waits on olga links to its approval screen."""
    server, world = live_asgi_server, scene.world
    log_in(page, server, "maria")
    page.goto(f"{server.url}/groups/{world.group}/agents/")
    page.get_by_role("link", name="People", exact=True).click()
    expect(page.get_by_role("heading", name=f"People of {world.group}")).to_be_visible()
    petra = page.locator('[data-person="user:petra"]')
    expect(petra.locator('[data-field="roles"]')).to_contain_text("A mission owner")
    expect(petra.locator('[data-field="waiting"]')).to_contain_text("1 execution approval")
    expect(petra.locator('[data-field="last"]')).to_contain_text("petra approved the execution")
    olga = page.locator('[data-person="user:olga"]')
    expect(olga.locator('[data-field="waiting"]')).to_contain_text("2 execution approvals")
    expect(page.locator('[data-person="user:rita"] [data-field="waiting"]')).to_contain_text(
        "nothing"
    )
    expect(page.locator("#connection-status")).to_have_attribute("data-state", "live")
    check_screen(page, "people-01-cards")
    assert_fits_390(page, "people-01-cards")

    in_plain_thread(wf.approve, world.olga, world.group, scene.waiting)
    expect(olga.locator('[data-field="last"]')).to_contain_text(
        "olga approved the execution", timeout=LIVE_TIMEOUT_MS
    )
    expect(olga.locator('[data-field="waiting"]')).to_contain_text("1 execution approval")
    expect(petra.locator('[data-field="waiting"]')).to_contain_text("1 execution approval")
    check_screen(page, "people-02-olga-approved-live")

    page.locator('[data-person="user:olga"]').get_by_role("link", name="olga", exact=True).click()
    expect(page.get_by_role("heading", name="olga", exact=True)).to_be_visible()
    waiting = page.locator('[data-field="waiting"]')
    expect(waiting.locator("li")).to_have_count(1)
    decided = page.locator("#person-decided li")
    expect(decided).to_have_count(1)
    expect(decided.first).to_contain_text("Approved an execution")
    expect(page.locator("#person-searched")).to_contain_text("This page searched events #1 to #")
    check_screen(page, "people-03-person-page")
    assert_fits_390(page, "people-03-person-page")

    page.goto(f"{server.url}/groups/{world.group}/people/petra/")
    expect(page.locator("#person-decided li")).to_have_count(1)
    expect(page.locator('[data-field="waiting"] li')).to_have_count(1)
    check_screen(page, "people-04-petra-page")
    page.goto(f"{server.url}/groups/{world.group}/people/olga/")
    waiting.locator("li a").first.click()
    expect(page).to_have_url(
        f"{server.url}/groups/{world.group}/work-items/{scene.decided}/approval/"
    )
