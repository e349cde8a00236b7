"""Triage at scale in Chromium against the real server (issue 37 §5): a mission owner ticks
three missions waiting for final approval and approves them with one comment; one was
approved by another owner between the page's render and the click, so the answer lists two
approved and one refused in words, the comment kept for the retry. A filter value the inbox
cannot read is said beside its field. Every screen is shot at desktop width and at 390 px
(no sideways scroll) and checked with axe-core.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from playwright.sync_api import Page, expect

from tests.dashboard import workflows as wf
from tests.dashboard.test_inbox_triage import ready_mission
from tests.e2e.screens import NARROW_WIDTH, check_screen, snap
from tests.e2e.test_dashboard_browser import log_in, with_password
from tests.e2e.test_plain_words_browser import one_counter_per_limited_field
from tests.factories import HumanPersona, World, build_world, grant, human
from tests.live_server import LiveServer, in_plain_thread

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@dataclass
class Scene:
    world: World
    petra: HumanPersona  # a second mission owner, who approves one mission first
    missions: tuple[str, str, str]


@pytest.fixture
def scene(transactional_db: None) -> Scene:
    """Committed before the browser starts, so the server process sees it."""
    world = build_world()
    with_password(world.olga)
    petra = human("petra")
    grant(world.alice, world.group, petra, "mission_owner")
    goals = ("Summarise the November incidents", "Draft the Q4 budget note", "Tidy the wiki")
    first, second, third = (ready_mission(world, goal=goal) for goal in goals)
    return Scene(world, petra, (first, second, third))


def fits_narrow(page: Page) -> None:
    size = page.viewport_size or {"width": 1280, "height": 900}
    page.set_viewport_size({"width": NARROW_WIDTH, "height": size["height"]})
    try:
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= NARROW_WIDTH, f"the page is {width} px wide at {NARROW_WIDTH} px"
    finally:
        page.set_viewport_size(size)


def test_three_missions_approved_at_once_with_one_refused_show_both_outcomes(
    scene: Scene, live_asgi_server: LiveServer, page: Page
) -> None:
    """issue 37 §5, R10.2-16: each ticked mission gets its own approval; the one petra
    approved meanwhile is refused in words, the code only in the collapsed details; the
    comment is in the retry form's textarea."""
    server, world = live_asgi_server, scene.world
    first, second, third = scene.missions
    log_in(page, server, "olga")
    page.goto(f"{server.url}/?kind=missions&sort=oldest")
    section = page.locator("#inbox-missions")
    expect(section.locator("li.inbox-entry")).to_have_count(3)
    check_screen(page, "inbox-triage-missions")
    fits_narrow(page)

    for mission in scene.missions:
        page.locator(f'input[value="{world.group}|{mission}"]').check()
    page.get_by_label("Comment on every approval (optional)").fill("All three read well.")
    # the page's live refresh is held back, as on a slow connection: petra's approval lands
    # between what olga sees and her click
    page.route("**/inbox/section/**", lambda route: route.abort())

    def petra_approves() -> None:
        wf.submit(scene.petra, world.group, "mission.approve", {"mission": second, "comment": ""})

    in_plain_thread(petra_approves)
    page.get_by_role("button", name="Approve ticked missions").click()

    expect(page.locator('[data-field="summary"]')).to_have_text(
        "2 of 3 missions approved; 1 refused."
    )
    approved = page.locator('[data-field="approved"]')
    expect(approved.locator(f'[data-mission="{first}"]')).to_be_visible()
    expect(approved.locator(f'[data-mission="{third}"]')).to_be_visible()
    refused = page.locator('[data-field="refused"]')
    expect(refused.locator(f'[data-mission="{second}"]')).to_contain_text(
        "This mission has ended: there is nothing left to approve."
    )
    expect(refused.get_by_text("ILLEGAL_TRANSITION")).to_be_hidden()
    expect(page.get_by_label("Comment on every approval (optional)")).to_have_value(
        "All three read well."
    )
    check_screen(page, "inbox-triage-bulk-result")
    fits_narrow(page)
    page.unroute("**/inbox/section/**")


def test_a_filter_value_the_inbox_cannot_read_is_shown_beside_its_field(
    scene: Scene, live_asgi_server: LiveServer, page: Page
) -> None:
    server = live_asgi_server
    log_in(page, server, "olga")

    response = page.goto(f"{server.url}/?kind=questions&sort=oldest")

    assert response is not None
    assert response.status == 400
    error = page.locator('[data-field="error-kind"]')
    expect(error).to_contain_text("There is no such kind of entry")
    expect(page.get_by_label("Kind")).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#inbox-missions li.inbox-entry")).to_have_count(3)
    check_screen(page, "inbox-triage-bad-filter")
    fits_narrow(page)

    page.get_by_label("Kind").select_option("missions")
    page.get_by_role("button", name="Apply").click()
    expect(page).to_have_url(f"{server.url}/?group=&kind=missions&sort=oldest")
    expect(page.locator('[data-field="error-kind"]')).to_have_count(0)


def test_snoozing_an_entry_keeps_the_place_and_counts_it(
    scene: Scene, live_asgi_server: LiveServer, page: Page
) -> None:
    server = live_asgi_server
    log_in(page, server, "olga")
    page.goto(f"{server.url}/?sort=oldest")
    entry = page.locator(f'#inbox-missions li[data-mission="{scene.missions[0]}"]')
    entry.locator("summary").click()
    entry.get_by_role("button", name="For 1 hour").click()

    expect(page).to_have_url(f"{server.url}/?sort=oldest#inbox-missions")
    expect(page.locator('[data-field="snoozed"]')).to_have_text("1 snoozed — show")
    expect(page.locator("#inbox-missions li.inbox-entry")).to_have_count(2)
    snap(page, "inbox-triage-snoozed")
    page.get_by_role("link", name="show").click()
    expect(page.locator(f'li[data-mission="{scene.missions[0]}"]')).to_contain_text("Snoozed until")
    assert "snoozed=show" in page.url


def test_the_bulk_comment_keeps_its_one_counter_when_the_inbox_updates_in_place(
    scene: Scene, live_asgi_server: LiveServer, page: Page
) -> None:
    """Issue 34 §5, §6: the inbox is updated in place (morph.js), which puts the server's
    ``maxlength`` back on the bulk comment and drops the counter the server does not know;
    after petra's approval the comment keeps its text and is counted again, once."""
    server, world = live_asgi_server, scene.world
    log_in(page, server, "olga")
    page.goto(f"{server.url}/?kind=missions&sort=oldest")
    expect(page.locator("#connection-status")).to_have_attribute("data-state", "live")
    section = page.locator("#inbox-missions")
    expect(section.locator("li.inbox-entry")).to_have_count(3)
    comment = page.get_by_label("Comment on every approval (optional)")
    counter = page.locator("#bulk-approve-comment-counter")
    comment.fill("x" * 9_000)
    expect(counter).to_have_text("9,000 of 10,000 characters")

    before = page.evaluate(REFRESHED)
    in_plain_thread(
        wf.submit,
        scene.petra,
        world.group,
        "mission.approve",
        {"mission": scene.missions[1], "comment": ""},
    )
    page.wait_for_function(f"before => ({REFRESHED})() !== before", arg=before, timeout=5_000)
    expect(section.locator("li.inbox-entry")).to_have_count(2)
    assert comment.input_value() == "x" * 9_000
    expect(counter).to_have_text("9,000 of 10,000 characters")
    expect(counter).to_have_class(re.compile("text-limit--near"))
    one_counter_per_limited_field(page)
    snap(page, "inbox-triage-bulk-comment-counted-after-a-live-update")


#: when the inbox's sections were last refreshed live ("" before the first time)
REFRESHED = "() => document.getElementById('inbox-sections').dataset.refreshedAt || ''"
