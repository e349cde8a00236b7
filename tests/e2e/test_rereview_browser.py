"""Re-review in Chromium against the real server (issue 37 §6): the review page of a
resubmitted WorkItem shows "What changed since the last submission" — who sent the previous
one back, when and why, and each output's change with its diff collapsed until opened —
readable (axe-core), at 390 px without sideways scroll and under the page's CSP; a first
submission shows no such card. Screens are shot under ``var/screenshots/rereview-*``.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

from tests.dashboard import resubmissions as story
from tests.dashboard import workflows as wf
from tests.e2e.screens import SCREENSHOTS, check_screen
from tests.e2e.test_dashboard_browser import log_in, with_password
from tests.factories import World, build_world
from tests.live_server import LiveServer, in_plain_thread

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


#: the review body was swapped in by a live refresh since ``before`` ("" : ever)
REFRESHED = """(before) => {
  const at = document.getElementById("review-body")?.dataset.refreshedAt;
  return at !== undefined && at !== before;
}"""
#: renew the person's reservation as the page does: a ``review.reserved`` on the item
RENEW = """async () => {
  const token = document.querySelector("input[name=csrfmiddlewaretoken]").value;
  const url = JSON.parse(document.getElementById("review-data").textContent).reserve_url;
  await fetch(url, {method: "POST", headers: {"X-CSRFToken": token}});
}"""


@dataclass
class Rereview:
    world: World
    resubmitted: str
    first: str


def _build() -> Rereview:
    """Olga sends the first result back (R10.2-13), the coordinator offers it again and w2
    submits changed outputs; a second item is submitted once."""
    world = build_world()
    with_password(world.olga)
    user = get_user_model().objects.get(username=world.olga.username)
    user.first_name, user.last_name = "Olga", "Ortiz"
    user.save(update_fields=["first_name", "last_name"])
    _mission, item = story.first_submission(world)
    evidence = story.send_back_evidence(world.olga.principal)
    wf.submit(world.olga, world.group, "work.fail", {"work_item": item, "evidence": evidence})
    story.resubmit(world, item)
    _other_mission, first = story.first_submission(world)
    return Rereview(world, item, first)


@pytest.fixture
def rereview(transactional_db: None) -> Rereview:
    """Committed before the browser starts, so the server process sees it."""
    return in_plain_thread(_build)


def test_the_review_of_a_resubmission_shows_what_changed_and_the_previous_decision(
    rereview: Rereview, live_asgi_server: LiveServer, page: Page
) -> None:
    server = live_asgi_server
    group = rereview.world.group
    log_in(page, server, "olga")
    page.goto(f"{server.url}/groups/{group}/work-items/{rereview.resubmitted}/review/")
    card = page.locator("#review-changes")
    expect(
        card.get_by_role("heading", name="What changed since the last submission")
    ).to_be_visible()
    expect(card).to_contain_text("was sent back by you")
    expect(card).to_contain_text("Count the DNS outage too")
    page.wait_for_function(REFRESHED, arg="")  # the reservation the page takes on opening
    # the diffs are collapsed until opened, from the keyboard too
    added = card.locator('[data-output="summary"] tr[data-change="added"]').first
    expect(added).to_be_hidden()
    card.locator('[data-field="text-diff"] summary').focus()
    page.keyboard.press("Enter")
    expect(added).to_be_visible()
    expect(added).to_contain_text("Eleven incidents in November.")
    card.locator('[data-field="json-diff"] summary').click()
    expect(card.locator('[data-output="findings"] .json-change').first).to_be_visible()
    expect(card.locator('[data-output="findings"]')).to_contain_text("$.findings[3]")
    # above the evidence
    card_top = card.bounding_box()
    checks_top = page.locator(".review-integrity").bounding_box()
    assert card_top is not None
    assert checks_top is not None
    assert card_top["y"] < checks_top["y"]
    # a live refresh (here: the reservation renewed) keeps the opened diffs open
    before = page.evaluate("() => document.getElementById('review-body').dataset.refreshedAt")
    page.evaluate(RENEW)
    page.wait_for_function(REFRESHED, arg=before)
    expect(card.locator("[data-field=text-diff]")).to_have_attribute("open", "")
    expect(card.locator("[data-field=json-diff]")).to_have_attribute("open", "")
    card.screenshot(path=SCREENSHOTS / "rereview-card-open.png")
    check_screen(page, "rereview-resubmission")

    page.goto(f"{server.url}/groups/{group}/work-items/{rereview.first}/review/")
    expect(page.locator(".review-integrity")).to_be_visible()
    expect(page.locator("#review-changes")).to_have_count(0)
    check_screen(page, "rereview-first-submission")
