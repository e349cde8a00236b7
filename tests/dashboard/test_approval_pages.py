"""The execution-approval screen through Django's test client: the contract revision in full,
the decisions already given with their comments, the start-by deadline and what happened
when it passed, Approve and Refuse through the forms and the one write path, why a person
may not decide (in words), 404 for non-members and CSRF on both forms.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import NoReverseMatch, reverse

from apps.ledger.models import Event
from apps.registry import services
from missionweave.protocol.examples import INCIDENT_REPORTS_DIGEST
from tests.dashboard import workflows as wf
from tests.dashboard.conftest import People, logged_in
from tests.dashboard.html import element, not_sent, text
from tests.factories import HumanPersona, agent, grant, human, now_text, unique

pytestmark = pytest.mark.django_db


@pytest.fixture
def owners(people: People) -> People:
    """The world's owners olga and petra, and rita, a reviewer (``conftest.people``)."""
    return people


def gated(owners: People, approvals: int = 2) -> str:
    return wf.queued(owners.world, wf.mission(owners.world), contract=wf.gated_contract(approvals))


def url(owners: People, item: str, suffix: str = "") -> str:
    return f"/groups/{owners.group}/work-items/{item}/approval/{suffix}"


def screen(persona: HumanPersona, owners: People, item: str) -> str:
    response = logged_in(persona).get(url(owners, item))
    assert response.status_code == 200, response.status_code
    return response.content.decode()


def form_fields(html: str, key: str) -> dict[str, str]:
    form = element(html, "data-form-key", key)
    return dict(re.findall(r'<input type="hidden" name="([a-z_]+)" value="([^"]*)"', form))


def post(
    client: Client, action: str, fields: dict[str, str], **extra: str
) -> tuple[str, list[tuple[str, int]]]:
    response = client.post(action, {**fields, **extra}, follow=True)
    return response.content.decode(), response.redirect_chain


def flash(html: str) -> str:
    return text(element(html, "id", "flash"))


def events(group: str, type_: str) -> list[dict[str, Any]]:
    return [
        json.loads(document)
        for document in Event.objects.filter(group_id=group, type=type_).values_list(
            "document", flat=True
        )
    ]


# --- what the screen shows ---------------------------------------------------------------------


def test_the_screen_shows_the_contract_revision_in_full_and_why_it_needs_approval(
    owners: People,
) -> None:
    """R10.1-01, R10.2-06: goal, outputs, acceptance criteria (id, description, method),
    inputs, allowed tools/data/operations, budgets, the risk class and why approval is
    required, who authorised it and when, and the quorum."""
    item = gated(owners)
    html = screen(owners.world.olga, owners, item)
    body = element(html, "id", "approval-body")

    assert "Execution approval" in html
    assert "Summarise the incident reports of November" in text(element(body, "data-field", "goal"))
    assert "summary text/markdown" in text(element(body, "data-field", "outputs"))
    criteria = text(element(body, "data-field", "criteria"))
    assert "c1 Covers every report deterministic" in criteria
    assert "c2 Accurate and neutral human review" in criteria
    assert INCIDENT_REPORTS_DIGEST in element(body, "data-field", "inputs")
    assert text(element(body, "data-field", "inputs")).startswith("input 1")
    allowed = text(element(body, "data-field", "allowed"))
    assert "tools search" in allowed
    assert "data incidents" in allowed
    assert "operations read" in allowed
    budgets = text(element(body, "data-field", "budgets"))
    assert "money 5 0" in budgets  # limit 5, used 0, as people read them
    assert "side effects 0" in budgets
    why = text(element(body, "data-field", "why-approval"))
    assert "risk class high" in why
    assert "2 distinct mission owners approve this revision." in why
    assert "0 of 2 mission owners" in text(element(body, "data-field", "quorum"))
    authorised = text(element(body, "data-field", "authorized-by"))
    assert re.fullmatch(r"w1 · \d{4}-\d\d-\d\d \d\d:\d\d UTC", authorised)
    assert '<time datetime="' in element(body, "data-field", "authorized-by")
    assert "Nobody has decided on revision 1 yet." in text(element(body, "id", "decisions"))
    start_by = element(body, "data-field", "start-by")
    assert "The owner must start by" in text(start_by)
    assert 'data-passed-text="missed"' in start_by


def test_an_input_links_to_its_artifact_page_once_that_screen_exists(owners: People) -> None:
    """wire§9: each input is its digest, linked to the artifact page when the route exists."""
    item = gated(owners)
    inputs = element(screen(owners.world.olga, owners, item), "data-field", "inputs")
    assert INCIDENT_REPORTS_DIGEST in inputs
    try:
        target = reverse("dashboard:artifact", args=[owners.group, INCIDENT_REPORTS_DIGEST])
    except NoReverseMatch:  # the artifact screen is another one's
        return
    assert f'href="{target}"' in inputs


def test_the_group_page_and_the_work_item_page_link_to_the_screen_with_the_deadline(
    owners: People,
) -> None:
    """R11.3-02: the existing approval cards show the start-by deadline (a countdown) and
    link to the approval screen."""
    item = gated(owners)
    client = logged_in(owners.world.olga)
    group_page = client.get(f"/groups/{owners.group}/").content.decode()
    card = element(group_page, "data-work-item", item)
    assert f'href="{url(owners, item)}"' in card
    assert 'data-field="start-countdown"' in card
    item_page = client.get(f"/groups/{owners.group}/work-items/{item}/").content.decode()
    approvals = element(item_page, "id", "approvals")
    assert f'href="{url(owners, item)}"' in approvals
    assert "data-countdown=" in approvals


# --- approve and refuse through the forms ------------------------------------------------------


def test_approving_from_the_screen_records_the_comment_and_shows_it_everywhere(
    owners: People,
) -> None:
    """R10.2-06: the Approve form grants the revision the page showed, with the page's
    command id and the comment; back on the screen the decision shows with the comment, as on
    the WorkItem page's approval card and the group page's queue."""
    item = gated(owners)
    client = logged_in(owners.world.olga)
    html = screen(owners.world.olga, owners, item)
    fields = form_fields(html, f"approve:{item}")
    assert fields["contract_revision"] == "1"
    assert fields["next"] == url(owners, item)

    assert f'action="{url(owners, item, "approve/")}"' in element(
        html, "data-form-key", f"approve:{item}"
    )
    page, chain = post(
        client, url(owners, item, "approve/"), fields, comment="Read-only, and the budget is small."
    )

    assert chain[0] == (url(owners, item), 302)
    assert (
        "Approved revision 1 of “Summarise the incident reports of November”: 1 of 2 approvals."
        in flash(page)
    )
    decisions = text(element(page, "id", "decisions"))
    assert "✓ olga approved revision 1" in decisions
    assert "Read-only, and the budget is small." in decisions
    assert "You already approved revision 1." in text(element(page, "id", "decide"))
    [granted] = events(owners.group, "approval.execution_granted")
    assert granted["command_id"] == fields["command_id"]
    item_page = client.get(f"/groups/{owners.group}/work-items/{item}/").content.decode()
    assert "Read-only, and the budget is small." in text(element(item_page, "id", "approvals"))
    queue = client.get(f"/groups/{owners.group}/").content.decode()
    assert "Read-only, and the budget is small." in text(element(queue, "id", "approval-queue"))


def test_refusing_without_a_reason_answers_with_the_page_and_says_so(owners: People) -> None:
    """R10.2-06, issue 34 §3: a refusal says why: an empty reason is refused before anything
    is sent, the page answers again with the reason in words, and nothing is appended; the
    textarea is required."""
    item = gated(owners)
    html = screen(owners.world.olga, owners, item)
    form = element(html, "data-form-key", f"refuse:{item}")
    assert re.search(r"<textarea[^>]*name=\"comment\"[^>]*required", form)
    before = wf.head(owners.group)

    response = logged_in(owners.world.olga).post(
        url(owners, item, "refuse/"), {**form_fields(html, f"refuse:{item}"), "comment": "   "}
    )

    assert response.status_code == 400
    message = not_sent(response.content.decode())
    assert message == (
        "Nothing was recorded. Your reason for refusing is empty: write it, then send it again."
    )
    assert wf.head(owners.group) == before


def test_refusing_with_a_reason_stops_the_revision_and_everyone_sees_who_and_why(
    owners: People,
) -> None:
    """R10.2-06: the refusal is appended with its comment; the screen shows it, the other
    owner is told the revision was refused (no forms), and the item leaves the inboxes'
    approvals for the owners' blocked section."""
    item = gated(owners)
    html = screen(owners.world.olga, owners, item)

    page, chain = post(
        logged_in(owners.world.olga),
        url(owners, item, "refuse/"),
        form_fields(html, f"refuse:{item}"),
        comment="Too broad: name the tables it may read.",
    )

    assert chain[0] == (url(owners, item), 302)
    assert "Refused revision 1 of “Summarise the incident reports of November”" in flash(page)
    [refused] = events(owners.group, "approval.execution_refused")
    assert refused["payload"]["comment"] == "Too broad: name the tables it may read."
    assert refused["actor"] == "user:olga"
    refusal = text(element(page, "data-field", "refusal"))
    assert refusal.startswith("Execution refused Revision 1 was refused by olga")
    assert "Too broad: name the tables it may read." in refusal
    assert "It waits for a corrected contract" in refusal
    assert text(element(page, "data-field", "state")) == "execution refused"
    # shown once, in words: never the code, never twice
    assert "DUPLICATE_APPROVAL" not in page
    assert page.count("Too broad: name the tables it may read.") == 1
    assert 'data-field="start-by"' not in page  # its start-by clock stopped
    other = screen(owners.petra, owners, item)
    assert "Revision 1 was refused by olga" in text(element(other, "data-field", "refusal"))
    assert 'data-field="why-not"' not in other
    assert 'data-form-key="approve:' not in other
    inbox = logged_in(owners.petra).get("/").content.decode()
    assert item not in element(inbox, "id", "inbox-approvals")
    assert item in element(inbox, "id", "inbox-blocked")


def test_a_stale_page_is_refused_as_stale_revision(owners: People) -> None:
    """R10.1-05: the forms carry the revision the page showed; once the coordinator revised
    the contract, approving what was read is STALE_REVISION, and nothing is appended."""
    world = owners.world
    item = gated(owners)
    html = screen(world.olga, owners, item)
    wf.revise_contract(world, item, "Summarise the incident reports, tables named")
    before = wf.head(owners.group)

    response = logged_in(world.olga).post(
        url(owners, item, "approve/"),
        {**form_fields(html, f"approve:{item}"), "comment": "Fine as I read it."},
    )

    assert response.status_code == 409
    page = response.content.decode()
    assert not_sent(page).startswith(
        "Nothing was recorded. The contract changed while you read it (it is now revision 2)"
    )
    assert "STALE_REVISION" in element(page, "id", "not-sent")  # in the technical details
    # the form can still succeed on the new revision: it shows it, with the comment kept
    assert "Fine as I read it.</textarea>" in element(page, "data-form-key", f"approve:{item}")
    assert form_fields(page, f"approve:{item}")["contract_revision"] == "2"
    assert wf.head(owners.group) == before


# --- why a person may not decide ----------------------------------------------------------------


def test_a_reviewer_is_told_only_mission_owners_decide(owners: People) -> None:
    """R10.2-06, wire§9: no forms; the why in words, with the code and the rule."""
    item = gated(owners)
    html = screen(owners.rita, owners, item)
    why = element(html, "data-field", "why-not")
    assert (
        "Only mission owners can approve or refuse an execution; "
        "you are a reviewer in this group." in text(why)
    )
    assert "FORBIDDEN" in element(why, "class", "technical-details")
    assert 'data-form-key="approve:' not in html
    assert 'data-form-key="refuse:' not in html


def test_the_person_who_authorised_the_item_is_told_someone_else_must_approve(
    owners: People,
) -> None:
    """R10.2-06: SELF_APPROVAL, in words."""
    cora = human("cora")
    grant(owners.world.alice, owners.group, cora, "coordinator", "mission_owner")
    mission = wf.mission(owners.world)
    item = unique("wi")
    wf.submit(
        cora,
        owners.group,
        "work.authorize",
        {"work_item": item, "mission": mission, "contract": wf.gated_contract(1), "depends_on": []},
    )
    wf.accept(owners.world, item, wf.offer(owners.world, item))

    why = text(element(screen(cora, owners, item), "data-field", "why-not"))

    assert "You authorised this WorkItem, so someone else must approve it." in why


def test_a_second_decision_is_explained_as_already_given(owners: People) -> None:
    """R10.2-06: one decision per person per revision: DUPLICATE_APPROVAL, in words."""
    item = gated(owners)
    wf.approve(owners.world.olga, owners.group, item)
    why = text(element(screen(owners.world.olga, owners, item), "data-field", "why-not"))
    assert "You already approved revision 1." in why


def test_a_refusal_posted_by_a_reviewer_is_forbidden_by_the_write_path(owners: People) -> None:
    """wire§9: whatever a page offers, the write path decides: FORBIDDEN, nothing appended."""
    item = gated(owners)
    before = wf.head(owners.group)
    response = logged_in(owners.rita).post(
        url(owners, item, "refuse/"),
        {"contract_revision": "1", "command_id": "", "comment": "I do not like it"},
    )
    assert response.status_code == 403
    page = response.content.decode()
    assert "Only mission owners can approve or refuse an execution" in not_sent(page)
    # the form was never hers: her text is given back beside the reason
    assert "I do not like it</textarea>" in element(page, "id", "not-sent")
    assert wf.head(owners.group) == before


def test_an_item_that_needs_no_approval_says_there_is_nothing_to_decide(owners: People) -> None:
    item = wf.queued(owners.world, wf.mission(owners.world))
    html = screen(owners.world.olga, owners, item)
    assert "needs no execution approval" in text(element(html, "data-field", "why-not"))


# --- the start-by deadline ----------------------------------------------------------------------


def test_a_missed_start_deadline_says_what_happened_instead(owners: People) -> None:
    """R11.3-02, R11.5-01: once the owner missed its start-by deadline the screen says so
    (never a stale waiting state); after the authority's sweep it says who the item was
    reassigned to and when."""
    world = owners.world
    w3 = agent("w3", world.org)
    grant(world.alice, owners.group, w3, "worker")
    item = wf.authorize(world, wf.mission(world), contract=wf.gated_contract(2))
    offer = unique("o")
    wf.submit(
        world.w1,
        owners.group,
        "work.offer",
        {
            "work_item": item,
            "offers": [
                {"offer": offer, "worker": world.w2.principal, "expires_at": now_text(600)},
                {"offer": unique("o"), "worker": w3.principal, "expires_at": now_text(600)},
            ],
            "mode": "sequential",
            "selection_basis": wf.SELECTION_BASIS,
            "start_within_s": 1,
        },
    )
    wf.accept(world, item, offer)
    time.sleep(1.2)

    missed = element(screen(world.olga, owners, item), "data-field", "start-by")
    assert "The start-by deadline has passed." in text(missed)
    assert 'data-passed="true"' in missed

    wf.reassign(owners.group, item, reason="start_deadline_missed")

    html = screen(world.olga, owners, item)
    reassigned = text(element(html, "data-field", "reassigned"))
    assert re.search(r"reassigned to w3 \d{4}-\d\d-\d\d \d\d:\d\d UTC", reassigned), reassigned
    assert reassigned.startswith("Not started by its start-by deadline:")
    assert 'data-field="start-by"' not in html


# --- access -------------------------------------------------------------------------------------


def test_every_route_is_404_for_a_non_member_and_for_an_unknown_item(owners: People) -> None:
    """wire§4: a non-member learns nothing, not even that the item or the group exists."""
    item = gated(owners)
    nina = logged_in(owners.dash.nina)
    for path in (url(owners, item), url(owners, item, "section/")):
        assert nina.get(path).status_code == 404
    for path in (url(owners, item, "refuse/"), url(owners, item, "approve/")):
        assert nina.post(path, {"contract_revision": "1", "comment": "no"}).status_code == 404
    olga = logged_in(owners.world.olga)
    assert olga.get(url(owners, "wi-unknown")).status_code == 404
    assert olga.get(f"/groups/g-nope/work-items/{item}/approval/").status_code == 404
    assert Client().get(url(owners, item)).status_code == 302  # to the login page


def test_the_forms_need_the_csrf_token(owners: People) -> None:
    """Django's CSRF check guards both forms: without the token nothing is submitted."""
    item = gated(owners)
    client = Client(enforce_csrf_checks=True)
    client.force_login(get_user_model().objects.get(username="olga"))
    before = wf.head(owners.group)
    for path in (url(owners, item, "refuse/"), url(owners, item, "approve/")):
        response = client.post(path, {"contract_revision": "1", "comment": "because"})
        assert response.status_code == 403
    assert wf.head(owners.group) == before
    html = client.get(url(owners, item)).content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)
    response = client.post(
        url(owners, item, "refuse/"),
        {"contract_revision": "1", "comment": "because", "csrfmiddlewaretoken": token},
    )
    assert response.status_code == 302
    assert wf.head(owners.group) == before + 1


def test_the_section_partial_is_the_screens_body_alone(owners: People) -> None:
    """wire§7: ``…/approval/section/`` renders only the body, with the present state."""
    item = gated(owners)
    client = logged_in(owners.world.olga)
    before = client.get(url(owners, item, "section/")).content.decode().strip()
    assert element(before, "id", "approval-body") == before
    wf.approve(owners.petra, owners.group, item)
    after = client.get(url(owners, item, "section/")).content.decode()
    assert "✓ petra approved" in text(element(after, "id", "decisions"))
    assert "fine by me" in text(element(after, "id", "decisions"))


def test_the_group_timeline_shows_a_refusal_like_any_approval_event(owners: People) -> None:
    """wire§6: ``approval.execution_refused`` is a log event like the others: the Timeline
    says it in words, with who refused and why, its type and actor in the line's JSON; the
    group page's overview lists the refused item with a link to its approval page (issue
    37 §1)."""
    item = gated(owners)
    wf.submit(
        owners.world.olga,
        owners.group,
        "approval.refuse_execution",
        {"work_item": item, "contract_revision": 1, "comment": "name the tables first"},
    )
    client = logged_in(owners.dash.maria)
    html = client.get(f"/groups/{owners.group}/timeline/").content.decode()
    event = element(html, "id", f"event-{wf.head(owners.group)}")
    assert "&quot;type&quot;: &quot;approval.execution_refused&quot;" in event
    assert "&quot;actor&quot;: &quot;user:olga&quot;" in event
    assert "name the tables first" in text(event)
    overview = client.get(f"/groups/{owners.group}/").content.decode()
    refused = element(overview, "id", f"attention-refused-{item}")
    assert "name the tables first" in text(refused)
    assert f"/groups/{owners.group}/work-items/{item}/approval/" in refused


# --- nothing typed is lost; plain words (issue 34 §3, §6) ---------------------------------------

#: what a person never reads outside technical details (issue 34 §6)
JARGON = re.compile(r"\bR\d+\.\d+-\d+\b|wire§|\b[A-Z]{2,}(?:_[A-Z]+)+\b|\b(?:user|agent):[a-z]")


def outside_details(html: str) -> str:
    html = re.sub(r'<details class="technical-details">.*?</details>', " ", html, flags=re.S)
    return text(re.sub(r"<script\b.*?</script>", " ", html, flags=re.S))


def test_a_comment_over_its_limit_is_stated_as_a_limit_and_kept_in_its_form(
    owners: People,
) -> None:
    """Issue 34 §6: a 22,000-character comment is "22,000 characters; at most 10,000", not
    "incomplete"; the page answers again with the whole comment in the form, which still
    can succeed once shortened. Nothing is appended."""
    item = gated(owners)
    html = screen(owners.world.olga, owners, item)
    comment = "y" * 22_000
    before = wf.head(owners.group)
    response = logged_in(owners.world.olga).post(
        url(owners, item, "approve/"), {**form_fields(html, f"approve:{item}"), "comment": comment}
    )
    assert response.status_code == 400
    page = response.content.decode()
    assert not_sent(page) == (
        "Nothing was recorded. Your comment on approving is 22,000 characters; at most 10,000. "
        "Shorten it and send it again."
    )
    assert f">{comment}</textarea>" in element(page, "data-form-key", f"approve:{item}")
    assert 'data-limit="10000"' in element(page, "id", "approve-comment")
    assert wf.head(owners.group) == before


def test_a_former_member_gets_a_page_with_the_comment_not_a_bare_404(owners: People) -> None:
    """Issue 34 §3, wire.md §4: petra's membership is revoked while the screen is open; her
    refusal is answered 404 with a page that says nothing was recorded and gives her reason
    back, naming nothing of the group or the item."""
    item = gated(owners)
    html = screen(owners.petra, owners, item)
    services.membership_revoke(
        group_id=owners.group, admin=owners.world.alice.caller, principal=owners.petra.principal
    )
    response = logged_in(owners.petra).post(
        url(owners, item, "refuse/"),
        {**form_fields(html, f"refuse:{item}"), "comment": "Name the tables it reads."},
    )
    assert response.status_code == 404
    page = response.content.decode()
    assert "You are not a member of this group" in not_sent(page)
    assert "Name the tables it reads.</textarea>" in page
    assert item not in outside_details(page)


def test_the_screen_has_no_protocol_words_outside_technical_details(owners: People) -> None:
    """Issue 34 §6: for an owner who may decide, a reviewer who may not, after a grant and
    after a refusal: names, not principals; no R-ID, wire§ or error code."""
    item = gated(owners)
    seen = [screen(owners.world.olga, owners, item), screen(owners.rita, owners, item)]
    wf.approve(owners.petra, owners.group, item)
    seen.append(screen(owners.petra, owners, item))
    wf.submit(
        owners.world.olga,
        owners.group,
        "approval.refuse_execution",
        {"work_item": item, "contract_revision": 1, "comment": "name the tables first"},
    )
    seen += [screen(owners.world.olga, owners, item), screen(owners.petra, owners, item)]
    for html in seen:
        found = JARGON.findall(outside_details(html))
        assert not found, found
