"""The WorkItem page's execution over time, with items brought into each state through the one
write path: the current lease and its countdown, renewals, the closed leases and how each
ended, budgets of the item and of every mission a charge reaches, late results kept for
audit, a retry waiting for its backoff and the last checkpoint.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import Any

import pytest

from apps.dashboard.templatetags.dashboard import wire_time
from apps.dashboard.work_item_cards import BudgetLine, Countdown
from apps.ledger.models import Event
from missionweave.protocol.examples import example_contract
from missionweave.protocol.timefmt import parse_timestamp
from tests.dashboard import workflows as wf
from tests.dashboard.conftest import Dashboard, logged_in
from tests.dashboard.html import element, text
from tests.factories import grant, group, now_text, unique


def item_page(dash: Dashboard, item: str) -> str:
    response = logged_in(dash.maria).get(f"/groups/{dash.world.group}/work-items/{item}/")
    assert response.status_code == 200
    return element(response.content.decode(), "id", "work-item-body")


def attribute(html: str, name: str) -> str:
    match = re.search(rf'{name}="([^"]*)"', html)
    assert match is not None, f"no {name} in {html[:200]}"
    return match.group(1)


def events_of(group: str, item: str, type_: str) -> list[dict[str, object]]:
    documents = Event.objects.filter(group_id=group, type=type_).values_list("document", flat=True)
    return [
        document
        for document in (json.loads(text) for text in documents)
        if document["payload"]["work_item"] == item
    ]


# --- the current lease ------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_lease_card_shows_holder_epoch_id_status_start_renewals_and_a_countdown(
    dash: Dashboard,
) -> None:
    """R11.3-03: the active lease names its holder (the agent, by name), its status, when it
    started and when it expires, its id and epochs in the collapsed technical details (issue
    34 §6); the expiry is a countdown the browser
    writes and ticks (the target and the server's clock in data attributes: the words are
    ``countdown.js``'s alone, see the browser tests); renewals are counted."""
    world = dash.world
    item = wf.queued(world, wf.mission(world))
    lease = wf.start(world, item, lease_ttl_s=600)
    wf.renew(world, item, lease, lease_ttl_s=900)
    expires_at = wf.renew(world, item, lease, lease_ttl_s=900)

    body = item_page(dash, item)

    card = element(body, "id", "lease")
    current = element(card, "data-field", "lease")
    assert text(element(current, "data-field", "holder")) == "w2"
    technical = text(element(card, "class", "technical-details"))
    assert f"lease {lease}" in technical
    assert "holder agent:w2" in technical
    assert "ownership epoch 1" in technical
    assert text(element(current, "data-field", "lease-status")) == "active"
    assert text(element(current, "data-field", "renewals")) == "2"
    [_, renewed] = events_of(world.group, item, "lease.renewed")
    assert f"renewals 2 last {wire_time(renewed['recorded_at'])}" in text(current)
    [started] = events_of(world.group, item, "work.started")
    assert f'datetime="{started["payload"]["lease"]["started_at"]}"' in current
    countdown = element(current, "data-field", "expiry")
    assert attribute(countdown, "data-countdown") == expires_at
    assert attribute(countdown, "datetime") == expires_at
    assert attribute(countdown, "role") == "timer"
    assert attribute(countdown, "data-passed-text") == "expired"
    server_now = parse_timestamp(attribute(countdown, "data-server-now"))
    assert 0 < (parse_timestamp(expires_at) - server_now).total_seconds() <= 900
    assert text(element(current, "data-field", "expires-at")) == wire_time(expires_at)
    assert text(countdown) == ""  # without scripts the absolute time above reads alone
    assert "data-passed" not in countdown.replace("data-passed-text", "")
    assert "attempts 1 of 3 reassignments 0" in text(element(card, "data-field", "attempts"))
    assert "Earlier leases 0 None." in text(card)
    assert "No checkpoint yet" in text(element(card, "data-field", "checkpoint"))


@pytest.mark.django_db
def test_the_live_section_brings_the_renewed_expiry_and_the_page_follows_its_budgets(
    dash: Dashboard,
) -> None:
    """wire§7, R16-09: the section the page swaps in on events carries the new expiry after a
    ``lease.renew``; the page's stream data lists the families it follows (usage reconciled
    offline is an ``ext.`` event, R11.5-12) and the missions whose budgets it shows."""
    world = dash.world
    parent = wf.mission(world)
    mission = wf.mission(world, parent=parent)
    item = wf.queued(world, mission)
    lease = wf.start(world, item, lease_ttl_s=60)
    client = logged_in(dash.maria)
    section = f"/groups/{world.group}/work-items/{item}/section/"
    before = element(client.get(section).content.decode(), "data-field", "expiry")

    expires_at = wf.renew(world, item, lease, lease_ttl_s=3600)

    html = client.get(section).content.decode()
    assert html.strip().startswith('<div class="item-page" id="work-item-body"')
    after = element(html, "data-field", "expiry")
    assert attribute(after, "data-countdown") == expires_at != attribute(before, "data-countdown")
    assert text(element(html, "data-field", "expires-at")) == wire_time(expires_at)
    assert text(after) == ""  # the page's script writes the words the moment it swaps it in
    assert text(element(html, "data-field", "renewals")) == "1"

    page = client.get(f"/groups/{world.group}/work-items/{item}/").content.decode()
    stream = json.loads(element(page, "id", "work-item-data").split(">", 1)[1].rsplit("<", 1)[0])
    assert "lease" in stream["families"]
    assert "ext" in stream["families"]
    assert stream["mission"] == mission
    assert stream["missions"] == [mission, parent]
    assert "dashboard/work-item-page.js" in page


# --- budgets up the ancestry --------------------------------------------------------------------


@pytest.mark.django_db
def test_budgets_show_the_item_its_mission_and_each_ancestor_used_against_their_limits(
    dash: Dashboard,
) -> None:
    """R10.1-01(g), R11.5-12, wire§10: a charge counts against the item, its mission and every
    same-group ancestor; each shows all six dimensions, used against the limit as a share
    (a labelled ``<progress>``), or "unlimited" when it has none. A sibling's charge shows in
    the missions' budgets, not in the item's."""
    world = dash.world
    top = wf.mission(world, budgets={"money": 10, "tokens": 1_000_000})
    mission = wf.mission(world, parent=top, budgets={"money": 5.0, "tokens": 200_000})
    item = wf.queued(world, mission)
    sibling = wf.queued(world, mission)
    wf.use(world, item, wf.start(world, item), tokens=3000, money=0.25, tool_calls=3)
    wf.use(world, sibling, wf.start(world, sibling), tokens=1000)

    body = element(item_page(dash, item), "id", "budgets")

    tables = re.findall(r'<table class="table budgets[^"]*" data-budget="([^"]+)"', body)
    assert tables == [f"work_item:{item}", f"mission:{mission}", f"mission:{top}"]
    own = element(body, "data-budget", f"work_item:{item}")
    assert "<caption>this WorkItem <code>" + item in own
    rows = {
        dimension: text(element(own, "data-dimension", dimension))
        for dimension in ("money", "tokens", "tool_calls", "compute", "wall_clock", "side_effects")
    }
    assert rows == {
        "money": "money 0.25 5 5%",
        "tokens": "tokens 3,000 200,000 1.5%",
        "tool_calls": "tool calls 3 100 3%",
        "compute": "compute 0 s 3,600 s 0%",
        "wall_clock": "wall clock 0 s 7,200 s 0%",
        "side_effects": "side effects 0 0 0%",
    }
    bar = element(own, "data-dimension", "tokens")
    assert '<progress max="100" value="1.5"' in bar
    assert f'aria-label="tokens of this WorkItem {item}: 3,000 of 200,000 used"' in bar

    own_mission = element(body, "data-budget", f"mission:{mission}")
    assert "<caption>its mission <code>" + mission in own_mission
    assert text(element(own_mission, "data-dimension", "tokens")) == "tokens 4,000 200,000 2%"
    assert text(element(own_mission, "data-dimension", "money")) == "money 0.25 5 5%"
    unlimited = element(own_mission, "data-dimension", "tool_calls")
    assert text(unlimited) == "tool calls 3 unlimited —"
    assert "<progress" not in unlimited

    ancestor = element(body, "data-budget", f"mission:{top}")
    assert "<caption>ancestor mission <code>" + top in ancestor
    assert text(element(ancestor, "data-dimension", "tokens")) == "tokens 4,000 1,000,000 0.4%"
    assert text(element(ancestor, "data-dimension", "money")) == "money 0.25 10 2.5%"
    assert text(element(ancestor, "data-dimension", "compute")) == "compute 0 s unlimited —"


@pytest.mark.django_db
def test_the_budget_chain_stops_at_a_parent_in_another_group(
    dash: Dashboard, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    """R10.4-05, R10.4-06, R11.5-12: a child mission created in another group has its own
    budget; the page of a WorkItem under it shows that mission and says where the chain
    stops, without reaching into the parent's group."""
    world = dash.world
    other = "g-child"
    group(other, world.org)
    grant(world.alice, other, world.w1, "coordinator")
    grant(world.alice, other, dash.maria, "observer")
    parent_mission = wf.mission(world)
    parent_item = wf.authorize(world, parent_mission)
    child = unique("m-child")
    with django_capture_on_commit_callbacks(execute=True):  # the link's follow-up command
        wf.submit(
            world.w1,
            world.group,
            "mission.create_child",
            {
                "work_item": parent_item,
                "child": {"mission": child, "group": other, "goal": "Dig", "budgets": {"money": 2}},
                "failure_policy": "block_parent",
            },
        )
    item = unique("wi")
    wf.submit(
        world.w1,
        other,
        "work.authorize",
        {"work_item": item, "mission": child, "contract": example_contract(), "depends_on": []},
    )

    response = logged_in(dash.maria).get(f"/groups/{other}/work-items/{item}/")
    budgets = element(response.content.decode(), "id", "budgets")

    tables = re.findall(r'data-budget="([^"]+)"', budgets)
    assert tables == [f"work_item:{item}", f"mission:{child}"]
    assert text(element(budgets, "data-budget", f"mission:{child}")).count("unlimited") == 5
    assert f"The chain stops at <code>{world.group}/{parent_mission}</code>: a parent" in budgets


def test_budget_lines_handle_no_limit_a_zero_limit_and_an_overrun() -> None:
    """wire§10: an absent limit is unlimited; a limit of 0 allows nothing; the bar stops at
    full while the label says how far over it is."""
    assert BudgetLine("money", 3, None).percent is None
    assert BudgetLine("money", 3, None).percent_label == ""
    assert BudgetLine("side_effects", 0, 0).percent_label == "0%"
    assert BudgetLine("side_effects", 1, 0).exceeded
    over = BudgetLine("tokens", 150, 100)
    assert (over.exceeded, over.bar_value, over.percent_label) == (True, 100.0, "150%")
    assert BudgetLine("money", 0.25, 5.0).percent_label == "5%"


def test_a_countdown_whose_target_was_behind_at_rendering_is_passed() -> None:
    """The server says "expired" (a fact that stays true) and never the time left, which
    would go stale on a page read without scripts: ``countdown.js`` writes those words."""
    now = parse_timestamp(now_text())
    past = Countdown("2026-01-01T00:00:00.000000Z", now)
    assert (past.passed, past.passed_text) == (True, "expired")
    assert not Countdown(now_text(60), now).passed


# --- reassignment and a late result -----------------------------------------------------------


@pytest.mark.django_db
def test_an_expired_lease_then_a_late_result_is_shown_for_audit_not_as_a_completion(
    dash: Dashboard,
) -> None:
    """R11.3-09, R11.5-01..03: past its expiry the lease counts as expired on the page (the
    authority has not acted yet); the sweep's ``work.reassign`` closes it (ended by
    ``lease.expired``) and fences the owner; the former owner's ``work.submit`` after that is
    recorded and shown as a late result that did not complete the item, which stays open."""
    world = dash.world
    item = wf.queued(world, wf.mission(world))
    lease = wf.start(world, item, lease_ttl_s=1)
    time.sleep(1.1)

    overdue = item_page(dash, item)
    countdown = element(overdue, "data-field", "expiry")
    assert text(countdown) == "expired"
    assert 'data-passed="true"' in countdown
    assert text(element(overdue, "data-field", "lease-status")) == "active"  # not swept yet

    outcome = wf.reassign(world.group, item)
    assert [event["type"] for event in outcome.events] == ["lease.expired", "work.reassigned"]
    late = wf.submit_result(world, item, lease, artifact=b"late summary")
    assert late.status == 202
    assert late.body["result"]["late_result"] is True
    [recorded] = events_of(world.group, item, "work.late_result_recorded")

    body = item_page(dash, item)

    assert text(element(body, "data-field", "state")) == "open"
    assert text(element(body, "data-field", "owner")) == "—"
    card = element(body, "id", "lease")
    assert text(element(card, "data-field", "lease")) == "No active execution lease."
    assert text(element(card, "data-field", "reassignments")) == "1"
    row = element(element(card, "data-field", "lease-history"), "data-lease", lease)
    assert text(row).startswith("w2 Technical details")
    assert f"lease {lease} holder agent:w2" in text(element(row, "class", "technical-details"))
    assert text(element(row, "data-field", "closed-by")) == "expired without a renewal"
    assert "ended by lease.expired" in text(element(row, "class", "technical-details"))
    assert text(element(row, "data-field", "status")) == "expired"

    audit = element(body, "id", "late-results")
    notice = text(element(audit, "data-field", "late-notice"))
    assert "Kept for audit only: none of these completed this item." in notice
    assert "changed nothing else" in notice
    entry = element(audit, "data-sequence", str(recorded["sequence"]))
    assert text(element(entry, "data-field", "former-owner")) == "w2"
    assert "not a completion" in text(entry)
    assert lease in text(element(entry, "class", "technical-details"))
    assert recorded["payload"]["artifacts"][0] in element(entry, "data-field", "artifacts")
    assert f'datetime="{recorded["recorded_at"]}"' in entry
    sequence = recorded["sequence"]
    assert f"?before={sequence + 1}#event-{sequence}" in entry


@pytest.mark.django_db
def test_no_late_results_card_until_there_is_one(dash: Dashboard) -> None:
    """R11.5-02: the audit card appears only with something to audit."""
    world = dash.world
    item = wf.queued(world, wf.mission(world))
    wf.start(world, item)
    assert 'id="late-results"' not in item_page(dash, item)


# --- retries and checkpoints -------------------------------------------------------------------


@pytest.mark.django_db
def test_a_retry_waits_for_its_backoff_after_the_last_checkpoint(dash: Dashboard) -> None:
    """R11.4-08, R10.2-08, R11.3-09: a checkpoint releases the first lease (ended by
    ``work.checkpointed``) and is kept as the last checkpoint; the start after it resumes the
    first attempt (issue 35: a resumed start is not a new attempt), whose failure schedules a
    retry: the second lease is revoked (ended by ``work.retry_scheduled``) and the page counts
    down to when attempt 2 may start."""
    world = dash.world
    contract = example_contract(deadline=now_text(30 * 86400))
    item = wf.queued(world, wf.mission(world), contract=contract)
    first = wf.start(world, item)
    wf.checkpoint(world, item, first, ref="draft-1")
    second = wf.start(world, item)
    failed = wf.fail_as_owner(world, item, second)
    assert failed.body["result"]["outcome"] == "work.retry_scheduled"
    [scheduled] = events_of(world.group, item, "work.retry_scheduled")
    [checkpointed] = events_of(world.group, item, "work.checkpointed")
    retry_at = scheduled["payload"]["retry_at"]

    body = item_page(dash, item)

    assert text(element(body, "data-field", "state")) == "queued"
    start_by = element(body, "data-field", "start-countdown")
    assert attribute(start_by, "data-passed-text") == "missed"
    card = element(body, "id", "lease")
    retry = element(card, "data-field", "retry")
    assert "Attempt 2 of 3 waits before it may start: not before" in text(retry)
    countdown = element(retry, "data-field", "retry-countdown")
    assert attribute(countdown, "data-countdown") == retry_at
    assert attribute(countdown, "data-passed-text") == "due now"
    assert f"not before {wire_time(retry_at)}" in text(retry)
    assert text(countdown) == ""  # countdown.js writes the time left
    assert "attempts 1 of 3" in text(element(card, "data-field", "attempts"))

    history = element(card, "data-field", "lease-history")
    assert re.findall(r'<tr data-lease="([^"]+)"', history) == [second, first]
    revoked = element(history, "data-lease", second)
    assert text(element(revoked, "data-field", "closed-by")) == "the attempt failed"
    assert text(element(revoked, "data-field", "status")) == "revoked"
    released = element(history, "data-lease", first)
    assert text(element(released, "data-field", "closed-by")) == "released at a checkpoint"
    assert text(element(released, "data-field", "status")) == "released"

    saved = element(card, "data-field", "checkpoint")
    assert "ref draft-1" in text(saved)
    sequence = checkpointed["sequence"]
    assert f"#event-{sequence}" in saved
    assert f'datetime="{checkpointed["recorded_at"]}"' in saved


@pytest.mark.django_db
def test_the_page_s_bars_and_timers_are_labelled_for_assistive_technology(
    dash: Dashboard,
) -> None:
    """Accessibility basics: each card is named by its heading, each budget table by its
    caption, each bar by an aria-label, each countdown is a ``timer``."""
    world = dash.world
    item = wf.queued(world, wf.mission(world))
    wf.start(world, item)
    body = item_page(dash, item)
    for card, heading in (("lease", "lease-heading"), ("budgets", "budgets-heading")):
        assert f'aria-labelledby="{heading}"' in element(body, "id", card)
        assert f'id="{heading}"' in body
    budgets = element(body, "id", "budgets")
    assert budgets.count("<caption>") == budgets.count("<table") == 2
    assert budgets.count("<progress") == budgets.count("aria-label=") > 0
    assert 'role="timer"' in element(body, "data-field", "expiry")


def test_a_blocked_item_says_what_it_needs_who_stopped_and_that_it_resumes(
    dash: Dashboard,
) -> None:
    """R11.4-04, issue 35 §3: the owner's block is said once, in words, above the cards — who
    blocked, what it needs, that the slot was freed and the work resumes from its checkpoint;
    an unblock takes the note away."""
    world = dash.world
    item = wf.queued(world, wf.mission(world), contract=example_contract())
    lease = wf.start(world, item)
    wf.block(world, item, lease, "Read access to the finance archive")

    note = element(item_page(dash, item), "data-field", "blocked-for")
    assert "Blocked by" in text(note)
    assert "Read access to the finance archive" in text(note)
    assert "resumes from its last checkpoint" in text(note)
    assert world.w2.principal not in text(note)  # a name, not a principal

    wf.submit(world.w1, world.group, "work.unblock", {"work_item": item, "to": "queued"})
    assert 'data-field="blocked-for"' not in item_page(dash, item)
