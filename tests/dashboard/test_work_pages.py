"""The work pages through Django's test client: a group's missions and WorkItems, one
WorkItem's page, the items waiting for an execution approval, and granting that approval
from the dashboard through the one write path.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from apps.ledger.models import Event
from tests.dashboard import workflows as wf
from tests.dashboard.conftest import Dashboard, logged_in
from tests.dashboard.html import element, text
from tests.dashboard.plain_words import jargon_in, visible_text
from tests.factories import HumanPersona, grant, human, unique

pytestmark = pytest.mark.django_db


@dataclass
class Owners:
    dash: Dashboard
    petra: HumanPersona  # a second mission_owner

    @property
    def group(self) -> str:
        return self.dash.world.group


@pytest.fixture
def owners(dash: Dashboard) -> Owners:
    petra = human("petra")
    grant(dash.world.alice, dash.world.group, petra, "mission_owner")
    return Owners(dash, petra)


def page(client: Client, path: str) -> str:
    response = client.get(path)
    assert response.status_code == 200, response.status_code
    return response.content.decode()


def approve_form(html: str, item: str) -> dict[str, str]:
    """The hidden fields of the approval form that ``html`` shows for ``item``."""
    form = element(html, "data-form-key", f"approve:{item}")
    return dict(re.findall(r'<input type="hidden" name="([a-z_]+)" value="([^"]*)"', form))


def post_approval(client: Client, owners: Owners, item: str, **fields: object) -> str:
    """POST the form (following the redirect) and return the page it leads back to."""
    data = {"comment": "looks safe", **fields}
    response = client.post(f"/groups/{owners.group}/work-items/{item}/approve/", data, follow=True)
    assert response.redirect_chain, "the form answers with a redirect (post/redirect/get)"
    assert response.redirect_chain[0][1] == 302
    return response.content.decode()


def refused_approval(
    client: Client, owners: Owners, item: str, status: int, **fields: object
) -> tuple[str, str]:
    """POST the form the server will not take: the approval screen answers in place of a
    redirect (``status``), with the comment back. Its not-sent box's words and the box."""
    data = {"comment": "looks safe", **fields}
    response = client.post(f"/groups/{owners.group}/work-items/{item}/approve/", data)
    assert response.status_code == status, response.status_code
    html = response.content.decode()
    assert "looks safe</textarea>" in html  # in its form, or beside the reason to copy
    box = element(html, "id", "not-sent")
    words = re.sub(r'<details class="technical-details">.*?</details>', " ", box, flags=re.S)
    return visible_text(words), box


def flash(html: str) -> str:
    return text(element(html, "id", "flash"))


def grants(group: str) -> list[dict[str, object]]:
    return [
        json.loads(document)
        for document in Event.objects.filter(
            group_id=group, type="approval.execution_granted"
        ).values_list("document", flat=True)
    ]


# --- the group page -------------------------------------------------------------------------


def test_group_page_shows_the_newest_missions_as_rows_and_each_item_on_its_page(
    owners: Owners,
) -> None:
    """wire§4 work-items, R10.2, R10.3, R10.4: the group page lists the newest missions, each
    with its WorkItems counted by state; a WorkItem's state, revision, owner, ownership epoch,
    offers and dependencies are on its own page, linked from the WorkItem list."""
    world = owners.dash.world
    m1 = wf.mission(world)
    base = wf.queued(world, m1)
    waiting = wf.authorize(world, m1, depends_on=(base,))
    offered = wf.authorize(world, m1)
    wf.offer(world, offered)
    m2 = wf.mission(world)
    client = logged_in(owners.dash.maria)

    html = page(client, f"/groups/{owners.group}/")
    row = text(element(html, "data-mission", m1))
    assert "0 of 3 WorkItems finished" in row
    assert "1 open" in row and "1 offered" in row and "1 queued" in row  # noqa: PT018
    assert "No WorkItems yet" in text(element(html, "data-mission", m2))
    assert html.index(f'data-mission="{m2}"') < html.index(f'data-mission="{m1}"')  # newest first

    listed = page(client, f"/groups/{owners.group}/work-items/?mission={m1}")
    assert re.findall(r'id="item-row-([^"]+)"', listed) == [offered, waiting, base]
    assert f'href="/groups/{owners.group}/work-items/{base}/"' in listed
    body = page(client, f"/groups/{owners.group}/work-items/{base}/")
    assert "rev 1" in text(body) or "revision 1" in text(body)
    assert "w2 · accepted" in text(element(body, "data-field", "offers"))
    assert "agent:" not in text(element(body, "data-field", "offers"))
    dependent = page(client, f"/groups/{owners.group}/work-items/{waiting}/")
    # the dependency is named by its goal (the example contract's), its link its id
    depends_on = element(dependent, "data-field", "depends_on")
    assert "Summarise the incident reports of November queued" in text(depends_on)
    assert f'href="/groups/{owners.group}/work-items/{base}/"' in depends_on


def test_the_approval_queue_partial_is_the_same_section_alone_for_live_refreshes(
    owners: Owners,
) -> None:
    """wire§7, R16-09: ``GET /groups/<g>/approval-queue/`` renders only the approval queue
    (what the page swaps in when events arrive), with the current state."""
    world = owners.dash.world
    item = wf.queued(world, wf.mission(world), contract=wf.gated_contract(approvals=2))
    client = logged_in(owners.dash.maria)
    before = page(client, f"/groups/{owners.group}/approval-queue/").strip()
    assert before.startswith("{#") is False
    assert element(before, "id", "approval-queue").strip() == before[before.index("<section") :]
    assert "0 of 2 approvals" in text(element(before, "data-work-item", item))

    wf.approve(owners.petra, world.group, item)
    after = page(client, f"/groups/{owners.group}/approval-queue/")
    assert "1 of 2 approvals" in text(element(after, "data-work-item", item))


def test_a_child_mission_is_linked_from_its_parent_work_item_and_back(owners: Owners) -> None:
    """R10.2-15, R10.4-06: a WorkItem blocked on a child mission links to it, and the child
    mission links back to the WorkItem it unblocks."""
    world = owners.dash.world
    parent = wf.mission(world)
    item = wf.authorize(world, parent)
    child = unique("m-child")
    wf.submit(
        world.w1,
        world.group,
        "mission.create_child",
        {
            "work_item": item,
            "child": {"mission": child, "group": world.group, "goal": "Dig", "budgets": {}},
            "failure_policy": "block_parent",
        },
    )
    client = logged_in(owners.dash.maria)
    html = page(client, f"/groups/{owners.group}/work-items/{item}/")
    assert "state--blocked" in element(html, "data-field", "state")
    link = element(html, "data-field", "child")
    # named by its goal, its failure policy in words (it read "on failure: block_parent")
    assert text(link) == "Dig running if it fails, this WorkItem stays blocked"
    assert jargon_in(html) == []
    assert f"/groups/{owners.group}/missions/{child}/" in link
    child_page = page(client, f"/groups/{owners.group}/missions/{child}/")
    assert f'href="/groups/{owners.group}/work-items/{item}/"' in child_page
    waiting = text(element(html, "data-field", "waiting-for-child"))
    assert waiting == (
        "Waiting for its child mission “Dig”: this WorkItem goes on when that mission ends."
    )

    # R10.2-16: the child's work all verified, its final approval is the one step left
    wf.verified_item(world, child)
    html = page(client, f"/groups/{owners.group}/work-items/{item}/")
    waiting = element(html, "data-field", "waiting-for-child")
    assert "its work is all done; it waits for its final approval" in text(waiting)
    assert f'href="/groups/{owners.group}/missions/{child}/final-approval/"' in waiting
    assert jargon_in(html) == []


# --- one WorkItem -----------------------------------------------------------------------------


def test_work_item_page_shows_contract_budgets_offers_lease_history_and_conversation(
    owners: Owners,
) -> None:
    """wire§4 work-items/{id}, R10.1-01, R10.2-02: the contract (goal, criteria, risk, budgets
    used against limits), the offers, the lease, the history linking into the log, and the
    messages posted about the item."""
    world = owners.dash.world
    item = wf.queued(world, wf.mission(world))
    lease = wf.start(world, item)
    wf.submit(
        world.w2,
        world.group,
        "work.usage",
        {"work_item": item, "lease_id": lease, "usage": {"tokens": 1500, "money": 0.25}},
    )
    asked = wf.submit(
        world.w2,
        world.group,
        "work.message",
        {"work_item": item, "text": "Which month exactly?", "essential": True},
    )
    question = asked.body["result"]["message"]

    html = page(logged_in(owners.dash.maria), f"/groups/{owners.group}/work-items/{item}/")

    body = element(html, "id", "work-item-body")
    assert "active" in text(element(body, "data-field", "state"))
    assert "Summarise the incident reports of November" in body
    assert "Covers every report" in body
    assert "human review" in text(body)
    assert "no execution approval needed" in text(element(body, "data-field", "risk"))
    own = element(body, "data-budget", f"work_item:{item}")
    assert text(element(own, "data-dimension", "tokens")) == "tokens 1,500 200,000 0.8%"
    assert text(element(own, "data-dimension", "money")) == "money 0.25 5 5%"
    assert "w2 · accepted" in text(element(body, "data-field", "offers"))
    lease_text = text(element(body, "data-field", "lease"))
    assert "active" in lease_text
    assert "w2" in visible_text(element(body, "data-field", "lease"))
    # the lease id and the raw principal are for the collapsed technical details
    assert lease in text(element(body, "id", "lease"))
    assert lease not in visible_text(element(body, "id", "lease"))
    conversation = element(body, "id", f"message-{question}")
    assert "Which month exactly?" in conversation
    assert "open question" in text(conversation)
    history = element(body, "aria-label", "History")
    sequences = [int(s) for s in re.findall(r'<li data-sequence="(\d+)"', history)]
    assert sequences == sorted(sequences, reverse=True)
    assert len(sequences) == 6
    newest = sequences[0]
    # issue 37 §2: into the Timeline, filtered to the WorkItem, the event on top
    assert (
        f'href="/groups/{owners.group}/timeline/?work_item={item}&amp;before={newest + 1}'
        f'#event-{newest}"'
    ) in history
    # the event's type is not read, not even on hover: its line in the Timeline (linked) has
    # it in the technical details
    assert 'data-type="work.message_posted"' in history
    assert "work.message_posted" not in visible_text(history)
    # its own page names it "this WorkItem", not by the goal its title already shows
    said = visible_text(history)
    assert "wrote on this WorkItem" in said or "asked a question on this WorkItem" in said


def test_the_timeline_link_of_a_history_entry_lands_on_that_event(owners: Owners) -> None:
    """wire§6: ``?before=N+1#event-N`` is a page of the log whose newest event is #N (the
    group page sends it on to the Timeline, issue 37 §1)."""
    world = owners.dash.world
    wf.queued(world, wf.mission(world))
    sequence = wf.head(owners.group) - 1
    response = logged_in(owners.dash.maria).get(
        f"/groups/{owners.group}/?before={sequence + 1}", follow=True
    )
    assert response.status_code == 200
    html = response.content.decode()
    first = re.search(r'id="event-(\d+)"\s+data-sequence="(\d+)"', html)
    assert first is not None
    assert first.group(2) == str(sequence)


def test_unknown_work_items_and_non_members_get_404(owners: Owners) -> None:
    """wire§2, wire§4: a page never reveals what a person may not see."""
    world = owners.dash.world
    item = wf.queued(world, wf.mission(world), contract=wf.gated_contract())
    member = logged_in(owners.dash.maria)
    assert member.get(f"/groups/{owners.group}/work-items/nope/").status_code == 404
    for path in ("/groups/g-nowhere/work/", f"/groups/g-nowhere/work-items/{item}/"):
        assert member.get(path).status_code == 404, path
    nina = logged_in(owners.dash.nina)
    before = wf.head(owners.group)
    for path in (
        f"/groups/{owners.group}/work/",
        f"/groups/{owners.group}/work-items/{item}/",
        f"/groups/{owners.group}/work-items/{item}/section/",
    ):
        assert nina.get(path).status_code == 404, path
    response = nina.post(
        f"/groups/{owners.group}/work-items/{item}/approve/",
        {"contract_revision": 1, "comment": ""},
    )
    assert response.status_code == 404
    assert wf.head(owners.group) == before


def test_anonymous_visitors_are_sent_to_log_in(owners: Owners) -> None:
    """wire§2: dashboard actions need a logged-in person."""
    path = f"/groups/{owners.group}/work-items/x/approve/"
    response = Client().post(path, {"contract_revision": 1})
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


# --- waiting for approval ---------------------------------------------------------------------


def test_waiting_for_approval_lists_queued_gated_items_short_of_approvals(owners: Owners) -> None:
    """R10.2-06: queued items whose contract requires execution approval and that have fewer
    grants than required for the current revision; not ungated, not yet queued, not
    sufficiently approved ones."""
    world = owners.dash.world
    m = wf.mission(world)
    short = wf.queued(world, m, contract=wf.gated_contract(2))
    wf.approve(world.olga, owners.group, short)
    ungated = wf.queued(world, m)
    enough = wf.queued(world, m, contract=wf.gated_contract(1))
    wf.approve(world.olga, owners.group, enough)
    offered = wf.authorize(world, m, contract=wf.gated_contract(1))
    wf.offer(world, offered)

    html = page(logged_in(owners.petra), f"/groups/{owners.group}/")
    queue = element(html, "id", "approval-queue")
    assert re.findall(r'class="approval-item" data-work-item="([^"]+)"', queue) == [short]
    entry = text(element(queue, "data-work-item", short))
    assert "1 of 2 approvals" in entry
    assert "approved by olga" in entry
    assert "risk high" in entry
    for other in (ungated, enough, offered):
        assert f'data-work-item="{other}"' not in queue
    listed = page(logged_in(owners.petra), f"/groups/{owners.group}/work-items/?mission={m}")
    assert "1 of 1 approval" in text(element(listed, "data-work-item", enough))


def test_a_mission_owner_grants_execution_from_the_form(owners: Owners) -> None:
    """R10.2-06, wire§3: the form submits ``approval.grant_execution`` as user:<name> with the
    current membership epoch; the event is appended and the page confirms it."""
    world = owners.dash.world
    item = wf.queued(world, wf.mission(world), contract=wf.gated_contract(2))
    client = logged_in(owners.petra)
    form = approve_form(page(client, f"/groups/{owners.group}/"), item)
    assert form["contract_revision"] == "1"
    assert form["next"] == f"/groups/{owners.group}/"

    html = post_approval(client, owners, item, **form, comment="Low blast radius")

    [granted] = grants(owners.group)
    assert granted["actor"] == "user:petra"
    assert granted["payload"] == {
        "work_item": item,
        "contract_revision": 1,
        "comment": "Low blast radius",
    }
    assert granted["command_id"] == form["command_id"]
    assert (
        "Approved revision 1 of “Summarise the incident reports of November”: 1 of 2 approvals."
        in flash(html)
    )
    queue = element(html, "id", "approval-queue")
    assert "1 of 2 approvals" in text(element(queue, "data-work-item", item))
    assert "You approved revision 1" in text(element(queue, "data-work-item", item))
    assert 'data-form-key="approve:' + item not in queue  # no second form for petra


def test_the_last_required_grant_takes_the_item_off_the_waiting_list(owners: Owners) -> None:
    """R10.2-06: once enough distinct mission owners granted it, the item may start."""
    world = owners.dash.world
    item = wf.queued(world, wf.mission(world), contract=wf.gated_contract(2))
    wf.approve(world.olga, owners.group, item)
    client = logged_in(owners.petra)
    form = approve_form(page(client, f"/groups/{owners.group}/"), item)
    html = post_approval(client, owners, item, **form)
    assert "2 of 2 approvals" in flash(html)
    assert f'data-work-item="{item}"' not in element(html, "id", "approval-queue")
    wf.start(world, item)  # the gate is open
    assert wf.state_of(owners.group, item) == "active"


def test_a_resubmitted_form_is_an_idempotent_replay(owners: Owners) -> None:
    """wire§3 step 5: the form carries its command id, so a double submission appends once."""
    world = owners.dash.world
    item = wf.queued(world, wf.mission(world), contract=wf.gated_contract(2))
    client = logged_in(owners.petra)
    form = approve_form(page(client, f"/groups/{owners.group}/"), item)
    post_approval(client, owners, item, **form)
    again = post_approval(client, owners, item, **form)
    assert len(grants(owners.group)) == 1
    assert "1 of 2 approvals" in flash(again)


def test_the_form_is_on_the_work_item_page_too_and_returns_there(owners: Owners) -> None:
    """R10.2-06: the WorkItem page shows its approvals and, to a mission owner, the form."""
    world = owners.dash.world
    item = wf.queued(world, wf.mission(world), contract=wf.gated_contract(2))
    client = logged_in(owners.petra)
    path = f"/groups/{owners.group}/work-items/{item}/"
    form = approve_form(page(client, path), item)
    assert form["next"] == path
    response = client.post(f"{path}approve/", {**form, "comment": ""}, follow=True)
    assert response.redirect_chain[-1][0] == path
    html = response.content.decode()
    approvals = element(html, "id", "approvals")
    assert "1 of 2 approvals" in text(approvals)
    assert "petra approved revision 1" in text(approvals)
    assert "user:petra" not in visible_text(approvals)


@pytest.mark.parametrize("attempt", ["self", "duplicate", "stale"])
def test_refusals_are_shown_with_their_code_and_append_nothing(
    owners: Owners, attempt: str
) -> None:
    """R10.2-06, R10.1-05: the requester's own approval (SELF_APPROVAL), a second approval by
    the same person (DUPLICATE_APPROVAL), and a form from before the contract changed
    (STALE_REVISION) are refused: the page says why in words, the code and the rule in its
    collapsed technical details, and the log is unchanged."""
    world = owners.dash.world
    m = wf.mission(world)
    if attempt == "self":
        proposal = unique("p")
        wf.submit(
            world.olga, owners.group, "work.propose", {"proposal": proposal, "title": "Please"}
        )
        item = wf.queued(world, m, contract=wf.gated_contract(2), proposal=proposal)
        client = logged_in(world.olga)
        html = page(client, f"/groups/{owners.group}/")
        note = text(element(element(html, "id", "approval-queue"), "data-work-item", item))
        assert "You asked for this item" in note  # so the page offers no form
        form = {"contract_revision": "1"}
        code = "SELF_APPROVAL"
    elif attempt == "duplicate":
        item = wf.queued(world, m, contract=wf.gated_contract(2))
        client = logged_in(owners.petra)
        form = approve_form(page(client, f"/groups/{owners.group}/"), item)
        post_approval(client, owners, item, **form)
        form = {"contract_revision": "1"}  # a page left open in another tab: a new command
        code = "DUPLICATE_APPROVAL"
    else:
        item = wf.queued(world, m, contract=wf.gated_contract(2))
        client = logged_in(owners.petra)
        form = approve_form(page(client, f"/groups/{owners.group}/"), item)  # revision 1
        wf.revise_contract(world, item, "Summarise the incident reports of December")
        code = "STALE_REVISION"

    before = wf.head(owners.group)
    granted_before = len(grants(owners.group))
    status = 403 if attempt == "self" else 409  # wire.md §8: SELF_APPROVAL is 403
    said, box = refused_approval(client, owners, item, status, **form)

    assert wf.head(owners.group) == before
    assert len(grants(owners.group)) == granted_before
    assert 'role="alert"' in box
    assert said.startswith("Nothing was recorded. ")
    assert code not in said
    technical = element(box, "class", "technical-details")
    assert code in text(technical)
    assert "R10." in text(technical)


def test_people_who_are_not_mission_owners_see_no_form_and_are_refused(owners: Owners) -> None:
    """R10.2-06, wire§9 roles: an observer sees the waiting item but no form; a POST anyway
    is refused by the write path with FORBIDDEN and nothing is appended."""
    world = owners.dash.world
    item = wf.queued(world, wf.mission(world), contract=wf.gated_contract(2))
    client = logged_in(owners.dash.maria)
    html = page(client, f"/groups/{owners.group}/")
    queue = element(html, "id", "approval-queue")
    assert f'data-work-item="{item}"' in queue
    assert "<form" not in queue
    assert "<form" not in element(
        page(client, f"/groups/{owners.group}/work-items/{item}/"), "id", "approvals"
    )

    before = wf.head(owners.group)
    said, box = refused_approval(client, owners, item, 403, contract_revision="1")
    assert wf.head(owners.group) == before
    assert grants(owners.group) == []
    assert "Only mission owners can approve or refuse an execution" in said
    assert "FORBIDDEN" in text(element(box, "class", "technical-details"))


def test_an_incomplete_form_is_refused_as_malformed(owners: Owners) -> None:
    """wire§1: without the revision the page showed there is nothing to approve."""
    world = owners.dash.world
    item = wf.queued(world, wf.mission(world), contract=wf.gated_contract(2))
    before = wf.head(owners.group)
    said, _ = refused_approval(logged_in(owners.petra), owners, item, 400)
    assert wf.head(owners.group) == before
    assert said == "Nothing was recorded. The page was out of date: reload it and try again."


def test_a_post_without_the_csrf_token_is_refused(owners: Owners) -> None:
    """The approval form is CSRF-protected: another site cannot make a mission owner grant."""
    world = owners.dash.world
    item = wf.queued(world, wf.mission(world), contract=wf.gated_contract(2))
    client = Client(enforce_csrf_checks=True)
    client.force_login(get_user_model().objects.get(username=owners.petra.username))
    before = wf.head(owners.group)
    response = client.post(
        f"/groups/{owners.group}/work-items/{item}/approve/", {"contract_revision": 1}
    )
    assert response.status_code == 403
    assert wf.head(owners.group) == before


def test_the_form_only_returns_to_pages_of_this_site(owners: Owners) -> None:
    """An approval form cannot be made to redirect elsewhere (open redirect)."""
    world = owners.dash.world
    item = wf.queued(world, wf.mission(world), contract=wf.gated_contract(2))
    response = logged_in(owners.petra).post(
        f"/groups/{owners.group}/work-items/{item}/approve/",
        {"contract_revision": 1, "next": "https://evil.example/"},
    )
    assert response.status_code == 302
    assert response["Location"] == f"/groups/{owners.group}/work-items/{item}/approval/"


def test_pages_below_a_mission_name_it_by_its_goal_in_their_breadcrumbs(owners: Owners) -> None:
    """People know a mission by its goal: the WorkItem page, its approval and cancel pages
    and the mission's final approval and graph name it so in the breadcrumb (the id is in
    the link), never by its id alone."""
    world = owners.dash.world
    m = wf.mission(world, goal="Compare the pricing of our three competitors")
    item = wf.queued(world, m, contract=wf.gated_contract(1))
    client = logged_in(owners.petra)
    base = f"/groups/{owners.group}"
    for path in (
        f"{base}/work-items/{item}/",
        f"{base}/work-items/{item}/approval/",
        f"{base}/work-items/{item}/cancel/",
        f"{base}/missions/{m}/final-approval/",
        f"{base}/missions/{m}/graph/",
    ):
        crumbs = element(page(client, path), "class", "crumbs")
        link = f'<a href="{base}/missions/{m}/">Compare the pricing of our three competitors</a>'
        assert link in crumbs, path
