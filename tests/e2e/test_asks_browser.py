"""Named approvers in a real browser against a real server (issue 36 §4; R10.2-06): the
approval page names who may still approve; Olivia asks Omar for approval with a note; Omar's
inbox lists it first ("Asked of you"), and its link opens the approval page, which says who
asked whom. Every screen visited is shot under ``var/screenshots/``, checked with axe-core
and at 400 px.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Browser, Page, expect

from tests.dashboard import workflows as wf
from tests.e2e.screens import check_screen
from tests.e2e.test_approval_browser import signed_in
from tests.e2e.test_dashboard_browser import log_in, with_password
from tests.factories import HumanPersona, World, build_world, grant, human, now_text
from tests.live_server import LiveServer

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@dataclass
class Owners:
    world: World
    olivia: HumanPersona
    omar: HumanPersona
    item: str


def named(username: str, first: str, last: str) -> HumanPersona:
    persona = with_password(human(username))
    get_user_model().objects.filter(username=username).update(first_name=first, last_name=last)
    return persona


@pytest.fixture
def owners(transactional_db: None) -> Owners:
    """Committed before the browser starts, so the server process sees it: an item the
    coordinator agent authorised, queued, needing two mission owners' approvals."""
    world = build_world()
    olivia = named("olivia", "Olivia", "Ortega")
    omar = named("omar", "Omar", "Ortiz")
    for persona in (olivia, omar):
        grant(world.alice, world.group, persona, "mission_owner")
    mission = wf.mission(world)
    item = wf.queued(world, mission, contract=wf.gated_contract(2, deadline=now_text(86_400)))
    return Owners(world, olivia, omar, item)


def test_olivia_asks_omar_for_approval_and_it_comes_first_in_his_inbox(
    owners: Owners, live_asgi_server: LiveServer, page: Page, browser: Browser
) -> None:
    """R10.2-06: the approval page names who may still approve (olga, Olivia, Omar: the
    group's mission owners, the coordinator agent who authorised it not among them); Olivia
    asks Omar with a note; the page says "Asked of Omar Ortiz by Olivia Ortega"; Omar's inbox
    shows it first, with the note, and its link opens the approval page."""
    server, world, item = live_asgi_server, owners.world, owners.item
    url = f"{server.url}/groups/{world.group}/work-items/{item}/approval/"
    log_in(page, server, "olivia")
    page.goto(url)
    candidates = page.locator('[data-field="candidates"]')
    expect(candidates).to_contain_text("May still approve:")
    for name in ("olga", "Olivia Ortega (you)", "Omar Ortiz"):
        expect(candidates).to_contain_text(name)
    expect(page.locator('[data-field="quorum"]')).to_contain_text("0 of 2")
    check_screen(page, "asks-01-approval-names-approvers")

    form = page.locator("form.ask-form")
    expect(form.get_by_role("group", name="Ask for approval from…")).to_be_visible()
    form.get_by_label("Omar Ortiz").check()
    form.get_by_label("A short note (optional)").fill("The board meets at noon.")
    form.get_by_role("button", name="Ask").click()
    expect(page.locator("#flash")).to_contain_text(
        "Asked Omar Ortiz for approval of “Summarise the incident reports of November”."
    )
    asks = page.locator('[data-field="asks"]')
    expect(asks).to_contain_text("Asked of Omar Ortiz by Olivia Ortega")
    expect(asks).to_contain_text("The board meets at noon.")
    check_screen(page, "asks-02-asked-of-omar")

    omar = signed_in(browser, server, "omar")
    try:
        sections = omar.locator("section.inbox-section")
        expect(sections.first).to_have_attribute("data-section", "asked")
        entry = omar.locator(f"#inbox-asked li.inbox-entry[data-work-item='{item}']")
        expect(entry).to_contain_text("asks your approval")
        expect(entry).to_contain_text("Asked by Olivia Ortega")
        expect(entry).to_contain_text("The board meets at noon.")
        check_screen(omar, "asks-03-omar-inbox-first")

        entry.get_by_role("link").first.click()
        expect(omar).to_have_url(url)
        expect(omar.locator('[data-field="asks"]')).to_contain_text(
            "Asked of Omar Ortiz by Olivia Ortega"
        )
        omar.get_by_label("Comment on approving (optional)").fill("Asked and read: yes.")
        omar.get_by_role("button", name="Approve revision 1").click()
        expect(omar.locator('[data-field="quorum"]')).to_contain_text("1 of 2")
        expect(omar.locator('[data-field="candidates"]')).not_to_contain_text("Omar Ortiz")
        omar.goto(f"{server.url}/")
        expect(omar.locator(f"#inbox-asked li[data-work-item='{item}']")).to_have_count(0)
    finally:
        omar.context.close()
