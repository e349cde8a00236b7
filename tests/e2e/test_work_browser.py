"""The work section in a real browser against a real server: a mission owner approves an
item's execution from the group page, and what agents do next shows up live, without a
reload, because the page re-fetches its work section when work events arrive.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from playwright.sync_api import Page, expect

from apps.ledger.models import Event
from tests.dashboard import workflows as wf
from tests.e2e.screens import snap
from tests.e2e.test_dashboard_browser import log_in, with_password
from tests.factories import HumanPersona, World, build_world, grant, human
from tests.live_server import LiveServer, in_plain_thread

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

LIVE_TIMEOUT_MS = 5_000


@dataclass
class Work:
    world: World
    petra: HumanPersona  # a second mission owner
    mission: str
    gated: str  # queued, needs 2 approvals
    plain: str  # queued, no approval needed
    later: str  # open, depends on ``gated``


@pytest.fixture
def work(transactional_db: None) -> Work:
    """Committed before the browser starts, so the server process sees it."""
    world = build_world()
    with_password(world.olga)
    petra = human("petra")
    grant(world.alice, world.group, petra, "mission_owner")
    mission = wf.mission(world)
    gated = wf.queued(world, mission, contract=wf.gated_contract(2))
    plain = wf.queued(world, mission)
    later = wf.authorize(world, mission, depends_on=(gated,))
    return Work(world, petra, mission, gated, plain, later)


def test_a_mission_owner_grants_execution_and_sees_the_item_start_live(
    work: Work, live_asgi_server: LiveServer, page: Page
) -> None:
    """R10.2-06, wire§7, R16-09: olga sees the gated item waiting, grants it with a comment
    (kept while the section refreshes under her), sees the confirmation and 1/2; petra's
    grant and then w2's ``work.start`` arrive live: the item leaves the queue and turns
    ``active`` without a reload."""
    server, world = live_asgi_server, work.world
    log_in(page, server, "olga")
    page.goto(f"{server.url}/groups/{world.group}/")
    expect(page.locator("#connection-status")).to_have_attribute("data-state", "live")

    queue = page.locator("#approval-queue")
    waiting = queue.locator(f'li.approval-item[data-work-item="{work.gated}"]')
    expect(waiting).to_be_visible()
    expect(waiting.locator('[data-field="approvals"]')).to_have_text("0 of 2 approvals")
    expect(queue.locator("li.approval-item")).to_have_count(1)

    comment = waiting.get_by_label(f"Comment on approving {work.gated}")
    comment.fill("Checked the blast radius: read-only.")
    # An event arrives while she types: the section is swapped, her comment stays.
    section = page.locator("#approval-queue")
    in_plain_thread(
        wf.submit,
        world.w1,
        world.group,
        "work.message",
        {"work_item": work.gated, "text": "Approval, anyone?"},
    )
    expect(section).to_have_attribute(
        "data-refreshed-at", re.compile(".+"), timeout=LIVE_TIMEOUT_MS
    )
    expect(comment).to_have_value("Checked the blast radius: read-only.")
    snap(page, "work-waiting-for-approval")

    waiting.get_by_role("button", name="Approve revision 1").click()
    expect(page).to_have_url(f"{server.url}/groups/{world.group}/")
    expect(page.locator("#flash")).to_contain_text(
        "Approved revision 1 of “Summarise the incident reports of November”: 1 of 2 approvals."
    )
    waiting = page.locator(f'#approval-queue li.approval-item[data-work-item="{work.gated}"]')
    expect(waiting.locator('[data-field="approvals"]')).to_have_text("1 of 2 approvals")
    expect(waiting).to_contain_text("You approved revision 1")
    # the mission's row counts its WorkItems by state, re-rendered alone when they change
    row = page.locator(f'#missions-rows li.mission-row[data-mission="{work.mission}"]')
    expect(row.locator('[data-field="progress"]')).to_have_text("0 of 3 WorkItems finished")
    expect(row).to_contain_text("2 queued")
    granted = in_plain_thread(
        lambda: list(
            Event.objects.filter(
                group_id=world.group, type="approval.execution_granted"
            ).values_list("actor", flat=True)
        )
    )
    assert granted == ["user:olga"]

    expect(page.locator("#connection-status")).to_have_attribute("data-state", "live")
    page.evaluate("() => (window.__sameDocument = true)")
    in_plain_thread(wf.approve, work.petra, world.group, work.gated)
    expect(page.locator("#approval-queue li.approval-item")).to_have_count(
        0, timeout=LIVE_TIMEOUT_MS
    )

    in_plain_thread(wf.start, world, work.gated)
    expect(row).to_contain_text("1 active", timeout=LIVE_TIMEOUT_MS)
    expect(row).to_contain_text("1 queued")
    expect(row).to_have_attribute("data-refreshed-at", re.compile(".+"))
    assert page.evaluate("() => window.__sameDocument") is True
    snap(page, "work-group-page")


def test_the_work_item_page_follows_its_item_live(
    work: Work, live_asgi_server: LiveServer, page: Page
) -> None:
    """wire§4 work-items/{id}, R10.2-02, R16-09: the page shows the contract and the offers;
    a message and the start arrive without a reload, in the conversation and the state."""
    server, world = live_asgi_server, work.world
    log_in(page, server, "olga")
    page.goto(f"{server.url}/groups/{world.group}/work-items/{work.plain}/")
    body = page.locator("#work-item-body")
    expect(body.locator('[data-field="state"]')).to_have_text("queued")
    expect(body.locator('[data-field="offers"]')).to_contain_text("w2 · accepted")
    expect(page.locator("#connection-status")).to_have_attribute("data-state", "live")
    page.evaluate("() => (window.__sameDocument = true)")

    in_plain_thread(
        wf.submit,
        world.w2,
        world.group,
        "work.message",
        {"work_item": work.plain, "text": "Starting in a minute."},
    )
    conversation = page.locator('section[aria-label="Conversation"]')
    expect(conversation).to_contain_text("Starting in a minute.", timeout=LIVE_TIMEOUT_MS)
    in_plain_thread(wf.start, world, work.plain)
    expect(page.locator('#work-item-body [data-field="state"]')).to_have_text(
        "active", timeout=LIVE_TIMEOUT_MS
    )
    expect(page.locator('#work-item-body [data-field="holder"]')).to_have_text("w2")
    assert page.evaluate("() => window.__sameDocument") is True
    snap(page, "work-item-page")


def test_the_countdown_words_are_written_by_the_browser_script_alone(
    live_asgi_server: LiveServer, page: Page
) -> None:
    """The server renders a countdown's target, never the time left (which would go stale):
    ``countdown.js`` writes the words, in whole seconds rounded up, so "0 s left" never shows
    while time remains."""
    page.goto(f"{live_asgi_server.url}/login/")
    words = page.evaluate(
        """async () => {
            const { remainingText } = await import("/static/dashboard/countdown.js");
            return [200, 59_000, 61_000, 3_600_000].map(remainingText);
        }"""
    )
    assert words == ["1 s left", "59 s left", "1 min 1 s left", "1 h 0 min left"]


def test_the_lease_counts_down_and_follows_renewals_charges_and_reassignment_live(
    work: Work, live_asgi_server: LiveServer, page: Page
) -> None:
    """R11.3-03, R11.3-09, R11.5-01, R11.5-12, wire§7, R16-09: the lease's expiry ticks down in
    the browser with no event; a ``lease.renew`` submitted meanwhile brings the new expiry and
    renewal count without a reload, a ``work.usage`` the budgets; a short renewal runs out in
    the browser ("expired", while the lease is still active: only the authority ends it), and
    the sweep's ``work.reassign`` then takes the lease from its holder, live; the former
    owner's submission after that shows up as a late result kept for audit (R11.5-02)."""
    server, world, item = live_asgi_server, work.world, work.plain
    lease = in_plain_thread(wf.start, world, item, lease_ttl_s=30)
    log_in(page, server, "olga")
    page.goto(f"{server.url}/groups/{world.group}/work-items/{item}/")
    expect(page.locator("#connection-status")).to_have_attribute("data-state", "live")
    card = page.locator("#lease")
    expiry = card.locator('[data-field="expiry"]')
    expect(card.locator('[data-field="holder"]')).to_have_text("w2")  # the agent card's name
    expect(expiry).to_have_text(re.compile(r"^\d+ s left$"))
    before = expiry.text_content()
    expect(expiry).not_to_have_text(before or "", timeout=3_000)  # ticking, no event needed
    expect(card.locator('[data-field="renewals"]')).to_have_text("0")
    page.evaluate("() => (window.__sameDocument = true)")

    expires_at = in_plain_thread(wf.renew, world, item, lease, lease_ttl_s=3600)
    expect(expiry).to_have_attribute("data-countdown", expires_at, timeout=LIVE_TIMEOUT_MS)
    expect(card.locator('[data-field="renewals"]')).to_have_text("1")
    expect(expiry).to_have_text(re.compile(r"^(59 min \d+ s|1 h 0 min) left$"))

    in_plain_thread(wf.use, world, item, lease, tokens=500)
    tokens = page.locator(f'[data-budget="work_item:{item}"] [data-dimension="tokens"]')
    expect(tokens.locator('[data-field="used"]')).to_have_text("500", timeout=LIVE_TIMEOUT_MS)
    mission_tokens = page.locator(
        f'[data-budget="mission:{work.mission}"] [data-dimension="tokens"]'
    )
    expect(mission_tokens.locator('[data-field="used"]')).to_have_text("500")

    in_plain_thread(wf.renew, world, item, lease, lease_ttl_s=2)
    expect(card.locator('[data-field="renewals"]')).to_have_text("2", timeout=LIVE_TIMEOUT_MS)
    expect(expiry).to_have_text("expired", timeout=LIVE_TIMEOUT_MS)
    expect(expiry).to_have_attribute("data-passed", "true")
    expect(card.locator('[data-field="lease-status"]')).to_have_text("active")
    snap(page, "work-item-lease-expired")

    in_plain_thread(wf.reassign, world.group, item)
    expect(card.locator('[data-field="lease"]')).to_have_text(
        "No active execution lease.", timeout=LIVE_TIMEOUT_MS
    )
    closed = card.locator(f'[data-field="lease-history"] tr[data-lease="{lease}"]')
    expect(closed.locator('[data-field="status"]')).to_have_text("expired")
    expect(closed.locator('[data-field="closed-by"]')).to_have_text("expired without a renewal")
    expect(card.locator('[data-field="reassignments"]')).to_have_text("1")
    expect(page.locator('#work-item-body [data-field="state"]')).to_have_text("open")

    in_plain_thread(wf.submit_result, world, item, lease)  # the former owner, too late
    late = page.locator("#late-results")
    expect(late.locator(".late-result")).to_have_count(1, timeout=LIVE_TIMEOUT_MS)
    expect(late).to_contain_text("Kept for audit only: none of these completed this item.")
    expect(late.locator('[data-field="former-owner"]')).to_have_text("w2")
    expect(page.locator('#work-item-body [data-field="state"]')).to_have_text("open")
    assert page.evaluate("() => window.__sameDocument") is True
    snap(page, "work-item-lease-history")
