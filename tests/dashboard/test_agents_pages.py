"""The Agents screens (issue 37 §3): a card per agent of the group — its Agent Card's
capabilities and concurrency and its session (R11.1-11, R11.3-10), its Presence (R11.1-11),
the leases it holds now (R11.3-03), its last progress (R11.4-01) and its recent failures
(R11.4-08, R11.4-10) — and an agent's page with its WorkItems, paged; members only, and a
bounded number of queries however many agents and WorkItems the group holds."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.dashboard import agents
from apps.ledger.models import Event, GroupLog
from apps.registry.presence import report_presence
from tests.dashboard import workflows as wf
from tests.dashboard.agent_world import busy_world
from tests.dashboard.conftest import Dashboard, logged_in
from tests.dashboard.html import element, text
from tests.factories import agent, grant, unique

pytestmark = pytest.mark.django_db


def card_of(html: str, principal: str) -> str:
    return element(html, "data-agent", principal)


def test_a_cards_last_progress_of_work_since_submitted_says_it_is_done(dash: Dashboard) -> None:
    """R11.4-01: once the WorkItem is submitted, the report's "next checkpoint" says nothing
    any more: the card says that work is done, and in which state."""
    world = dash.world
    busy = busy_world(world)
    assert wf.submit_result(world, busy["running"], busy["lease"]).status == 201
    html = logged_in(dash.maria).get(f"/groups/{world.group}/agents/").content.decode()
    said = text(element(card_of(html, "agent:w2"), "data-field", "progress"))
    assert "drafting the summary" in said
    assert "that work is done (submitted)" in said
    assert "next checkpoint" not in said


def test_the_agents_pages_are_for_members_only(dash: Dashboard) -> None:
    """wire§4: a group the person is not a member of is 404, and so is an agent that is not a
    member of this group (an agent of the organisation that holds no role here), or no agent."""
    world = dash.world
    agent("w9", world.org)  # registered, in no group
    nina = logged_in(dash.nina)
    assert nina.get(f"/groups/{world.group}/agents/").status_code == 404
    assert nina.get(f"/groups/{world.group}/agents/w2/").status_code == 404
    assert nina.get(f"/groups/{world.group}/live/agents/").status_code == 404
    maria = logged_in(dash.maria)
    assert maria.get(f"/groups/{world.group}/agents/").status_code == 200
    assert maria.get(f"/groups/{world.group}/agents/w2/").status_code == 200
    assert maria.get(f"/groups/{world.group}/agents/w9/").status_code == 404
    assert maria.get(f"/groups/{world.group}/agents/nobody/").status_code == 404
    assert maria.get(f"/groups/{world.group}/agents/olga/").status_code == 404  # a person
    assert maria.get("/groups/elsewhere/agents/").status_code == 404


def test_a_card_shows_capabilities_session_presence_leases_progress_and_failures(
    dash: Dashboard,
) -> None:
    """R11.1-11, R11.3-10, R11.3-03, R11.4-01, R11.4-08, R11.4-10: everything an operator
    asks of an agent at a glance, in words, names not principals."""
    world = dash.world
    busy_world(world)
    html = logged_in(dash.maria).get(f"/groups/{world.group}/agents/").content.decode()
    w2 = card_of(html, "agent:w2")
    words = text(w2)
    assert "text.summarise" in words  # the Agent Card's capability
    assert "2 at once" in words  # its max_concurrency
    assert "its 1st, opened" in words  # the current session
    assert "2 of 3 slots free, gpu: 1 of 1 free, seen" in words  # Presence
    leases = element(w2, "data-field", "leases")
    assert "Draft the summary" in text(leases)
    assert "active" in text(leases)
    assert 'role="timer"' in leases
    assert "data-countdown=" in leases
    assert "drafting the summary" in text(element(w2, "data-field", "progress"))
    assert "Draft the summary" in text(element(w2, "data-field", "progress"))
    failures = text(element(w2, "data-field", "failures"))
    assert "Check the sources" in failures
    assert "An attempt failed: “c1: fail”; it tries again after a pause. Not before" in failures
    assert "Translate it" in failures
    assert "Failed: “the contract was wrong”. Failed by w1." in failures
    assert "1 active" in text(element(w2, "data-field", "counts"))
    assert "2 queued" in text(element(w2, "data-field", "counts"))  # the retry waits, queued
    # the coordinator w1 holds nothing and never reported
    w1 = text(card_of(html, "agent:w1"))
    assert "None: it is running nothing in this group." in w1
    assert "no report yet" in w1
    assert "No recent failures." in w1
    # the raw principal is in the technical details only
    assert "agent:w2" not in words.split("Technical details")[0]


def test_a_final_failure_by_the_agent_says_why_no_attempt_follows() -> None:
    """R11.4-10: the agent's own final failure says why retries ended."""
    payload = {
        "work_item": "wi-1",
        "lease_id": "l-1",
        "retries_exhausted": "attempts",
        "evidence": [{"result": {"verdict": "fail", "summary": "tests fail"}}],
    }
    assert agents.failure_reason(payload, final=True, by_owner=True) == (
        "Failed for good: “tests fail”; no attempts were left."
    )


def test_an_agents_page_lists_its_work_items_filtered_and_paged(
    dash: Dashboard, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its WorkItems across the group, each linking to the WorkItem page; "Working on now"
    narrows to what it holds; pages of ``ITEMS_PER_PAGE``."""
    world = dash.world
    made = busy_world(world)
    client = logged_in(dash.maria)
    html = client.get(f"/groups/{world.group}/agents/w2/").content.decode()
    assert "What w2 is doing now" in text(html)
    for key in ("running", "retried", "ended", "queued"):
        assert f'href="/groups/{world.group}/work-items/{made[key]}/"' in html
    now = client.get(f"/groups/{world.group}/agents/w2/?show=now").content.decode()
    table = element(now, "class", "table agent-items__table")
    assert made["running"] in table
    assert made["queued"] not in table
    failed = client.get(f"/groups/{world.group}/agents/w2/?show=failed").content.decode()
    assert made["ended"] in element(failed, "class", "table agent-items__table")
    monkeypatch.setattr(agents, "ITEMS_PER_PAGE", 2)
    paged = client.get(f"/groups/{world.group}/agents/w2/?page=2").content.decode()
    assert "Page 2 of 2" in text(paged)


def test_links_lead_to_the_agents_pages(dash: Dashboard) -> None:
    """From the group page's header, the members page's agent rows and a WorkItem's owner."""
    world = dash.world
    item = wf.queued(world, wf.mission(world))
    client = logged_in(dash.maria)
    group_page = client.get(f"/groups/{world.group}/").content.decode()
    assert f'href="/groups/{world.group}/agents/"' in group_page
    members = client.get(f"/groups/{world.group}/members/").content.decode()
    assert f'href="/groups/{world.group}/agents/w2/"' in element(
        members, "data-principal", "agent:w2"
    )
    item_page = client.get(f"/groups/{world.group}/work-items/{item}/").content.decode()
    assert f'href="/groups/{world.group}/agents/w2/"' in element(item_page, "data-field", "owner")


def test_the_agents_page_costs_the_same_queries_however_many_agents_and_items(
    dash: Dashboard,
) -> None:
    """The cards are a fixed number of indexed reads: more agents, leases, failures and
    WorkItems cost no more queries."""
    world = dash.world
    busy_world(world)
    client = logged_in(dash.maria)
    client.get(f"/groups/{world.group}/agents/")
    with CaptureQueriesContext(connection) as few:
        client.get(f"/groups/{world.group}/agents/")
    busy_world(world)
    for n in range(3):
        extra = agent(unique(f"w{n}"), world.org)
        grant(world.alice, world.group, extra, "worker")
        extra.open_session()
        report_presence(extra.id, {"slots": 1, "slots_free": 1})
    with CaptureQueriesContext(connection) as many:
        html = client.get(f"/groups/{world.group}/agents/").content.decode()
    assert html.count('class="card agent-card"') == 5
    assert len(many) == len(few), [q["sql"][:120] for q in many.captured_queries]


def test_an_agent_that_sends_no_presence_is_last_seen_at_its_latest_command(
    dash: Dashboard,
) -> None:
    """R11.1-11: a coordinator sends commands, not Presence; its card's "last seen" is its
    newest event among the group's recent ones (it said "18 min ago", the session's opening,
    for a coordinator that had just sent a command). One query, over a range of the log."""
    world = dash.world
    agent_w9 = agent("w9", world.org)
    grant(world.alice, world.group, agent_w9, "worker")  # a member that has sent nothing
    wf.mission(world)  # w1, the coordinator, creates a mission
    newest = Event.objects.filter(group_id=world.group, actor="agent:w1").latest("sequence")
    views = {view.principal: view for view in agents.cards(world.group)}
    assert views["agent:w1"].acted_at == newest.recorded_at
    assert views["agent:w1"].last_seen == newest.recorded_at
    assert views["agent:w9"].acted_at is None
    # outside the window the log is not read: the other signs of life stand alone
    ahead = newest.sequence + agents.RECENT_ACTIVITY
    GroupLog.objects.filter(group_id=world.group).update(head_sequence=ahead)
    assert agents.cards(world.group, only="agent:w1")[0].acted_at is None
