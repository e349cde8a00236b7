"""The WorkItem page's conversation and "Escalate" in a real browser against a real server
(issue 35 §4, §5): a mission owner answers the question a worker asked before accepting, and
escalates another item; what she typed or chose survives the page refreshing under her when
events arrive, and what she sent shows up in words, with names.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from playwright.sync_api import Page, expect

from tests.dashboard import workflows as wf
from tests.e2e.screens import snap
from tests.e2e.test_dashboard_browser import log_in, with_password
from tests.factories import World, build_world
from tests.live_server import LiveServer, in_plain_thread

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

LIVE_TIMEOUT_MS = 5_000
QUESTION = "Which month do the reports cover?"


@dataclass
class Talk:
    world: World
    asked_on: str  # offered to w2, which asked an essential question first
    question: str
    queued: str  # queued for w2, urgency normal


@pytest.fixture
def talk(transactional_db: None) -> Talk:
    """Committed before the browser starts, so the server process sees it."""
    world = build_world()
    with_password(world.olga)
    mission = wf.mission(world)
    asked_on = wf.authorize(world, mission)
    wf.offer(world, asked_on)
    asked = wf.submit(
        world.w2,
        world.group,
        "work.message",
        {"work_item": asked_on, "text": QUESTION, "essential": True},
    )
    queued = wf.queued(world, mission)
    return Talk(world, asked_on, asked.body["result"]["message"], queued)


def note(world: World, item: str, text: str) -> None:
    """w1 posts a note: an event about the item, so the page refreshes its body."""
    wf.submit(world.w1, world.group, "work.message", {"work_item": item, "text": text})


def test_a_mission_owner_answers_the_workers_question_while_the_page_moves(
    talk: Talk, live_asgi_server: LiveServer, page: Page
) -> None:
    """R10.1-02..04: the open question says no worker can take the work on; olga types her
    answer, a note arrives and the page refreshes without losing it; she sends it and the
    question shows answered, by her name."""
    server, world = live_asgi_server, talk.world
    log_in(page, server, "olga")
    page.goto(f"{server.url}/groups/{world.group}/work-items/{talk.asked_on}/")
    expect(page.locator("#connection-status")).to_have_attribute("data-state", "live")
    expect(page.locator('[data-field="open-questions"]')).to_contain_text(
        "no worker can take this work on"
    )
    question = page.locator(f"#message-{talk.question}")
    expect(question).to_contain_text("open question")
    question.get_by_label("Your answer").fill("November 2026 only.")

    in_plain_thread(note, world, talk.asked_on, "Reports are in the shared folder.")
    body = page.locator("#work-item-body")
    expect(body).to_contain_text("Reports are in the shared folder.", timeout=LIVE_TIMEOUT_MS)
    answer = page.locator(f"#message-{talk.question}").get_by_label("Your answer")
    expect(answer).to_have_value("November 2026 only.")

    page.locator(f"#message-{talk.question}").get_by_role("button", name="Answer").click()
    expect(page.locator(".flash, [role=status]").first).to_be_visible()
    expect(page.get_by_text("the question is settled")).to_be_visible()
    settled = page.locator(f"#message-{talk.question}")
    expect(settled).to_contain_text("answered question")
    expect(settled).to_contain_text("Answered by olga")
    expect(page.locator('[data-field="open-questions"]')).to_have_count(0)
    snap(page, "work-item-question-answered")


def test_a_mission_owner_escalates_and_her_choice_survives_a_refresh(
    talk: Talk, live_asgi_server: LiveServer, page: Page
) -> None:
    """R0-12, R11.1-07: olga opens "Escalate…", chooses critical and types why; an event
    arrives and the page refreshes, keeping the disclosure open, her choice and her words;
    she sends it and the priority card shows critical with her name and reason."""
    server, world = live_asgi_server, talk.world
    log_in(page, server, "olga")
    page.goto(f"{server.url}/groups/{world.group}/work-items/{talk.queued}/")
    expect(page.locator("#connection-status")).to_have_attribute("data-state", "live")
    card = page.locator("#priority")
    expect(card.locator('[data-field="urgency"]')).to_have_text("normal")
    card.get_by_text("Escalate…").click()
    card.get_by_label("New urgency").select_option("critical")
    card.get_by_label("Why").fill("The client's board meets tomorrow.")

    in_plain_thread(note, world, talk.queued, "Starting soon.")
    expect(page.locator("#work-item-body")).to_contain_text(
        "Starting soon.", timeout=LIVE_TIMEOUT_MS
    )
    card = page.locator("#priority")
    expect(card.get_by_label("New urgency")).to_have_value("critical")
    expect(card.get_by_label("Why")).to_have_value("The client's board meets tomorrow.")

    card.get_by_role("button", name="Escalate").click()
    expect(page.get_by_text("now asks for urgency critical")).to_be_visible()
    card = page.locator("#priority")
    expect(card.locator('[data-field="urgency"]')).to_have_text("critical")
    changes = card.locator('[data-field="priority-changes"]')
    expect(changes).to_contain_text("olga")
    expect(changes).to_contain_text("normal → critical")
    expect(changes).to_contain_text("The client's board meets tomorrow.")
    snap(page, "work-item-escalated")
