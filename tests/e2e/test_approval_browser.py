"""The inbox and the execution-approval screen in a real browser against a real server: an item
needing two approvals waits in two mission owners' inboxes; the first approves it from the
approval screen, and the second owner's inbox — open all along — shows 1 of 2 within a second,
without a reload; the second approves from the approval screen and the item leaves both
inboxes. A reviewer sees why she may not decide. Every screen visited is shot under
``var/screenshots/``, checked with axe-core and at 400 px.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.dashboard import workflows as wf
from tests.e2e.screens import check_screen, snap, watch_csp
from tests.e2e.test_dashboard_browser import log_in, with_password
from tests.factories import HumanPersona, World, build_world, grant, human, now_text
from tests.live_server import LiveServer

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

#: "the other owner's open inbox updates within a second, without a reload"
LIVE_MS = 1_000


@dataclass
class Quorum:
    world: World
    petra: HumanPersona  # the second mission owner
    rita: HumanPersona  # a reviewer: may not decide
    item: str  # queued, needs two approvals
    mission: str


@pytest.fixture
def quorum(transactional_db: None) -> Quorum:
    """Committed before the browser starts, so the server process sees it."""
    world = build_world()
    with_password(world.olga)
    petra = with_password(human("petra"))
    rita = with_password(human("rita"))
    grant(world.alice, world.group, petra, "mission_owner")
    grant(world.alice, world.group, rita, "reviewer")
    mission = wf.mission(world)
    # the example contract's deadline may be behind us: this one leaves a day to start
    item = wf.queued(world, mission, contract=wf.gated_contract(2, deadline=now_text(86_400)))
    return Quorum(world, petra, rita, item, mission)


def signed_in(browser: Browser, server: LiveServer, username: str) -> Page:
    """A second person's browser: a context of their own, so their own session."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(10_000)
    watch_csp(context)
    page = context.new_page()
    log_in(page, server, username)
    return page


def test_two_owners_approve_an_item_from_their_inboxes_and_see_each_other_live(
    quorum: Quorum, live_asgi_server: LiveServer, page: Page, browser: Browser
) -> None:
    """R10.2-06, wire§7, R16-09: the item waits in both owners' inboxes (0 of 2); olga
    approves from the approval screen with a comment; petra's inbox, open all along, shows
    1 of 2 within a second without a reload; petra reads olga's comment on the approval
    screen and approves; the quorum is met and the item leaves both inboxes."""
    server, world, item = live_asgi_server, quorum.world, quorum.item
    log_in(page, server, "olga")
    petra = signed_in(browser, server, "petra")
    try:
        entry = f"#inbox-approvals li.inbox-entry[data-work-item='{item}']"
        for inbox in (page, petra):
            expect(inbox.locator(entry)).to_contain_text("0 of 2 approvals")
            expect(inbox.locator("#connection-status")).to_have_attribute("data-state", "live")
        check_screen(page, "approval-01-inbox-owner")

        page.locator(entry).get_by_role("link").first.click()
        expect(page).to_have_url(f"{server.url}/groups/{world.group}/work-items/{item}/approval/")
        expect(page.get_by_role("heading", name="What you approve")).to_be_visible()
        expect(page.locator('[data-field="quorum"]')).to_contain_text("0 of 2")
        expect(page.locator('[data-field="start-countdown"]')).to_have_text(re.compile(r"left$"))
        check_screen(page, "approval-02-screen")
        page.get_by_label("Comment on approving (optional)").fill("Read-only: safe to run.")
        page.get_by_role("button", name="Approve revision 1").click()
        expect(page.locator("#flash")).to_contain_text(
            "Approved revision 1 of “Summarise the incident reports of November”: 1 of 2 approvals."
        )
        expect(page.locator("#decisions")).to_contain_text("Read-only: safe to run.")
        expect(page.locator('[data-field="why-not"]')).to_contain_text(
            "You already approved revision 1."
        )
        snap(page, "approval-03-approved-once")

        # petra's inbox was open all along: the first grant shows without a reload
        petra.evaluate("() => (window.__sameDocument = true)")
        expect(petra.locator(entry)).to_contain_text("1 of 2 approvals", timeout=LIVE_MS)
        assert petra.evaluate("() => window.__sameDocument") is True
        snap(petra, "approval-04-inbox-updated-live")

        petra.locator(entry).get_by_role("link").first.click()
        expect(petra.locator("#decisions")).to_contain_text("Read-only: safe to run.")
        petra.get_by_label("Comment on approving (optional)").fill("Second pair of eyes: yes.")
        petra.get_by_role("button", name="Approve revision 1").click()
        expect(petra.locator('[data-field="quorum-met"]')).to_contain_text(
            "Approved by 2 of 2: the owner may start it."
        )
        check_screen(petra, "approval-05-quorum-met")

        petra.goto(f"{server.url}/")
        expect(petra.locator(entry)).to_have_count(0)
        expect(petra.locator("#inbox-approvals")).to_contain_text("Nothing waits for you here.")
        expect(page.locator('[data-field="quorum"]')).to_contain_text("2 of 2", timeout=LIVE_MS)
    finally:
        petra.context.close()


def test_a_reviewer_reads_why_she_may_not_decide_and_refusing_needs_a_reason(
    quorum: Quorum, live_asgi_server: LiveServer, page: Page, browser: Browser
) -> None:
    """R10.2-06, wire§9: the reviewer's screen has no forms, only why in words; an owner's
    Refuse form will not send without a reason (required), and with one the refusal shows."""
    server, world, item = live_asgi_server, quorum.world, quorum.item
    url = f"{server.url}/groups/{world.group}/work-items/{item}/approval/"
    rita = signed_in(browser, server, "rita")
    try:
        rita.goto(url)
        expect(rita.locator('[data-field="why-not"]')).to_contain_text(
            "Only mission owners can approve or refuse an execution; you are a reviewer"
        )
        expect(rita.get_by_role("button", name="Approve revision 1")).to_have_count(0)
        check_screen(rita, "approval-06-why-not-reviewer")
    finally:
        rita.context.close()

    log_in(page, server, "olga")
    page.goto(url)
    refuse = page.get_by_role("button", name="Refuse revision 1")
    refuse.click()  # the browser keeps an empty reason from being sent
    expect(page).to_have_url(url)
    expect(page.locator("#flash")).to_have_count(0)
    page.get_by_label("Why it must not run (required to refuse)").fill(
        "Name the tables it may read first."
    )
    refuse.click()
    expect(page.locator("#flash")).to_contain_text(
        "Refused revision 1 of “Summarise the incident reports of November”"
    )
    expect(page.locator('[data-field="refusal"]')).to_contain_text(
        "Name the tables it may read first."
    )
    check_screen(page, "approval-07-refused")
