"""Named approvers and asks on the dashboard (issue 36 §4; R10.2-06, R13.2-03).

The approval page names who may still approve (the protocol core's answer), who approved
with their comment and the count; "Ask for approval from…" and "Ask for a review from…"
submit ``work.ask`` through the one write path, and the page then says who was asked, by whom,
when; what was asked of a person is the first section of their inbox.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from apps.ledger.models import Event
from tests.dashboard import workflows as wf
from tests.dashboard.conftest import People, logged_in
from tests.dashboard.html import element, text
from tests.factories import HumanPersona

pytestmark = pytest.mark.django_db


def gated(people: People, approvals: int = 2) -> str:
    return wf.queued(people.world, wf.mission(people.world), contract=wf.gated_contract(approvals))


def page(persona: HumanPersona, path: str) -> str:
    response = logged_in(persona).get(path)
    assert response.status_code == 200, response.status_code
    return response.content.decode()


def approval_url(people: People, item: str) -> str:
    return f"/groups/{people.group}/work-items/{item}/approval/"


def ask_url(people: People, item: str) -> str:
    return f"/groups/{people.group}/work-items/{item}/ask/"


def asked_events(group: str) -> list[dict[str, Any]]:
    rows = Event.objects.filter(group_id=group, type="work.asked").order_by("sequence")
    return [json.loads(document) for document in rows.values_list("document", flat=True)]


def said(html: str) -> str:
    """Visible text as read: no space before punctuation (``text`` puts one per tag)."""
    return text(html).replace(" .", ".").replace(" ,", ",").replace(" :", ":")


def panel(html: str) -> str:
    return said(element(html, "id", "ask-execution_approval"))


def test_the_approval_page_names_who_may_still_approve_and_who_approved(people: People) -> None:
    """R10.2-06: "May still approve" lists the mission owners whose grant the protocol core
    would take now (the coordinator agent who authorised it, the reviewer and the worker are
    not among them); once petra approves she leaves the list, her approval and comment show,
    and the count is 1 of 2."""
    item = gated(people)
    shown = panel(page(people.world.olga, approval_url(people, item)))
    assert "May still approve: olga (you), petra." in shown

    wf.approve(people.petra, people.group, item)
    html = page(people.world.olga, approval_url(people, item))
    assert "May still approve: olga (you)." in panel(html)
    decisions = text(element(html, "data-field", "decisions"))
    assert "petra approved" in decisions
    assert "fine by me" in decisions
    assert "1 of 2" in text(element(html, "data-field", "quorum"))


def test_olga_asks_petra_for_approval_and_the_page_says_so(people: People) -> None:
    """R10.2-06: the form offers the people who may still approve but the viewer; posting
    it records ``work.asked`` as olga, confirms in words, and the page then reads "Asked of
    petra by olga … : “note”"."""
    item = gated(people)
    html = page(people.world.olga, approval_url(people, item))
    form = element(html, "data-form-key", f"ask:execution_approval:{item}")
    assert 'value="user:petra"' in form
    assert 'value="user:olga"' not in form
    client = logged_in(people.world.olga)
    response = client.post(
        ask_url(people, item),
        {
            "wanted": "execution_approval",
            "contract_revision": "1",
            "asked": ["user:petra"],
            "note": "the board meets at noon",
            "command_id": "dash-ask-1",
            "next": approval_url(people, item),
        },
        follow=True,
    )
    html = response.content.decode()
    assert response.redirect_chain[-1][0] == approval_url(people, item)
    assert "Asked petra for approval of “Summarise the incident reports of November”." in text(
        element(html, "id", "flash")
    )
    (event,) = asked_events(people.group)
    assert event["actor"] == "user:olga"
    assert event["payload"]["asked"] == ["user:petra"]
    asks = said(element(html, "data-field", "asks"))
    assert "Asked of petra by olga" in asks
    assert "the board meets at noon" in asks


def test_a_reviewer_sees_who_may_approve_but_is_offered_no_form(people: People) -> None:
    """wire§9: only a coordinator or a mission owner asks; the reviewer reads the names."""
    item = gated(people)
    html = page(people.rita, approval_url(people, item))
    assert "May still approve: olga, petra." in panel(html)
    assert "Ask for approval from" not in html


def test_asking_someone_who_may_not_approve_is_refused_in_words(people: People) -> None:
    """R10.2-06: a stale page naming the reviewer: 403, the person named and why, nothing
    appended."""
    item = gated(people)
    response = logged_in(people.world.olga).post(
        ask_url(people, item),
        {
            "wanted": "execution_approval",
            "asked": ["user:rita"],
            "next": approval_url(people, item),
        },
    )
    assert response.status_code == 403
    said = text(response.content.decode())
    assert "rita cannot be asked: they hold no role that may do it." in said
    assert asked_events(people.group) == []


def test_choosing_nobody_sends_nothing(people: People) -> None:
    item = gated(people)
    response = logged_in(people.world.olga).post(
        ask_url(people, item),
        {"wanted": "execution_approval", "next": approval_url(people, item)},
        follow=True,
    )
    assert "choose whom to ask" in text(response.content.decode())
    assert asked_events(people.group) == []


def inbox_sections(persona: HumanPersona) -> list[str]:
    html = page(persona, "/")
    return [
        line.split('data-section="', 1)[1].split('"', 1)[0]
        for line in html.split("<section")
        if 'data-section="' in line
    ]


def test_what_was_asked_of_petra_comes_first_in_her_inbox(people: People) -> None:
    """issue 36 §4: "Asked of you" is the first section, with who asked and the note; the
    approvals section below is unchanged (the item is there too); olga, who asked, has
    nothing asked of her."""
    item = gated(people)
    wf.submit(
        people.world.olga,
        people.group,
        "work.ask",
        {"work_item": item, "for": "execution_approval", "asked": ["user:petra"], "note": "today"},
    )
    assert inbox_sections(people.petra)[:2] == ["asked", "approvals"]
    html = page(people.petra, "/")
    asked = element(html, "data-section", "asked")
    assert element(asked, "data-work-item", item)
    assert "Asked by olga: “today”" in said(asked) or "Asked by olga: today" in said(asked)
    assert f"/groups/{people.group}/work-items/{item}/approval/" in asked
    assert element(element(html, "data-section", "approvals"), "data-work-item", item)
    olga = element(page(people.world.olga, "/"), "data-section", "asked")
    assert 'data-count="0"' in olga

    wf.approve(people.petra, people.group, item)  # answered: it leaves her inbox
    assert 'data-count="0"' in element(page(people.petra, "/"), "data-section", "asked")


def test_asking_for_a_review_from_the_review_page(people: People) -> None:
    """R13.2-03: on a submission's review page olga asks rita; rita's inbox lists it first,
    linking the review page."""
    world = people.world
    item = wf.queued(world, wf.mission(world))
    lease = wf.start(world, item)
    wf.submit_result(world, item, lease)
    review_url = f"/groups/{people.group}/work-items/{item}/review/"
    html = page(world.olga, review_url)
    form = element(html, "data-form-key", f"ask:review:{item}")
    assert 'value="user:rita"' in form
    response = logged_in(world.olga).post(
        ask_url(people, item),
        {"wanted": "review", "asked": ["user:rita"], "next": review_url},
        follow=True,
    )
    assert "Asked rita for a review" in text(element(response.content.decode(), "id", "flash"))
    asked = element(page(people.rita, "/"), "data-section", "asked")
    assert f"/groups/{people.group}/work-items/{item}/review/" in asked
    assert "asks your review" in text(asked)
