"""The group page as an overview (issue 37 §1; docs/dashboard.md "The group page"): counts of
the group's WorkItems and missions by state, and "Needs attention now" — failed, blocked,
start-by soon, leases running out, budgets past 80 %, refused executions — each row with its
reason in words and the link to act; the log's old addresses lead to the Timeline; every
read bounded whatever the group's size."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.dashboard import overview
from apps.work.models import WorkItem
from missionweave.protocol.examples import example_contract
from tests.dashboard import workflows as wf
from tests.dashboard.conftest import Dashboard, logged_in
from tests.dashboard.html import element, text
from tests.factories import World, grant, group, now_text, unique

pytestmark = pytest.mark.django_db

ONE_ATTEMPT = {
    "max_attempts": 1,
    "initial_backoff_s": 30,
    "backoff_multiplier": 2.0,
    "max_backoff_s": 600,
}


def group_page(dash: Dashboard) -> str:
    response = logged_in(dash.maria).get(f"/groups/{dash.world.group}/")
    assert response.status_code == 200, response.status_code
    return response.content.decode()


def section(dash: Dashboard) -> str:
    response = logged_in(dash.maria).get(f"/groups/{dash.world.group}/overview/section/")
    assert response.status_code == 200, response.status_code
    return response.content.decode()


def count_of(html: str, table: str, state: str) -> int:
    counts = element(html, "id", table)
    match = re.search(rf'data-state="{state}">\s*<a href="[^"]*"><span[^>]*>(\d+)</span>', counts)
    assert match, (table, state)
    return int(match.group(1))


def failed_item(world: World, mission: str) -> str:
    item = wf.queued(world, mission, contract=example_contract(retry=ONE_ATTEMPT))
    wf.fail_as_owner(world, item, wf.start(world, item))
    assert wf.state_of(world.group, item) == "failed"
    return item


def blocked_item(world: World, mission: str) -> str:
    item = wf.queued(world, mission)
    wf.block(world, item, wf.start(world, item), "Which month exactly?")
    return item


def test_the_counts_say_how_many_workitems_and_missions_are_in_each_state(
    dash: Dashboard,
) -> None:
    """Issue 37 §1: one number per state, each a link to the list filtered by that state."""
    world = dash.world
    first, second = wf.mission(world), wf.mission(world)
    wf.queued(world, first)
    wf.queued(world, second)
    wf.start(world, wf.queued(world, first))
    html = group_page(dash)
    assert count_of(html, "work-counts", "queued") == 2
    assert count_of(html, "work-counts", "active") == 1
    assert count_of(html, "work-counts", "failed") == 0
    assert count_of(html, "mission-counts", "active") == 2
    assert f'href="/groups/{world.group}/work-items/?state=queued"' in html
    assert f'href="/groups/{world.group}/missions/?state=active"' in html
    assert 'data-field="work-counts-total">3<' in html


def test_an_ended_state_is_counted_up_to_the_cap_and_says_so(
    dash: Dashboard, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 37 §1 at a million events: the ended states hold most of a group's history, so
    each is counted no further than the cap and shown as "N+" (the list has them all); the
    unfinished ones are always exact."""
    monkeypatch.setattr(overview, "COUNT_CAP", 1)
    world = dash.world
    mission = wf.mission(world)
    failed_item(world, mission)
    failed_item(world, mission)
    wf.queued(world, mission)
    wf.queued(world, mission)
    html = group_page(dash)
    counts = element(html, "id", "work-counts")
    assert re.search(r'data-state="failed">\s*<a href="[^"]*"><span[^>]*>1\+</span>', counts)
    assert count_of(html, "work-counts", "queued") == 2
    assert 'data-field="work-counts-total">3+<' in html
    assert count_of(html, "work-counts", "verified") == 0


def test_failed_and_blocked_workitems_need_attention_with_their_reason_and_link(
    dash: Dashboard,
) -> None:
    """Issue 37 §1; R11.4-08 (failed once its attempts are spent), R11.4-05 (blocked)."""
    world = dash.world
    mission = wf.mission(world)
    failed, blocked = failed_item(world, mission), blocked_item(world, mission)
    html = section(dash)
    row = element(html, "id", f"attention-failed-{failed}")
    assert "It failed: open it to see why, then retry or cancel it." in text(row)
    assert f'href="/groups/{world.group}/work-items/{failed}/"' in row
    row = element(html, "id", f"attention-blocked-{blocked}")
    assert "Blocked: its worker needs “Which month exactly?”" in text(row)
    assert "?”." not in text(row)  # the question ends the sentence: no second full stop
    assert f'href="/groups/{world.group}/work-items/{blocked}/"' in row
    assert "Open the WorkItem" in text(row)


def test_work_waiting_for_a_child_mission_at_work_is_counted_not_listed_until_it_waits_for_people(
    dash: Dashboard, django_capture_on_commit_callbacks: Any
) -> None:
    """R10.2-15: an item blocked while its child mission works needs nobody until the child
    ends, so "Needs attention now" does not list it: a note counts it. Once the child's work
    is all done it waits for a person's final approval (R10.2-16): then it is listed, by the
    child's goal, linking that approval."""
    world = dash.world
    here, child_here = wf.blocked_on_child(world, world.group, "Dig through the archive")
    html = section(dash)
    assert f"attention-blocked-{here}" not in html
    assert "Nothing needs attention right now." in text(html)
    assert (
        "1 blocked WorkItem waits for its child mission, still at work: nobody needs to "
        "act until it ends." in text(element(html, "data-field", "attention-blocked-note"))
    )

    other = unique("g-lab")  # a child in another group counts the same
    group(other, world.org)
    grant(world.alice, other, world.w1, "coordinator")
    with django_capture_on_commit_callbacks(execute=True):  # the child opens in its group
        there, _child = wf.blocked_on_child(world, other, "Lab work")
    html = section(dash)
    assert f"attention-blocked-{there}" not in html
    assert "2 blocked WorkItems wait for their child missions, still at work" in text(html)

    # R10.2-16: the child's work all verified, only its final approval is left: listed
    wf.verified_item(world, child_here)
    html = section(dash)
    row = element(html, "id", f"attention-blocked-{here}")
    assert "“Dig through the archive”, whose work is all done: it waits for its final" in text(row)
    assert f'href="/groups/{world.group}/missions/{child_here}/final-approval/"' in row
    assert "Open its final approval" in text(row)
    assert 'data-field="attention-blocked-total">1<' in html
    assert "1 blocked WorkItem waits for its child mission, still at work" in text(html)


def test_blocked_work_is_counted_by_what_it_waits_for_whatever_the_mix(dash: Dashboard) -> None:
    """R11.4-04 and R10.2-15 side by side: the worker's call for help is listed and counted;
    the work waiting for a child at work only in the note; the heading's count is the
    listed kind's, so it matches what the list says needs doing."""
    world = dash.world
    mission = wf.mission(world)
    helped = blocked_item(world, mission)
    waiting, _child = wf.blocked_on_child(world, world.group, "Dig through the archive")
    html = section(dash)
    assert f"attention-blocked-{helped}" in html
    assert f"attention-blocked-{waiting}" not in html
    assert 'data-field="attention-blocked-total">1<' in html
    note = text(element(html, "data-field", "attention-blocked-note"))
    assert note.startswith("1 blocked WorkItem waits for its child mission")
    assert count_of(group_page(dash), "work-counts", "blocked") == 2


def test_a_start_by_within_the_lead_time_needs_attention(dash: Dashboard, settings) -> None:
    """Issue 37 §1, R11.3-02: an item waiting for approval whose start-by is within
    ``MWP_NOTIFY_DEADLINE_LEAD_S`` (the reminders' rule, ``deadlines.worth_a_reminder``)."""
    world = dash.world
    later = wf.gated_contract(1, deadline=now_text(30 * 86400))  # the example's has passed
    item = wf.queued(world, wf.mission(world), contract=later)
    settings.MWP_NOTIFY_DEADLINE_LEAD_S = 1
    assert f"attention-start-by-{item}" not in section(dash)
    settings.MWP_NOTIFY_DEADLINE_LEAD_S = 3600
    row = element(section(dash), "id", f"attention-start-by-{item}")
    # only a mission owner's approval can save it: the row says so and opens the approval
    assert "It still waits for execution approval (0 of 1): unless it starts by then" in text(row)
    assert "must start by" in text(row)
    assert f'href="/groups/{world.group}/work-items/{item}/approval/"' in row
    assert "Open the approval" in text(row)


def test_a_start_by_of_work_waiting_for_its_worker_opens_the_workitem(
    dash: Dashboard, settings
) -> None:
    """R11.3-02: an ungated item is worth attention once half its start window has gone by
    without a start; its worker, not a person's approval, is what it waits for."""
    world = dash.world
    ungated = example_contract(deadline=now_text(30 * 86400))  # needs no approval
    item = wf.queued(world, wf.mission(world), contract=ungated)
    settings.MWP_NOTIFY_DEADLINE_LEAD_S = 3600
    soon = timezone.now() + timedelta(seconds=60)  # of its 10 min window: past half
    WorkItem.objects.filter(group_id=world.group, work_item_id=item).update(due_at=soon)
    row = element(section(dash), "id", f"attention-start-by-{item}")
    assert "It has not started yet: unless it starts by then" in text(row)
    assert f'href="/groups/{world.group}/work-items/{item}/"' in row


def test_a_lease_about_to_run_out_needs_attention(dash: Dashboard) -> None:
    """Issue 37 §1, R11.3-09: an active lease ending within minutes; a long one does not."""
    world = dash.world
    mission = wf.mission(world)
    short = wf.queued(world, mission)
    wf.start(world, short, lease_ttl_s=120)
    long = wf.queued(world, mission)
    wf.start(world, long, lease_ttl_s=3600)
    html = section(dash)
    row = element(html, "id", f"attention-lease-{short}")
    assert "lease runs out within 5 min unless the worker renews it" in text(row)
    assert f"attention-lease-{long}" not in html


def test_a_mission_past_80_percent_of_a_budget_needs_attention(dash: Dashboard) -> None:
    """Issue 37 §1, R11.5-12: a charge that takes a mission past 80 % of a limit."""
    world = dash.world
    mission = wf.mission(world, budgets={"tokens": 1000})
    calm = wf.mission(world, budgets={"tokens": 100000})
    for target in (mission, calm):
        item = wf.queued(world, target)
        wf.use(world, item, wf.start(world, item), tokens=900)
    html = section(dash)
    row = element(html, "id", f"attention-budget-{mission}")
    assert "It has used 90% of its tokens budget (900 of 1,000)." in text(row)
    assert f'href="/groups/{world.group}/missions/{mission}/"' in row
    assert f"attention-budget-{calm}" not in html


def test_a_refused_execution_needs_attention_with_the_link_to_its_approval_page(
    dash: Dashboard,
) -> None:
    """Issue 37 §1, R10.2-06: a refused revision waits for a corrected contract or a cancel."""
    world = dash.world
    item = wf.queued(world, wf.mission(world), contract=wf.gated_contract(1))
    wf.submit(
        world.olga,
        world.group,
        "approval.refuse_execution",
        {"work_item": item, "contract_revision": 1, "comment": "name the tables first"},
    )
    row = element(section(dash), "id", f"attention-refused-{item}")
    assert "Its execution was refused: “name the tables first”." in text(row)
    assert f'href="/groups/{world.group}/work-items/{item}/approval/"' in row
    assert "Open the approval page" in text(row)


def test_only_ten_rows_a_kind_and_a_link_to_the_rest(dash: Dashboard, monkeypatch) -> None:
    """Issue 37 §1: each list is cut (``SHOWN``) and says how many more, linked to the list."""
    monkeypatch.setattr(overview, "SHOWN", 2)
    world = dash.world
    mission = wf.mission(world)
    for _ in range(3):
        blocked_item(world, mission)
    html = section(dash)
    kind = element(html, "data-kind", "blocked")
    assert len(re.findall(r'<li class="attention-row', kind)) == 2
    assert "1 more: all blocked WorkItems" in text(kind)
    assert f'href="/groups/{world.group}/work-items/?state=blocked"' in kind


def test_nothing_to_attend_to_is_said(dash: Dashboard) -> None:
    assert "Nothing needs attention right now." in text(section(dash))


def _bulk(world: World, mission: str, count: int, state: str) -> None:
    """Rows straight into the projection: a read test needs volume, not a history."""
    template = WorkItem.objects.filter(group_id=world.group).first()
    assert template is not None
    WorkItem.objects.bulk_create(
        WorkItem(
            group_id=world.group,
            work_item_id=f"bulk-{state}-{index}",
            mission=mission,
            state=state,
            data=template.data,
            due_at=timezone.now() + timedelta(seconds=60) if state == "active" else None,
            due_reason="lease_expired" if state == "active" else "",
        )
        for index in range(count)
    )


def test_the_overview_reads_a_fixed_number_of_queries_whatever_the_group_size(
    dash: Dashboard, django_assert_max_num_queries
) -> None:
    """Issue 37 §1 bound: counts by one GROUP BY, each list LIMITed: the same number of
    queries with 3 WorkItems as with 600 (but a count of the rest, for a list that has more
    rows than it shows), and the live section stays under a fixed size."""
    world = dash.world
    mission = wf.mission(world)
    failed_item(world, mission)
    blocked_item(world, mission)
    client = logged_in(dash.maria)
    url = f"/groups/{world.group}/"
    client.get(url)
    with CaptureQueriesContext(connection) as small:
        assert client.get(url).status_code == 200
    counted = len(small)  # now: the next request resets the connection's log
    assert 0 < counted <= 60
    small_section = client.get(f"{url}overview/section/").content
    for state in ("failed", "blocked", "active", "queued"):
        _bulk(world, mission, 150, state)
    with django_assert_max_num_queries(counted + 2):
        assert client.get(url).status_code == 200
    with django_assert_max_num_queries(20):
        large_section = client.get(f"{url}overview/section/").content
    # bounded bytes: at most SHOWN rows a kind, whatever the volume
    assert len(large_section) < len(small_section) + 30 * 1024
    assert len(re.findall(rb'<li class="attention-row', large_section)) <= 6 * overview.SHOWN


def test_a_non_member_gets_404_for_the_page_and_its_live_section(dash: Dashboard) -> None:
    """wire§2: not a member: 404, as for a group that does not exist."""
    client = logged_in(dash.nina)
    for path in ("", "overview/section/", "?at=1", "?before=2"):
        assert client.get(f"/groups/{dash.world.group}/{path}").status_code == 404


def test_the_logs_old_addresses_lead_to_the_timeline(dash: Dashboard) -> None:
    """Issue 37 §1: ``?at=N`` and ``?before=N`` were the group page's log; they redirect to
    the Timeline with the same parameter; a malformed one is still a 400."""
    group, client = dash.world.group, logged_in(dash.maria)
    response = client.get(f"/groups/{group}/?at=2")
    assert response.status_code == 302
    assert response["Location"] == f"/groups/{group}/timeline/?at=2"
    response = client.get(f"/groups/{group}/?before=3")
    assert response["Location"] == f"/groups/{group}/timeline/?before=3"
    assert client.get(f"/groups/{group}/?at=zwei").status_code == 400


def test_the_page_links_to_the_timeline_and_keeps_the_approval_queue_and_missions(
    dash: Dashboard,
) -> None:
    world = dash.world
    mission = wf.mission(world)
    html = group_page(dash)
    assert f'<a class="overview-timeline__link" href="/groups/{world.group}/timeline/">' in html
    assert "Timeline: every event, in words" in html
    assert 'id="approval-queue"' in html
    assert f'id="mission-row-{mission}"' in html
