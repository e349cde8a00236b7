"""The WorkItem page's conversation and "Escalate" forms through Django's test client (issue 35
§4, §5): people answer a worker's question, post notes, and change an item's priority from the
page, through the one write path; a form the server does not take comes back with the reason
in words and the typed text kept; names, never principals, on the screen.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from apps.ledger.models import Event
from tests.dashboard import workflows as wf
from tests.dashboard.conftest import Dashboard, logged_in
from tests.dashboard.html import element, text
from tests.dashboard.plain_words import visible_text
from tests.factories import grant, human

pytestmark = pytest.mark.django_db


def page(client: Client, path: str) -> str:
    response = client.get(path)
    assert response.status_code == 200, response.status_code
    return response.content.decode()


def item_path(dash: Dashboard, item: str) -> str:
    return f"/groups/{dash.world.group}/work-items/{item}/"


def offered_with_question(dash: Dashboard) -> tuple[str, str]:
    """An item offered to w2, which asked an essential question before accepting."""
    world = dash.world
    item = wf.authorize(world, wf.mission(world))
    wf.offer(world, item)
    asked = wf.submit(
        world.w2,
        world.group,
        "work.message",
        {"work_item": item, "text": "Which month do the reports cover?", "essential": True},
    )
    return item, asked.body["result"]["message"]


def hidden_fields(form: str) -> dict[str, str]:
    return dict(re.findall(r'<input type="hidden" name="([a-z_]+)" value="([^"]*)"', form))


def last_event(group: str) -> dict[str, Any]:
    """The group's newest event as wire.md §6 serves it."""
    found = Event.objects.filter(group_id=group).order_by("-sequence").first()
    assert found is not None
    return found.as_wire()


def test_a_mission_owner_answers_the_workers_question_from_the_page(dash: Dashboard) -> None:
    """R10.1-02..04: the page shows the open question and says no worker can take the work
    on; olga's answer is one ``work.message`` replying to it, which settles it; the page then
    shows the question answered, by her name."""
    item, question = offered_with_question(dash)
    olga = logged_in(dash.world.olga)
    html = page(olga, item_path(dash, item))
    asked = element(html, "id", f"message-{question}")
    assert "open question" in text(asked)
    assert "no worker can take this work on" in text(element(html, "data-field", "open-questions"))
    waiting = element(html, "data-field", "questions-waiting")  # said above the cards too
    assert "A question waits for an answer" in text(waiting)
    assert 'href="#conversation"' in waiting
    form = element(asked, "data-field", "reply-form")
    assert "Your answer" in text(form)
    fields = hidden_fields(form)

    response = olga.post(
        f"{item_path(dash, item)}message/",
        {**fields, "text": "November 2026 only."},
        follow=True,
    )
    assert response.status_code == 200
    after = response.content.decode()
    assert 'data-field="questions-waiting"' not in after
    assert "the question is settled" in after
    event = last_event(dash.world.group)
    assert event["type"] == "work.message_posted"
    assert event["payload"]["in_reply_to"] == question
    assert event["payload"]["resolves"] is True
    assert event["actor"] == dash.world.olga.principal
    settled = element(after, "id", f"message-{question}")
    assert "answered question" in text(settled)
    assert "Answered by olga" in visible_text(settled)
    assert "user:olga" not in visible_text(after)


def test_a_member_who_cannot_settle_the_question_is_told_so_and_the_reply_is_kept(
    dash: Dashboard,
) -> None:
    """R10.1-04: a reviewer's reply is recorded, and the page says beforehand and afterwards
    that it does not settle the question, which stays open."""
    item, question = offered_with_question(dash)
    rita = human("rita")
    grant(dash.world.alice, dash.world.group, rita, "reviewer")
    client = logged_in(rita)
    html = page(client, item_path(dash, item))
    form = element(element(html, "id", f"message-{question}"), "data-field", "reply-form")
    assert "does not settle the question" in text(element(form, "data-field", "reply-note"))
    response = client.post(
        f"{item_path(dash, item)}message/",
        {**hidden_fields(form), "text": "The October ones are in the archive too."},
        follow=True,
    )
    after = response.content.decode()
    assert "It does not settle the question" in after
    assert last_event(dash.world.group)["payload"]["resolves"] is False
    assert "open question" in text(element(after, "id", f"message-{question}"))


def test_a_note_is_posted_and_an_observer_gets_no_forms(dash: Dashboard) -> None:
    """R10.1-06: notes supplement the contract in the conversation; an observer reads the
    conversation but is offered no form (the command table gives observers no messages)."""
    item, _question = offered_with_question(dash)
    olga = logged_in(dash.world.olga)
    form = element(page(olga, item_path(dash, item)), "data-field", "note-form")
    olga.post(
        f"{item_path(dash, item)}message/",
        {**hidden_fields(form), "text": "The legal team reviews the summary on Friday."},
    )
    event = last_event(dash.world.group)
    assert (
        event["type"],
        event["payload"].get("essential"),
        event["payload"].get("in_reply_to"),
    ) == (
        "work.message_posted",
        None,
        None,
    )
    observer = page(logged_in(dash.maria), item_path(dash, item))
    assert "The legal team reviews the summary on Friday." in observer
    assert 'data-field="note-form"' not in observer
    assert 'data-field="reply-form"' not in observer
    assert 'data-field="escalate-form"' not in observer


def test_an_empty_reply_comes_back_with_the_reason_and_nothing_is_sent(dash: Dashboard) -> None:
    """Issue 34 §3: a form the server does not take is the page again, reason in words."""
    item, question = offered_with_question(dash)
    olga = logged_in(dash.world.olga)
    form = element(page(olga, item_path(dash, item)), "id", f"message-{question}")
    before = last_event(dash.world.group)["sequence"]
    response = olga.post(f"{item_path(dash, item)}message/", {**hidden_fields(form), "text": "  "})
    assert response.status_code == 400
    assert "Nothing was recorded" in response.content.decode()
    assert last_event(dash.world.group)["sequence"] == before


def test_a_mission_owner_escalates_from_the_page(dash: Dashboard) -> None:
    """R0-12, R11.1-07: olga sees the priority card with "Escalate"; she raises the urgency
    with a reason; one ``work.reprioritized`` is recorded and the card shows the change with
    her name and reason."""
    world = dash.world
    item = wf.queued(world, wf.mission(world))
    olga = logged_in(world.olga)
    html = page(olga, item_path(dash, item))
    card = element(html, "id", "priority")
    assert text(element(card, "data-field", "urgency")) == "normal"
    form = element(card, "data-field", "escalate-form")
    response = olga.post(
        f"{item_path(dash, item)}escalate/",
        {
            **hidden_fields(form),
            "urgency": "critical",
            "deadline": "",
            "reason": "The client called.",
        },
        follow=True,
    )
    after = response.content.decode()
    assert "now asks for urgency critical" in after
    event = last_event(world.group)
    assert event["type"] == "work.reprioritized"
    assert event["payload"]["urgency"] == "critical"
    assert event["payload"]["previous"]["urgency"] == "normal"
    card = element(after, "id", "priority")
    assert text(element(card, "data-field", "urgency")) == "critical"
    changes = visible_text(element(card, "data-field", "priority-changes"))
    assert "olga" in changes
    assert "normal → critical" in changes
    assert "The client called." in changes


def test_a_new_deadline_is_taken_in_utc(dash: Dashboard) -> None:
    """The form's deadline is the minute in UTC (it says so), sent as a wire timestamp."""
    world = dash.world
    item = wf.queued(world, wf.mission(world))
    olga = logged_in(world.olga)
    form = element(page(olga, item_path(dash, item)), "data-field", "escalate-form")
    olga.post(
        f"{item_path(dash, item)}escalate/",
        {**hidden_fields(form), "urgency": "", "deadline": "2031-03-04T05:06", "reason": "Later."},
    )
    event = last_event(world.group)
    assert event["payload"]["deadline"].startswith("2031-03-04T05:06:00")
    assert event["payload"]["deadline"].endswith("Z")


def test_an_escalation_the_server_refuses_keeps_the_typed_reason(dash: Dashboard) -> None:
    """Issue 34 §3: nothing to change, or the same urgency again, comes back with the reason
    in words and the typed reason in the form."""
    world = dash.world
    item = wf.queued(world, wf.mission(world))
    olga = logged_in(world.olga)
    form = element(page(olga, item_path(dash, item)), "data-field", "escalate-form")
    fields = {**hidden_fields(form), "deadline": "", "reason": "Because the board asked."}

    nothing = olga.post(f"{item_path(dash, item)}escalate/", {**fields, "urgency": ""})
    assert nothing.status_code == 400
    html = nothing.content.decode()
    assert "Choose a new urgency or a new deadline" in html
    assert "Because the board asked." in element(html, "data-field", "escalate-form")

    same = olga.post(f"{item_path(dash, item)}escalate/", {**fields, "urgency": "normal"})
    assert same.status_code == 409
    html = same.content.decode()
    assert "It already has that urgency and deadline" in html
    kept = element(html, "data-field", "escalate-form")
    assert "Because the board asked." in kept
    assert 'value="normal" selected' in kept
    assert "ILLEGAL_TRANSITION" not in visible_text(html)
    assert last_event(world.group)["type"] != "work.reprioritized"


def test_a_worker_role_gets_no_escalate_form_and_a_finished_item_none_either(
    dash: Dashboard,
) -> None:
    """R11.1-06, R10.2-19: a person holding only the worker role is not offered "Escalate";
    nor is anyone on a cancelled item."""
    world = dash.world
    item = wf.queued(world, wf.mission(world))
    wendy = human("wendy")
    grant(world.alice, world.group, wendy, "worker")
    assert 'data-field="escalate-form"' not in page(logged_in(wendy), item_path(dash, item))
    wf.submit(world.w1, world.group, "work.cancel", {"work_item": item, "reason": "not needed"})
    assert 'data-field="escalate-form"' not in page(logged_in(world.olga), item_path(dash, item))
