"""With scripts off, a form the server does not take still gives back what was typed
(issue 34 §3; the brief's "a person never loses what they typed").

Two forms used to answer a refusal with a redirect that dropped the text, leaving it to the
browser's script to restore: the approve form on the WorkItem page and the group's queue, and
"Ask for approval / a review from…". Django's test client runs no script, so each test here
reads the first answer the server gives, as a browser with scripts off would show it.
"""

from __future__ import annotations

import re

import pytest

from tests.dashboard import workflows as wf
from tests.dashboard.conftest import People, logged_in
from tests.dashboard.html import element, not_sent, text

pytestmark = pytest.mark.django_db

NOTE = "Tables first, please: the audit starts on Monday."


def gated(people: People, approvals: int = 2) -> str:
    return wf.queued(people.world, wf.mission(people.world), contract=wf.gated_contract(approvals))


def item_url(people: People, item: str, suffix: str = "") -> str:
    return f"/groups/{people.group}/work-items/{item}/{suffix}"


def form_fields(html: str, key: str) -> dict[str, str]:
    form = element(html, "data-form-key", key)
    return dict(re.findall(r'<input type="hidden" name="([a-z_]+)" value="([^"]*)"', form))


# --- the approve form on the WorkItem page and the group's queue (R10.2-06) ---------------------


def test_an_approval_from_the_work_item_page_over_its_limit_keeps_the_comment(
    people: People,
) -> None:
    """R10.2-06: the WorkItem page's approve form, sent with a comment past its limit (a
    client that ignores ``maxlength``): the approval screen answers 400 with the limit in words
    and the whole comment in its approve form; nothing is appended."""
    item = gated(people)
    olga = logged_in(people.world.olga)
    page = olga.get(item_url(people, item)).content.decode()
    comment = "c" * 10_500
    before = wf.head(people.group)

    response = olga.post(
        item_url(people, item, "approve/"),
        {**form_fields(page, f"approve:{item}"), "comment": comment},
    )

    assert response.status_code == 400
    html = response.content.decode()
    assert not_sent(html) == (
        "Nothing was recorded. Your comment on approving is 10,500 characters; at most 10,000. "
        "Shorten it and send it again."
    )
    assert f">{comment}</textarea>" in element(html, "data-form-key", f"approve:{item}")
    assert wf.head(people.group) == before


def test_a_stale_approval_from_the_queue_keeps_the_comment_on_the_approval_screen(
    people: People,
) -> None:
    """R10.1-05: approved from the group page's queue after the contract changed: the
    approval screen, STALE_REVISION in words, the comment in the form of the new revision."""
    world = people.world
    item = gated(people)
    group_page = logged_in(world.olga).get(f"/groups/{people.group}/").content.decode()
    fields = form_fields(group_page, f"approve:{item}")
    wf.revise_contract(world, item, "Summarise the incident reports, tables named")
    before = wf.head(people.group)

    response = logged_in(world.olga).post(
        item_url(people, item, "approve/"), {**fields, "comment": NOTE}
    )

    assert response.status_code == 409
    html = response.content.decode()
    assert not_sent(html).startswith("Nothing was recorded. The contract changed while you read it")
    assert f"{NOTE}</textarea>" in element(html, "data-form-key", f"approve:{item}")
    assert form_fields(html, f"approve:{item}")["contract_revision"] == "2"
    assert wf.head(people.group) == before


def test_an_approval_taken_from_the_work_item_page_goes_back_to_it(people: People) -> None:
    """Once taken, the person returns to the page the form was on, told the count."""
    item = gated(people)
    olga = logged_in(people.world.olga)
    page = olga.get(item_url(people, item)).content.decode()

    response = olga.post(
        item_url(people, item, "approve/"),
        {**form_fields(page, f"approve:{item}"), "comment": "Fine."},
        follow=True,
    )

    assert response.redirect_chain[-1][0] == item_url(people, item)
    assert "1 of 2 approvals" in text(element(response.content.decode(), "id", "flash"))
    assert wf.last_event(people.group)["payload"]["comment"] == "Fine."


# --- "Ask for approval / a review from…" (R10.2-06, R13.2-03) --------------------------------


def test_an_ask_naming_nobody_comes_back_with_its_note(people: People) -> None:
    """Nobody ticked: 400 on the approval screen, "choose whom to ask", the note kept."""
    item = gated(people)
    before = wf.head(people.group)

    response = logged_in(people.world.olga).post(
        item_url(people, item, "ask/"),
        {"wanted": "execution_approval", "note": NOTE, "next": item_url(people, item, "approval/")},
    )

    assert response.status_code == 400
    html = response.content.decode()
    assert "choose whom to ask" in not_sent(html)
    assert f"{NOTE}</textarea>" in element(html, "data-form-key", f"ask:execution_approval:{item}")
    assert wf.head(people.group) == before


def test_a_refused_ask_keeps_its_note_and_the_people_ticked(people: People) -> None:
    """R10.2-06: petra and rita ticked (a stale page: rita may not approve): 403 in words,
    the note in the form and both still ticked, to untick rita and send again."""
    item = gated(people)
    before = wf.head(people.group)
    response = logged_in(people.world.olga).post(
        item_url(people, item, "ask/"),
        {
            "wanted": "execution_approval",
            "asked": ["user:petra", "user:rita"],
            "note": NOTE,
            "next": item_url(people, item, "approval/"),
        },
    )

    assert response.status_code == 403
    html = response.content.decode()
    assert "rita cannot be asked: they hold no role that may do it." in not_sent(html)
    form = element(html, "data-form-key", f"ask:execution_approval:{item}")
    assert f"{NOTE}</textarea>" in form
    assert 'value="user:petra" checked' in form
    assert wf.head(people.group) == before


def test_a_refused_ask_on_the_review_page_keeps_its_note(people: People) -> None:
    """R13.2-03: on the review page, asking someone outside the group is refused; the review
    page answers with the reason and the note in the ask form; nothing is appended."""
    world = people.world
    item = wf.queued(world, wf.mission(world))
    lease = wf.start(world, item)
    wf.submit_result(world, item, lease)
    before = wf.head(people.group)

    response = logged_in(world.olga).post(
        item_url(people, item, "ask/"),
        {
            "wanted": "review",
            "asked": ["user:nobody"],
            "note": NOTE,
            "next": item_url(people, item, "review/"),
        },
    )

    assert response.status_code == 403, response.status_code
    html = response.content.decode()
    assert "they are not a member of this group" in not_sent(html)
    assert f"{NOTE}</textarea>" in element(html, "data-form-key", f"ask:review:{item}")
    assert wf.head(people.group) == before


def test_an_ask_whose_page_is_gone_gives_its_note_back_on_a_page_of_its_own(
    people: People,
) -> None:
    """An ask about a WorkItem the group does not hold (a page from elsewhere, an id
    mistyped): no approval screen to answer with, so a page of its own with the note to copy."""
    response = logged_in(people.world.olga).post(
        item_url(people, "wi-none", "ask/"), {"wanted": "execution_approval", "note": NOTE}
    )

    assert response.status_code == 400
    html = response.content.decode()
    assert "choose whom to ask" in not_sent(html)
    assert f">{NOTE}</textarea>" in element(html, "id", "not-sent")
