"""People-facing words and the small things a person hits, in a real browser against the real
server (issue 34 §5–§7): the inbox keeps the focus, the scroll position and an open
disclosure across 20 live updates and says what changed politely; times are in the viewer's
own zone with UTC on hover; long text shows its limit; destructive actions ask first, with
scripts off too; every changed screen is shot under ``var/screenshots/``, checked with
axe-core, at 390 px and for CSP violations.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.dashboard import workflows as wf
from tests.e2e.screens import check_screen, snap, watch_csp
from tests.e2e.test_dashboard_browser import PASSWORD, log_in, with_password
from tests.factories import HumanPersona, World, build_world, grant, human, now_text
from tests.live_server import LiveServer, in_plain_thread

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

#: "a live update reaches the open page within a second or two"
LIVE_MS = 5_000
UPDATES = 20


@dataclass
class Waiting:
    world: World
    petra: HumanPersona  # a second mission owner
    quinn: HumanPersona  # a third: her grants complete some quorums
    items: list[str]  # queued, each needing two approvals, oldest first
    refused: str  # refused by petra: "needs a corrected contract" in olga's inbox


@pytest.fixture
def waiting(transactional_db: None) -> Waiting:
    """Committed before the browser starts, so the server process sees it."""
    world = build_world()
    with_password(world.olga)
    with_password(world.alice)
    petra, quinn = human("petra"), human("quinn")
    for owner in (petra, quinn):
        grant(world.alice, world.group, owner, "mission_owner")
    mission = wf.mission(world)
    contract = wf.gated_contract(2, deadline=now_text(86_400))
    items = [wf.queued(world, mission, contract=contract) for _ in range(UPDATES)]
    refused = wf.queued(world, mission, contract=contract)
    wf.submit(
        petra,
        world.group,
        "approval.refuse_execution",
        {"work_item": refused, "contract_revision": 1, "comment": "Scope it to one table."},
    )
    return Waiting(world, petra, quinn, items, refused)


#: true once the inbox's sections were refreshed after the time ``before`` names
REFRESHED_SINCE = (
    "before => (document.getElementById('inbox-sections').dataset.refreshedAt || '') !== before"
)


def _refreshed(page: Page) -> str:
    return str(
        page.evaluate("() => document.getElementById('inbox-sections').dataset.refreshedAt || ''")
    )


def test_the_inbox_keeps_focus_scroll_and_an_open_disclosure_across_20_live_updates(
    waiting: Waiting, live_asgi_server: LiveServer, page: Page
) -> None:
    """Issue 34 §5: 20 commands change olga's open inbox (15 first approvals, then 5
    second ones that take items out of it); after each live update the link she is on is
    the same element with the focus, the page has not scrolled, the technical details she
    opened are still open, and the change of a count is announced politely."""
    server, world = live_asgi_server, waiting.world
    page.set_viewport_size({"width": 1280, "height": 700})
    log_in(page, server, "olga")
    expect(page.locator("#connection-status")).to_have_attribute("data-state", "live")
    approvals = page.locator("#inbox-approvals")
    expect(approvals.locator('[data-field="count"]')).to_have_text(str(UPDATES))

    blocked = page.locator(f"#inbox-blocked li[data-work-item='{waiting.refused}']")
    expect(blocked.locator('[data-field="needs-contract"]')).to_have_text(
        "needs a corrected contract"
    )
    expect(blocked).to_contain_text("Execution refused by petra")
    blocked.locator("details.technical-details summary").click()
    expect(blocked.locator("details.technical-details")).to_have_attribute("open", "")

    first = approvals.locator(f"li[data-work-item='{waiting.items[0]}'] a.inbox-entry__title")
    first.focus()
    page.evaluate("() => { window.__focused = document.activeElement; window.scrollTo(0, 180); }")
    scroll = page.evaluate("() => window.scrollY")
    assert scroll > 0
    page.evaluate("() => (window.__sameDocument = true)")

    owners = [waiting.petra] * 15 + [waiting.quinn] * 5
    targets = waiting.items[:15] + waiting.items[10:15]
    for number, (owner, item) in enumerate(zip(owners, targets, strict=True), start=1):
        before = _refreshed(page)
        in_plain_thread(wf.approve, owner, world.group, item)
        page.wait_for_function(REFRESHED_SINCE, arg=before, timeout=LIVE_MS)
        state = page.evaluate(
            """() => ({
              same: document.activeElement === window.__focused,
              connected: window.__focused.isConnected,
              scroll: window.scrollY,
              open: document.querySelector("#inbox-blocked details.technical-details").open,
            })"""
        )
        assert state == {"same": True, "connected": True, "scroll": scroll, "open": True}, (
            number,
            state,
        )

    expect(approvals.locator('[data-field="count"]')).to_have_text(str(UPDATES - 5))
    expect(approvals.locator(f"li[data-work-item='{waiting.items[0]}']")).to_contain_text(
        "1 of 2 approvals"
    )
    expect(page.locator("#inbox-announcer")).to_have_text(
        re.compile(r"^Inbox updated\. Execution approvals: 15 \(was 16\)\.$")
    )
    assert page.evaluate("() => window.__sameDocument") is True
    check_screen(page, "plain-01-inbox-after-20-updates")


def one_counter_per_limited_field(page: Page) -> None:
    """Every limited field of the page is counted, once: its maxlength lifted (kept as
    data-limit), one counter right after it, named by its aria-describedby."""
    fields = page.evaluate(
        """() => [...document.querySelectorAll("textarea[maxlength], textarea[data-limit]")]
          .map((field) => ({
            id: field.id,
            maxlength: field.hasAttribute("maxlength"),
            counters: document.querySelectorAll(`[id="${field.id}-counter"]`).length,
            next: field.nextElementSibling?.id ?? null,
            described: (field.getAttribute("aria-describedby") || "").split(" "),
          }))"""
    )
    assert fields
    for field in fields:
        assert field["maxlength"] is False, field
        assert field["counters"] == 1, field
        assert field["next"] == f"{field['id']}-counter", field
        assert field["next"] in field["described"], field
    assert page.locator(".text-limit").count() == len(fields)


#: morph.js brings a section holding a localised <time> to a fresh copy whose time is
#: another moment, as a live update does; answers the time's words once local-time.js is done
MORPH_A_TIME = """async () => {
  const src = [...document.scripts].map((s) => s.src).find((s) => s.includes("/dashboard/"));
  const { morph } = await import(new URL("morph.js", src));
  const section = (moment, words) => {
    const element = document.createElement("section");
    element.id = "morph-a-time";
    element.innerHTML = `<p>Last seen <time datetime="${moment}" title="${words}"
      data-local-time="datetime">${words}</time></p>`;
    return element;
  };
  const current = section("2026-01-01T00:00:00Z", "2026-01-01 00:00 UTC");
  document.body.append(current);
  const time = current.querySelector("time");
  const settled = (moment) => new Promise((resolve) => {
    const until = Date.now() + 3000; // then the caller's assertions say what is there
    const check = () =>
      time.dataset.localized === moment || Date.now() > until ? resolve() : setTimeout(check, 20);
    check();
  });
  await settled("2026-01-01T00:00:00Z");
  morph(current, section("2026-06-01T12:00:00Z", "2026-06-01 12:00 UTC"));
  await settled("2026-06-01T12:00:00Z");
  return { text: time.textContent, localized: time.dataset.localized };
}"""


def test_times_are_the_viewers_own_with_utc_on_hover_and_long_text_shows_its_limit(
    waiting: Waiting, live_asgi_server: LiveServer, browser: Browser
) -> None:
    """Issue 34 §6: a viewer in Tokyo reads the work item's times in Tokyo time, the UTC
    time on hover; the approval comment counts its characters against its limit, and a
    longer paste is kept whole and held back rather than cut at the limit."""
    server, world = live_asgi_server, waiting.world
    context = browser.new_context(
        viewport={"width": 1280, "height": 900}, timezone_id="Asia/Tokyo", locale="en-GB"
    )
    context.set_default_timeout(10_000)
    watch_csp(context)
    page = context.new_page()
    try:
        log_in(page, server, "olga")
        page.goto(f"{server.url}/groups/{world.group}/work-items/{waiting.items[0]}/")
        deadline = page.locator("#work-item-body time[data-local-time]").first
        expect(deadline).to_have_attribute("data-localized", re.compile(r".+Z$"))
        utc = deadline.get_attribute("title") or ""
        assert utc.endswith(" UTC")
        shown = deadline.text_content() or ""
        assert "UTC" not in shown
        assert shown != utc
        # a live update that morphs a <time> in place to another moment (an agent card's
        # last progress) used to leave the server's UTC words in it
        moved = page.evaluate(MORPH_A_TIME)
        assert "UTC" not in moved["text"], moved
        assert moved["localized"] == "2026-06-01T12:00:00Z"
        comment = page.get_by_label(f"Comment on approving {waiting.items[0]}")
        counter = page.locator(f"#{comment.get_attribute('id')}-counter")
        expect(comment).to_have_attribute("aria-describedby", re.compile(r"-counter$"))
        comment.fill("A short note.")
        expect(counter).to_be_hidden()  # a short note is not told its limit
        comment.fill("x" * 9_500)
        expect(counter).to_have_text("9,500 of 10,000 characters")
        expect(counter).to_be_visible()
        expect(counter).to_have_class(re.compile("text-limit--near"))
        check_screen(page, "plain-02-work-item-local-time-and-limit")

        # a paste past the limit is kept whole (maxlength used to cut it without a word),
        # the counter says by how much, and the form is not sent until it is shortened
        comment.fill("y" * 10_250)
        assert len(comment.input_value()) == 10_250
        expect(counter).to_have_text(
            "10,250 characters; at most 10,000. Shorten it by 250 to send it."
        )
        expect(counter).to_have_class(re.compile("text-limit--over"))
        expect(comment).to_have_attribute("aria-invalid", "true")
        head = in_plain_thread(wf.head, world.group)
        comment.evaluate("field => field.form.requestSubmit()")
        page.wait_for_timeout(500)
        assert in_plain_thread(wf.head, world.group) == head  # nothing was sent
        assert len(comment.input_value()) == 10_250
        expect(comment).to_be_focused()
        snap(page, "plain-02b-work-item-comment-over-its-limit")
        comment.fill("z" * 10_000)
        expect(counter).to_have_text("10,000 of 10,000 characters")
        expect(comment).not_to_have_attribute("aria-invalid", "true")
        one_counter_per_limited_field(page)

        page.goto(f"{server.url}/groups/{world.group}/work-items/{waiting.refused}/")
        refusal = page.locator('[data-field="execution-refused"]')
        expect(refusal).to_contain_text("Execution refused by petra")
        expect(refusal).to_contain_text("waits for a corrected contract")
        expect(page.locator('[data-field="start-countdown"]')).to_have_count(0)  # clock stopped
        check_screen(page, "plain-03-work-item-refused")
    finally:
        context.close()


def test_a_decision_field_counts_like_every_other_and_keeps_one_counter_across_live_updates(
    waiting: Waiting, live_asgi_server: LiveServer, page: Page
) -> None:
    """Issue 34 §6: the approval screen's comment (``data-limit``, no ``maxlength``) has the
    same counter, words and class as any other long field; after petra's approval swaps the
    screen's body in, the typed text and its one counter are still there; over the limit the
    form is held, the field focused and ``mw:over-limit`` dispatched on it."""
    server, world = live_asgi_server, waiting.world
    item = waiting.items[1]
    log_in(page, server, "olga")
    page.goto(f"{server.url}/groups/{world.group}/work-items/{item}/approval/")
    expect(page.locator("#connection-status")).to_have_attribute("data-state", "live")
    comment = page.get_by_label("Comment on approving (optional)")
    counter = page.locator("#approve-comment-counter")
    note = page.locator("#approve-limit")  # the page's own "At most 10,000 characters."
    expect(counter).to_be_hidden()
    expect(counter).to_have_text("0 of 10,000 characters")
    expect(note).to_be_visible()
    comment.fill("x" * 2_345)
    expect(counter).to_be_visible()
    expect(counter).to_have_text("2,345 of 10,000 characters")
    expect(counter).to_have_class("text-limit")
    expect(note).to_be_hidden()  # the limit is said once

    before = page.evaluate(
        "() => document.getElementById('approval-body').dataset.refreshedAt || ''"
    )
    in_plain_thread(wf.approve, waiting.petra, world.group, item)
    page.wait_for_function(
        "before => (document.getElementById('approval-body').dataset.refreshedAt || '') !== before",
        arg=before,
        timeout=LIVE_MS,
    )
    assert comment.input_value() == "x" * 2_345
    one_counter_per_limited_field(page)
    expect(counter).to_have_text("2,345 of 10,000 characters")
    expect(comment).to_have_attribute("aria-describedby", "approve-limit approve-comment-counter")
    expect(note).to_be_hidden()

    page.evaluate(
        """() => document.addEventListener("mw:over-limit",
             (event) => (window.__overLimit = event.target.id))"""
    )
    comment.fill("y" * 10_250)
    expect(counter).to_have_text("10,250 characters; at most 10,000. Shorten it by 250 to send it.")
    expect(counter).to_have_class(re.compile("text-limit--over"))
    head = in_plain_thread(wf.head, world.group)
    page.get_by_role("button", name="Approve revision 1").click()
    expect(comment).to_be_focused()
    assert page.evaluate("() => window.__overLimit") == "approve-comment"
    assert in_plain_thread(wf.head, world.group) == head  # nothing was sent
    assert len(comment.input_value()) == 10_250
    check_screen(page, "plain-12-approval-comment-over-its-limit")


def test_revoking_a_member_and_a_token_asks_first_with_scripts_off(
    waiting: Waiting, live_asgi_server: LiveServer, browser: Browser
) -> None:
    """Issue 34 §7: without scripts, "Revoke…" opens a page that asks; only its button
    revokes; creating a token then reloading the page mints no second one."""
    server, world = live_asgi_server, waiting.world
    context = browser.new_context(
        viewport={"width": 1280, "height": 900}, java_script_enabled=False
    )
    context.set_default_timeout(10_000)
    page = context.new_page()
    try:
        page.goto(f"{server.url}/login/")
        page.get_by_label("Username").fill("alice")
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Log in").click()
        page.goto(f"{server.url}/groups/{world.group}/members/")
        page.get_by_role("button", name="Revoke quinn…").click()
        expect(page.get_by_role("heading", name="Revoke the membership of quinn?")).to_be_visible()
        snap(page, "plain-04-confirm-revoke-member-no-scripts")
        page.get_by_role("link", name="No, keep them").click()
        expect(page.locator('li[data-principal="user:quinn"]')).to_have_count(1)
        page.get_by_role("button", name="Revoke quinn…").click()
        page.get_by_role("button", name="Yes, revoke quinn").click()
        expect(page.locator("#flash")).to_contain_text("Revoked the membership of quinn")
        expect(page.locator('li[data-principal="user:quinn"]')).to_have_count(0)

        page.goto(f"{server.url}/account/")
        page.get_by_label("Label", exact=True).fill("no-scripts laptop")
        page.get_by_role("button", name="Create token").click()
        expect(page.get_by_role("heading", name="Your new API token")).to_be_visible()
        page.reload()
        expect(page.get_by_role("heading", name="Your new API token")).to_have_count(0)
        rows = page.locator("#tokens tr", has_text="no-scripts laptop")
        expect(rows).to_have_count(1)
        rows.get_by_role("link", name="Revoke token no-scripts laptop…").click()
        snap(page, "plain-05-confirm-revoke-token-no-scripts")
        page.get_by_role("button", name="Yes, revoke it").click()
        expect(page.locator("#tokens tr", has_text="no-scripts laptop")).to_have_count(0)
    finally:
        context.close()


def test_the_changed_screens_read_plainly_and_pass_their_checks(
    waiting: Waiting, live_asgi_server: LiveServer, page: Page
) -> None:
    """Every screen this part changed, shot and checked: the group page (names, the log's
    technical details), the lists, the members screen, the group list's create form, the
    account."""
    server, world = live_asgi_server, waiting.world
    log_in(page, server, "alice")
    page.goto(f"{server.url}/groups/")
    expect(page.get_by_role("heading", name="Create a group")).to_be_visible()
    check_screen(page, "plain-06-group-list-create-form")
    page.goto(f"{server.url}/groups/{world.group}/members/")
    check_screen(page, "plain-07-members")
    page.goto(f"{server.url}/account/")
    expect(page.locator(".topbar__name")).to_have_text("alice")
    check_screen(page, "plain-08-account")

    page.context.clear_cookies()
    log_in(page, server, "olga")
    page.goto(f"{server.url}/groups/{world.group}/")
    expect(page.locator("#attention-title")).to_contain_text("Needs attention now")
    expect(page.locator(".attention-row__meta").filter(has_text="agent:")).to_have_count(0)
    check_screen(page, "plain-09-group")
    page.goto(f"{server.url}/groups/{world.group}/timeline/")
    expect(page.locator(".tl-line__words").filter(has_text="agent:")).to_have_count(0)
    page.goto(f"{server.url}/groups/{world.group}/work-items/")
    expect(page.locator("li.item-row").first).to_contain_text("owner w2")
    check_screen(page, "plain-10-work-items")
    page.goto(f"{server.url}/groups/{world.group}/missions/")
    row = page.locator("li.mission-row").first
    row.locator("details.mission-actions > summary").click()
    row.get_by_text("Cancel this mission…").click()
    expect(row.get_by_role("button", name="Yes, cancel the mission")).to_be_visible()
    expect(row).to_contain_text("cannot be undone")
    check_screen(page, "plain-11-missions-cancel-asks-first")
