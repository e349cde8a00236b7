"""The Agents screens in Chromium against a real server (issue 37 §3): an observer opens the
group's agents from the group page, reads the worker's card (capabilities, session, Presence,
the lease it holds with its expiry counting down, its last progress and failures), watches a
lease it takes arrive live, then opens the agent's page and one of its WorkItems. Every screen
is shot, checked with axe-core, at 390 px and under the Content-Security-Policy.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from playwright.sync_api import Page, expect

from tests.dashboard import workflows as wf
from tests.dashboard.agent_world import busy_world
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
    made: dict[str, str]


@pytest.fixture
def scene(transactional_db: None) -> Scene:
    """Committed before the browser starts, so the server process sees it."""
    world = build_world()
    maria = with_password(human("maria"))
    grant(world.alice, world.group, maria, "observer")
    return Scene(world, maria, busy_world(world))


def test_an_observer_reads_the_agents_cards_and_a_lease_arrives_live(
    scene: Scene, live_asgi_server: LiveServer, page: Page
) -> None:
    """R11.1-11, R11.3-03, R11.4-01, R11.4-08: the cards in words; a ``work.start`` by w2
    adds the lease to its card without a reload; the agent's page lists its WorkItems."""
    server, world = live_asgi_server, scene.world
    log_in(page, server, "maria")
    page.goto(f"{server.url}/groups/{world.group}/")
    page.get_by_role("link", name="Agents", exact=True).click()
    expect(page.get_by_role("heading", name=f"Agents of {world.group}")).to_be_visible()
    w2 = page.locator('[data-agent="agent:w2"]')
    expect(w2.locator('[data-field="capabilities"]')).to_contain_text("text.summarise")
    expect(w2.locator('[data-field="presence"]')).to_contain_text("2 of 3 slots free")
    expect(w2.locator('[data-field="leases"] li')).to_have_count(1)
    expect(w2.locator('[data-field="leases"] [role="timer"]')).to_contain_text("left")
    expect(w2.locator('[data-field="progress"]')).to_contain_text("drafting the summary")
    expect(w2.locator('[data-field="failures"]')).to_contain_text("An attempt failed")
    expect(page.locator("#connection-status")).to_have_attribute("data-state", "live")
    check_screen(page, "agents-01-cards")

    in_plain_thread(wf.start, world, scene.made["queued"])
    expect(w2.locator('[data-field="leases"] li')).to_have_count(2, timeout=LIVE_TIMEOUT_MS)
    expect(w2.locator('[data-field="counts"]')).to_contain_text("2 active")
    check_screen(page, "agents-02-lease-arrived-live")

    w2.get_by_role("link", name="w2", exact=True).click()
    expect(page.get_by_role("heading", name="w2", exact=True)).to_be_visible()
    items = page.locator(".agent-items__table tbody tr")
    expect(items).to_have_count(4)
    check_screen(page, "agents-03-agent-page")
    page.get_by_role("navigation", name="Which WorkItems").get_by_role(
        "link", name="Failed"
    ).click()
    expect(items).to_have_count(1)
    expect(items.first).to_contain_text("Translate it")
    check_screen(page, "agents-04-agent-failed-items")
    items.first.get_by_role("link", name="Translate it").click()
    expect(page.locator('[data-field="owner"]')).to_contain_text("w2")
