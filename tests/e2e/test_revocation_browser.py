"""Revocation that bites, seen from two browsers (issue 13 §2, wire.md §4 and §7).

The admin (staff, on the members screen) and the member, mia (a person with the worker role,
on the group page, holding a WorkItem's lease and its capability token), each in a browser
of their own against the real server. A change of mia's roles reaches her open page live;
her revocation, within a second, strips the page of every action, ends its socket, revokes
her lease and makes her capability token worthless; the members screen's audit list keeps
both changes.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from tests.e2e.revocation_world import (
    RevocationWorld,
    build_revocation_world,
    call,
    capability_check,
    command,
    events,
    work_item,
)
from tests.e2e.screens import assert_accessible, snap, watch_csp
from tests.e2e.test_dashboard_browser import log_in, with_password
from tests.live_server import LiveServer

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

#: the new actions of a grant appear with the next live refresh
LIVE_TIMEOUT_MS = 5_000
#: issue 13 §2: "within a second the member's page drops the actions"
REVOKED_WITHIN_MS = 1_000

#: Installed in the member's browser before any page script: remembers every websocket the
#: page opens and when each closed, and when the page marked itself revoked, so the test
#: reads the browser's own clock instead of its polling interval.
WATCH_PAGE = """
(() => {
  const Native = window.WebSocket;
  window.__sockets = [];
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      // the group's event stream only: the header's bell keeps its own socket, which is the
      // person's, not the group's, and stays open when one group's membership ends
      if (!String(args[0]).includes("/ws/v1/stream")) return;
      const record = { socket: this, openedAt: Date.now(), closedAt: null };
      window.__sockets.push(record);
      this.addEventListener("close", () => (record.closedAt = Date.now()));
    }
  };
  document.addEventListener("DOMContentLoaded", () => {
    new MutationObserver(() => {
      if (document.body.dataset.membership === "revoked" && !window.__revokedAt) {
        window.__revokedAt = Date.now();
      }
    }).observe(document.body, { attributes: true, attributeFilter: ["data-membership"] });
  });
})();
"""


@pytest.fixture
def rw(transactional_db: None, live_asgi_server: LiveServer) -> RevocationWorld:
    """Committed before the browsers start (mia's commands go to the live server)."""
    rw = build_revocation_world(live_asgi_server)
    for persona in (rw.world.alice, rw.world.olga, rw.mia):
        with_password(persona)
    return rw


@pytest.fixture
def member_page(browser: Browser, request: pytest.FixtureRequest) -> Iterator[Page]:
    """A second browser context, with cookies of its own: the member's browser. Like ``page``,
    a failed test leaves what it showed, as ``failed-<test>-member.png``."""
    context: BrowserContext = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(10_000)
    context.add_init_script(WATCH_PAGE)
    watch_csp(context)
    tab = context.new_page()
    try:
        yield tab
    finally:
        report = getattr(request.node, "report_call", None)
        if report is not None and report.failed:
            snap(tab, f"failed-{request.node.name}-member")
        context.close()


def open_sockets(page: Page) -> int:
    return int(page.evaluate("() => window.__sockets.filter((s) => s.closedAt === null).length"))


def test_a_grant_shows_live_and_a_revocation_takes_everything_away_within_a_second(
    rw: RevocationWorld, live_asgi_server: LiveServer, page: Page, member_page: Page
) -> None:
    """Issue 13 §2 must-hold; wire§4 (membership changes), wire§7, R11.5-01, R11.3-06..09,
    R10.2-06: a worker sees the gated item without an approve form; the admin adds
    mission_owner and the form appears on her open page; the admin revokes her and, within a
    second of the response, her page is marked revoked, keeps no form, says why, and its
    stream got NOT_A_MEMBER and closed; her lease was revoked in the same command, her
    capability token is refused, her API token is NOT_A_MEMBER; the audit list shows the
    change of roles and the revocation."""
    server, world, mia = live_asgi_server, rw.world, rw.mia
    group, admin, member = world.group, page, member_page
    status = member.locator("#connection-status")
    approve_form = member.locator(f'#approval-queue [data-form-key="approve:{rw.gated}"]')

    # Before anything changes: her lease is active and its capability token valid.
    held = work_item(server, world.olga, group, rw.held)
    assert (held["state"], held["owner"], held["lease"]["status"]) == (
        "active",
        mia.principal,
        "active",
    )
    assert capability_check(server, world.olga, rw.capability_token)["valid"] is True

    # The member, a worker: the gated item waits, and she may not approve it.
    log_in(member, server, "mia")
    member.goto(f"{server.url}/groups/{group}/")
    expect(status).to_have_attribute("data-state", "live")
    waiting = member.locator(f'#approval-queue li.approval-item[data-work-item="{rw.gated}"]')
    expect(waiting).to_be_visible()
    expect(approve_form).to_have_count(0)
    mission_actions = member.locator(f"#mission-row-{rw.mission} .mission-actions")
    expect(mission_actions).to_have_count(0)
    snap(member, "revocation-01-member-before-grant")
    member.evaluate("() => (window.__sameDocument = true)")

    # The admin gives her mission_owner too, on the members screen.
    log_in(admin, server, "alice")
    admin.goto(f"{server.url}/groups/{group}/members/")
    row = admin.locator(f'li[data-principal="{mia.principal}"]')
    expect(row).to_contain_text("member since")
    row.get_by_label("mission owner").check()
    row.get_by_role("button", name="Change roles").click()
    expect(admin.locator("#flash")).to_contain_text(f"{mia.username} holds mission owner, worker.")
    held = admin.locator(f'li[data-principal="{mia.principal}"] .members__roles')
    expect(held.get_by_label("mission owner")).to_be_checked()

    # Without a reload, her page offers the approval she may now give.
    expect(approve_form).to_be_visible(timeout=LIVE_TIMEOUT_MS)
    expect(approve_form.get_by_role("button", name="Approve revision 1")).to_be_visible()
    expect(mission_actions).to_have_count(1, timeout=LIVE_TIMEOUT_MS)  # its row re-rendered
    assert member.evaluate("() => window.__sameDocument") is True
    expect(status).to_have_attribute("data-state", "live")
    assert open_sockets(member) == 1
    snap(member, "revocation-02-member-after-grant")

    # The admin revokes her. The clock starts when the revoke's response reaches the admin's
    # browser, on the browsers' wall clock (the request's own timing), not when ``click``
    # returns: that waits for the redirected members screen to load as well.
    # asked first (issue 34 §7): "Revoke mia…" opens the confirmation, its button revokes
    admin.get_by_role("button", name=f"Revoke {mia.username}…").click()
    expect(
        admin.get_by_role("heading", name=f"Revoke the membership of {mia.username}?")
    ).to_be_visible()
    revoke = admin.get_by_role("button", name=f"Yes, revoke {mia.username}")
    with admin.expect_response(lambda r: r.request.method == "POST") as response_info:
        revoke.click()
    response = response_info.value
    assert response.status in (200, 302, 303), response.status
    timing = response.request.timing
    asked_at_ms = timing["startTime"]
    answered_at_ms = asked_at_ms + timing["responseStart"]

    main = member.locator("main")
    expect(member.locator("body")).to_have_attribute(
        "data-membership", "revoked", timeout=REVOKED_WITHIN_MS
    )
    expect(member.locator('[data-field="revoked-notice"]')).to_be_visible(timeout=REVOKED_WITHIN_MS)
    expect(status).to_have_attribute("data-state", "revoked", timeout=REVOKED_WITHIN_MS)
    expect(main.locator('form[method="post"]')).to_have_count(0, timeout=REVOKED_WITHIN_MS)
    expect(mission_actions).to_have_count(0, timeout=REVOKED_WITHIN_MS)
    member.wait_for_function(
        "() => window.__sockets.every((s) => s.closedAt !== null)", timeout=REVOKED_WITHIN_MS
    )
    checked_after_ms = time.time() * 1000 - answered_at_ms
    revoked_at_ms = member.evaluate("() => window.__revokedAt")
    closed_at_ms = member.evaluate("() => Math.max(...window.__sockets.map((s) => s.closedAt))")
    print(  # the figures the issue asks for, in the test's output (pytest -rP)
        f"revoke: asked, answered after {answered_at_ms - asked_at_ms:.0f} ms; the member's "
        f"page dropped its actions {revoked_at_ms - answered_at_ms:+.0f} ms from the answer "
        f"({revoked_at_ms - asked_at_ms:.0f} ms after the click), its socket closed "
        f"{closed_at_ms - answered_at_ms:+.0f} ms from the answer; every check passed "
        f"{checked_after_ms:.0f} ms after the answer"
    )
    assert revoked_at_ms - answered_at_ms < REVOKED_WITHIN_MS
    assert closed_at_ms - answered_at_ms < REVOKED_WITHIN_MS
    assert member.evaluate("() => window.__sameDocument") is True
    snap(member, "revocation-03-member-after-revoke")
    assert_accessible(member)

    # The stream stays ended: no reconnect is attempted after NOT_A_MEMBER.
    member.wait_for_timeout(1_500)
    assert open_sockets(member) == 0
    assert member.evaluate("() => window.__sockets.length") == 1
    expect(status).to_have_attribute("data-state", "revoked")

    # Outside the browser, over HTTP: the lease, the token, her API token.
    log = events(server, world.olga, group)
    revoked = next(e for e in log if e["type"] == "membership.revoked")
    lease_revoked = [
        e for e in log if e["type"] == "lease.revoked" and e["payload"].get("work_item") == rw.held
    ]
    assert len(lease_revoked) == 1, lease_revoked
    assert lease_revoked[0]["payload"]["lease_id"] == rw.lease
    assert lease_revoked[0]["command_id"] == revoked["command_id"]  # one transaction
    held = work_item(server, world.olga, group, rw.held)
    assert (held["lease"]["status"], held["lease"]["closed_by"]) == ("revoked", "lease.revoked")
    assert held["owner"] is None
    assert mia.principal in held["former_owners"]

    refused = capability_check(server, world.olga, rw.capability_token)
    assert (refused["valid"], refused["code"]) == (False, "STALE_LEASE"), refused

    read = call(server, "GET", f"/groups/{group}/head", mia.token)
    assert (read.status, read.body["error"]["code"]) == (403, "NOT_A_MEMBER"), read
    message = command(server, mia, group, "work.message", {"work_item": rw.gated, "text": "hi"})
    assert (message.status, message.body["error"]["code"]) == (403, "NOT_A_MEMBER"), message

    # A fresh load of the group page is refused to her: a page never reveals a group.
    assert member.goto(f"{server.url}/groups/{group}/").status == 404  # type: ignore[union-attr]

    # The audit list, newest first: the revocation, then the change of roles.
    admin.reload()
    audit = admin.locator(".members-audit__list li")
    expect(audit.nth(0)).to_contain_text(f"{world.alice.username} revoked {mia.username}")
    expect(audit.nth(0)).to_have_attribute("data-type", "membership.revoked")
    expect(audit.nth(1)).to_contain_text(
        f"{world.alice.username} changed {mia.username}: mission owner, worker"
    )
    expect(audit.nth(1)).to_have_attribute("data-type", "membership.changed")
    expect(admin.locator(f'li[data-principal="{mia.principal}"]')).to_have_count(0)
    admin.locator(".members-audit").scroll_into_view_if_needed()
    snap(admin, "revocation-04-admin-audit")


def test_a_role_taken_away_takes_its_action_off_the_open_page_live(
    rw: RevocationWorld, live_asgi_server: LiveServer, page: Page, member_page: Page
) -> None:
    """wire§4 (membership.changed), R10.2-06: the reverse of a grant, short of a revocation:
    olga, a mission owner, sees the approve form and the mission's actions; the admin leaves
    her only ``observer`` and both leave her open page without a reload, while the page
    stays live and is not marked revoked."""
    server, world = live_asgi_server, rw.world
    group, admin, member = world.group, page, member_page
    approve_form = member.locator(f'#approval-queue [data-form-key="approve:{rw.gated}"]')

    log_in(member, server, "olga")
    member.goto(f"{server.url}/groups/{group}/")
    expect(member.locator("#connection-status")).to_have_attribute("data-state", "live")
    expect(approve_form).to_be_visible()
    mission_actions = member.locator(f"#mission-row-{rw.mission} .mission-actions")
    expect(mission_actions).to_have_count(1)
    member.evaluate("() => (window.__sameDocument = true)")

    log_in(admin, server, "alice")
    admin.goto(f"{server.url}/groups/{group}/members/")
    row = admin.locator(f'li[data-principal="{world.olga.principal}"]')
    row.get_by_label("mission owner").uncheck()
    row.get_by_label("observer").check()
    row.get_by_role("button", name="Change roles").click()
    expect(admin.locator("#flash")).to_contain_text(f"{world.olga.username} holds observer.")

    expect(approve_form).to_have_count(0, timeout=LIVE_TIMEOUT_MS)
    expect(mission_actions).to_have_count(0, timeout=LIVE_TIMEOUT_MS)  # R10.2-16, R10.2-18
    expect(member.locator(f'li.approval-item[data-work-item="{rw.gated}"]')).to_be_visible()
    expect(member.locator("#connection-status")).to_have_attribute("data-state", "live")
    assert member.evaluate("() => document.body.dataset.membership ?? null") is None
    assert member.evaluate("() => window.__sameDocument") is True
    snap(member, "revocation-05-role-taken-away")
