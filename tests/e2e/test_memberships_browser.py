"""The memberships screen in a real browser against a real server (issue 13 §1): the staff
admin grants zoe a role from the screen, sees her in the list and the audit, then revokes
her. Every screen visited is shot under ``var/screenshots/``, checked with axe-core and at
400 px.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.screens import check_screen
from tests.e2e.test_dashboard_browser import log_in, with_password
from tests.factories import World, build_world, human
from tests.live_server import LiveServer

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def world(transactional_db: None) -> World:
    """Committed before the browser starts, so the server process sees it."""
    world = build_world()
    with_password(world.alice)
    human("zoe")
    return world


def test_staff_grant_then_revoke_from_the_members_screen(
    world: World, live_asgi_server: LiveServer, page: Page
) -> None:
    """wire§4: membership.grant then membership.revoke as the staff person, each shown in
    the members list and, newest first, in the audit list. A mistyped name comes back with
    what was typed and the reason beside it (NOT_FOUND)."""
    server = live_asgi_server
    log_in(page, server, "alice")
    page.goto(f"{server.url}/groups/")
    check_screen(page, "members-00-group-list-staff")
    page.get_by_role("link", name="Members of g-research").click()
    expect(page.get_by_role("heading", name="Members of g-research")).to_be_visible()
    check_screen(page, "members-01-screen")

    grant = page.locator(".members-grant")
    grant.get_by_label("Who").select_option("user")
    name = grant.get_by_label("Username or agent id")
    name.fill("zeo")  # a slip: nobody has that username
    grant.get_by_label("observer").check()
    grant.get_by_role("button", name="Grant").click()
    expect(name).to_have_value("zeo")
    expect(name).to_have_attribute("aria-invalid", "true")
    expect(name).to_be_focused()
    expect(grant.locator('[data-field="grant-name-problem"]')).to_contain_text(
        "There is no person with the username “zeo”."
    )
    expect(grant.get_by_label("observer")).to_be_checked()
    check_screen(page, "members-01b-a-name-nobody-has")
    name.fill("zoe")
    grant.get_by_role("button", name="Grant").click()
    expect(page.locator("#flash")).to_contain_text("Granted observer to zoe.")
    expect(page.locator('li[data-principal="user:zoe"]')).to_contain_text("person · member since")
    expect(page.locator(".members-audit__list li").first).to_contain_text("alice granted zoe")
    check_screen(page, "members-02-granted")

    # asked first, on a page of its own (issue 34 §7)
    page.get_by_role("button", name="Revoke zoe…").click()
    expect(page.get_by_role("heading", name="Revoke the membership of zoe?")).to_be_visible()
    check_screen(page, "members-03-confirm-revoke")
    page.get_by_role("button", name="Yes, revoke zoe").click()
    expect(page.locator("#flash")).to_contain_text("Revoked the membership of zoe")
    expect(page.locator('li[data-principal="user:zoe"]')).to_have_count(0)
    expect(page.locator(".members-audit__list li").first).to_contain_text("alice revoked zoe")
    check_screen(page, "members-04-revoked")
