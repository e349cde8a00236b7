"""The actions people lacked, in a real browser against a real server (issue 36 §5, §6).

- gina, the group's ``admin`` and not staff, grants zoe a role on the members screen
  (wire.md §2 "admin (memberships)");
- cora, a mission owner and coordinator, creates a mission, adds a WorkItem from the JSON
  contract editor — first an invalid contract, whose problem is shown under the editor with
  the field it names and the typed text kept, then a valid one — and cancels it, asked first.

Every screen visited is shot under ``var/screenshots/`` and checked with axe-core and at
390 px (``check_screen``).
"""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import Page, expect

from missionweave.protocol.examples import example_contract
from tests.dashboard import workflows as wf
from tests.dashboard.workflows import verified_item
from tests.e2e.screens import check_screen
from tests.e2e.test_dashboard_browser import log_in, with_password
from tests.factories import World, build_world, grant, human
from tests.live_server import LiveServer

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def world(transactional_db: None) -> World:
    """Committed before the browser starts, so the server process sees it."""
    world = build_world()
    gina = with_password(human("gina"))
    grant(world.alice, world.group, gina, "admin")
    cora = with_password(human("cora"))
    grant(world.alice, world.group, cora, "mission_owner", "coordinator")
    with_password(world.olga)
    human("zoe")
    return world


def test_a_member_who_is_not_an_admin_reads_the_members_by_name(
    world: World, live_asgi_server: LiveServer, page: Page
) -> None:
    """Issue 36 §6: olga, a mission owner, reads who holds which roles, with no form, and is
    told whom to ask."""
    server = live_asgi_server
    log_in(page, server, "olga")
    page.goto(f"{server.url}/groups/{world.group}/members/")
    expect(page.locator('li[data-principal="user:cora"]')).to_contain_text("mission owner")
    expect(page.locator(".members__who-changes")).to_contain_text("ask gina")
    expect(page.get_by_role("button", name="Grant")).to_have_count(0)
    check_screen(page, "actions-10-members-read-only")


def test_a_group_admin_who_is_not_staff_grants_a_role(
    world: World, live_asgi_server: LiveServer, page: Page
) -> None:
    """wire§2, wire§4: gina's membership.grant, recorded with her as the actor."""
    server = live_asgi_server
    log_in(page, server, "gina")
    page.goto(f"{server.url}/groups/{world.group}/")
    page.get_by_role("link", name="Members", exact=True).click()
    expect(page.get_by_role("heading", name="Members of g-research")).to_be_visible()
    check_screen(page, "actions-00-members-as-group-admin")

    grant_form = page.locator(".members-grant")
    grant_form.get_by_label("Who").select_option("user")
    grant_form.get_by_label("Username or agent id").fill("zoe")
    grant_form.get_by_label("reviewer").check()
    grant_form.get_by_role("button", name="Grant").click()
    expect(page.locator("#flash")).to_contain_text("Granted reviewer to zoe.")
    expect(page.locator('li[data-principal="user:zoe"]')).to_contain_text("member since")
    expect(page.locator(".members-audit__list li").first).to_contain_text("gina granted zoe")
    check_screen(page, "actions-01-group-admin-granted")


def test_a_mission_owner_creates_a_mission_adds_work_from_a_contract_and_cancels_it(
    world: World, live_asgi_server: LiveServer, page: Page
) -> None:
    """mission.create, work.authorize (the protocol core checks the contract first, R10.1-01),
    work.cancel (R10.2-14), each as cora through the one write path."""
    server = live_asgi_server
    log_in(page, server, "cora")
    page.goto(f"{server.url}/groups/{world.group}/")
    page.get_by_role("link", name="New mission").first.click()
    expect(page.get_by_role("heading", name="New mission")).to_be_visible()
    check_screen(page, "actions-02-new-mission")

    page.get_by_label("Goal", exact=True).fill("Map the outage of 3 December")
    page.get_by_label("Model tokens").fill("-5")  # refused: kept, and said beside the field
    page.get_by_label("Money").fill("20")
    page.get_by_role("button", name="Create the mission").click()
    expect(page.locator('[data-field="tokens"] .field-errors')).to_be_visible()
    expect(page.get_by_label("Goal", exact=True)).to_have_value("Map the outage of 3 December")
    check_screen(page, "actions-03-new-mission-refused")
    page.get_by_label("Model tokens").fill("200000")
    page.get_by_role("button", name="Create the mission").click()
    expect(page.locator("#flash")).to_contain_text("Created the mission")
    expect(page.locator("h1")).to_contain_text("Map the outage of 3 December")
    check_screen(page, "actions-04-mission-created")

    page.get_by_role("link", name="Add a WorkItem").click()
    expect(page.get_by_role("heading", name="Add a WorkItem")).to_be_visible()
    check_screen(page, "actions-05-contract-editor")
    editor = page.get_by_label("Work Contract (JSON)")
    contract = json.loads(editor.input_value())
    contract["goal"] = "Write the timeline of the outage"
    contract["budgets"]["tokens"] = -1
    typed = json.dumps(contract, indent=2)
    editor.fill(typed)
    page.get_by_role("button", name="Check and add the WorkItem").click()
    problem = page.locator('#contract-problems li[data-path="$.budgets.tokens"]')
    expect(problem).to_contain_text("$.budgets.tokens: expected a number of at least 0")
    expect(page.get_by_label("Work Contract (JSON)")).to_have_value(typed)
    check_screen(page, "actions-06-contract-refused")

    contract["budgets"]["tokens"] = 5000
    page.get_by_label("Work Contract (JSON)").fill(json.dumps(contract, indent=2))
    page.get_by_label("Short id (optional)").fill("wi-timeline")
    page.get_by_role("button", name="Check and add the WorkItem").click()
    expect(page.locator("#flash")).to_contain_text("Added the WorkItem")
    expect(page.locator("h1")).to_contain_text("wi-timeline")
    check_screen(page, "actions-07-work-item-added")

    page.get_by_role("link", name="Cancel this WorkItem…").click()
    expect(page.get_by_role("heading", name="Cancel this WorkItem?")).to_be_visible()
    check_screen(page, "actions-08-cancel-asks-first")
    page.get_by_label("Why it is cancelled").fill("The timeline is in the incident report already")
    page.get_by_role("button", name="Yes, cancel this WorkItem").click()
    expect(page.locator("#flash")).to_contain_text("Cancelled this WorkItem")
    expect(page.locator('[data-field="state"]').first).to_have_text("cancelled")
    expect(page.locator("#work-item-body")).to_contain_text(
        "The timeline is in the incident report already"
    )
    check_screen(page, "actions-09-work-item-cancelled")


@pytest.fixture
def accepted(world: World) -> tuple[str, str]:
    """A mission whose one WorkItem olga accepted: ready for the final approval (committed)."""
    mission = wf.mission(world, goal="Summarise the incidents")
    return mission, verified_item(world, mission)


def test_at_the_final_approval_a_mission_owner_asks_for_changes_instead_of_approving(
    world: World, accepted: tuple[str, str], live_asgi_server: LiveServer, page: Page
) -> None:
    """Issue 36 §5 (R13.2-03 step 5, R10.2-19): an accepted result is not reopened; olga's
    note goes in one ``mission.request_changes``, the mission stays unapproved, and the final
    approval and the mission page show the request and offer no approval while it is open."""
    mission, _item = accepted
    server = live_asgi_server
    log_in(page, server, "olga")
    page.goto(f"{server.url}/groups/{world.group}/missions/{mission}/final-approval/")
    page.get_by_role("link", name="Ask for changes instead…").click()
    expect(page.get_by_role("heading", name="Ask for changes instead of approving")).to_be_visible()
    check_screen(page, "actions-11-ask-for-changes")
    page.get_by_role("checkbox").first.check()
    page.get_by_label("What must change").fill("Add the timeline of each incident")
    page.get_by_role("button", name="Ask for these changes").click()
    expect(page.locator("#flash")).to_contain_text("The mission is not approved.")
    # the item named as people know it, by its goal (the example contract's)
    goal = f"\u201c{example_contract()['goal']}\u201d"
    expect(page.locator("#flash")).to_contain_text(f"Changes asked of {goal}")
    asked = page.locator("#change-requests")
    expect(asked).to_contain_text("Changes asked by olga on")
    expect(asked).to_contain_text(
        "“Add the timeline of each incident” — waiting for the coordinator"
    )
    expect(page.locator("[data-field=refusal]")).to_contain_text(f"Changes were asked of {goal}")
    expect(page.get_by_role("button", name="Approve this mission")).to_have_count(0)
    check_screen(page, "actions-12-changes-asked")
    page.goto(f"{server.url}/groups/{world.group}/missions/{mission}/")
    expect(page.locator("#change-requests")).to_contain_text("Add the timeline of each incident")
    expect(page.get_by_role("link", name="Review and approve the mission")).to_have_count(0)
