"""The WorkItem page's Attempts card in a real browser (issue 37 §4): a person reads every
offer and its answer, each attempt with its leases, and a retry counting down to when the
next attempt may start; the screen passes axe-core and fits 390 px without sideways scroll.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from playwright.sync_api import Page, expect

from tests.dashboard import workflows as wf
from tests.dashboard.test_attempts_card import FAILURE, contract, decline, fail, offer_to_w2
from tests.e2e.screens import SCREENSHOTS, check_screen
from tests.e2e.test_dashboard_browser import log_in, with_password
from tests.factories import World, build_world
from tests.live_server import LiveServer

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

#: long enough that the countdown still runs while the browser looks at it
BACKOFF_S = 300


@dataclass
class Story:
    world: World
    item: str
    first_lease: str
    retry_at: str


@pytest.fixture
def story(transactional_db: None) -> Story:
    """Offered to w2, declined for capacity, offered again and accepted; started, paused at a
    checkpoint, resumed, renewed and failed: attempt 2 waits out its backoff. Committed
    before the browser starts, so the server process sees it."""
    world = build_world()
    with_password(world.olga)
    item = wf.authorize(world, wf.mission(world), contract=contract(BACKOFF_S))
    decline(world, item, offer_to_w2(world, item))
    wf.accept(world, item, offer_to_w2(world, item))
    first = wf.start(world, item)
    wf.checkpoint(world, item, first, ref="draft-1")
    second = wf.start(world, item)
    wf.renew(world, item, second)
    retry_at = fail(world, item, second)
    return Story(world, item, first, retry_at)


def test_the_attempts_card_tells_the_item_s_attempts_and_counts_down_its_backoff(
    story: Story, live_asgi_server: LiveServer, page: Page
) -> None:
    """Issue 37 §4, R11.4-08: olga opens the WorkItem: the card says attempt 1 failed and
    why, and counts down to when attempt 2 may start (``countdown.js`` writes "… left"); the
    attempt lists its two leases (the first released at a checkpoint, the start after it a
    resume, not a new attempt) and both offers with their answers. Desktop and 390 px
    screenshots, no sideways scroll, axe-core clean."""
    server = live_asgi_server
    log_in(page, server, "olga")
    page.goto(f"{server.url}/groups/{story.world.group}/work-items/{story.item}/")

    card = page.locator("#attempts")
    expect(card.get_by_role("heading", name=re.compile("^Attempts"))).to_be_visible()
    pending = card.locator('[data-field="pending-retry"]')
    expect(pending).to_contain_text(f"Attempt 1 failed: {FAILURE}")
    expect(pending).to_contain_text("Attempt 2 of 3 may start from")
    countdown = pending.locator('[data-field="backoff-countdown"]')
    expect(countdown).to_have_attribute("data-countdown", story.retry_at)
    expect(countdown).to_have_text(re.compile(r"^\d+ min \d+ s left$"))

    attempt = card.locator('[data-attempt="1"]')
    expect(attempt).to_have_attribute("data-outcome", "failed")
    expect(attempt).to_contain_text("resumed once from where it stopped")
    expect(attempt.locator(".attempt__lease")).to_have_count(2)
    expect(attempt.locator(f'[data-lease="{story.first_lease}"]')).to_contain_text(
        "released at a checkpoint"
    )
    offers = card.locator('[data-field="offer-list"] > li')
    expect(offers).to_have_count(2)
    expect(offers.nth(0)).to_contain_text("declined: no capacity")
    expect(offers.nth(1)).to_contain_text("accepted")
    # the event types stay in the collapsed details
    expect(attempt.locator("details.technical-details dl")).to_be_hidden()

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    card.screenshot(path=SCREENSHOTS / "attempts-card.png")
    check_screen(page, "attempts-page")  # desktop and 390 px, axe-core, no CSP refusal
    page.set_viewport_size({"width": 390, "height": 900})
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    card.screenshot(path=SCREENSHOTS / "attempts-card-390px.png")
