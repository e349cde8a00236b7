"""Triage at scale (issue 37 §5): the inbox filtered by group and kind and sorted as the
person asks, "Asked of you" apart from what anyone in the role may take, entries snoozed
for a while, a page of a long section at a time, and several missions approved at once —
each by its own ``mission.approve`` (R10.2-16) — with one comment that is never lost.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from apps.dashboard import inbox
from apps.dashboard.models import InboxSnooze
from apps.dashboard.snooze import SnoozeFor, snooze_until
from apps.ledger.models import Event
from tests.dashboard import workflows as wf
from tests.dashboard.conftest import People, logged_in
from tests.dashboard.html import element, text
from tests.factories import World, grant, group, mission_body, unique

pytestmark = pytest.mark.django_db


def ready_mission(world: World, group_id: str | None = None, goal: str = "") -> str:
    """An active mission whose only WorkItem ended (cancelled): ready for final approval."""
    group_id = group_id or world.group
    mission = unique("m")
    extra = {"goal": goal} if goal else {}
    wf.submit(world.w1, group_id, "mission.create", mission_body(mission, **extra))
    item = unique("wi")
    body = {"work_item": item, "mission": mission, "contract": wf.gated_contract(1)}
    wf.submit(world.w1, group_id, "work.authorize", {**body, "depends_on": []})
    wf.submit(world.w1, group_id, "work.cancel", {"work_item": item, "reason": "not needed"})
    return mission


def page(client: Client, path: str = "/", status: int = 200) -> str:
    response = client.get(path)
    assert response.status_code == status, response.content.decode()[:500]
    return response.content.decode()


def listed(html: str, key: str) -> list[str]:
    """The WorkItems (or missions) a section lists, in order."""
    found = re.findall(
        r'<li class="inbox-entry[^"]*" data-group="[^"]*" data-mission="([^"]*)"'
        r'(?: data-work-item="([^"]*)")?',
        element(html, "id", f"inbox-{key}"),
    )
    return [work_item or mission for mission, work_item in found]


def sections(html: str) -> list[str]:
    return re.findall(r'data-section="([^"]+)"', html)


def other_group(people: People, group_id: str = "g-other") -> str:
    world = people.world
    group(group_id, world.org)
    grant(world.alice, group_id, world.w1, "coordinator")
    grant(world.alice, group_id, world.olga, "mission_owner")
    return group_id


# --- filters and order -------------------------------------------------------------------------


def test_the_inbox_filters_by_group(people: People) -> None:
    """issue 37 §5: ``?group=`` keeps one group's entries; the others are not read."""
    world = people.world
    here = ready_mission(world)
    there = ready_mission(world, other_group(people))
    client = logged_in(world.olga)
    assert sorted(listed(page(client), "missions")) == sorted([here, there])

    html = page(client, "/?group=g-other")

    assert listed(html, "missions") == [there]
    assert '<option value="g-other" selected>' in html


def test_the_inbox_filters_by_kind(people: People) -> None:
    """``?kind=missions`` lists only the final approvals; the other sections are not shown."""
    world = people.world
    mission = ready_mission(world)
    wf.queued(world, wf.mission(world), contract=wf.gated_contract(2))
    client = logged_in(world.olga)
    assert "approvals" in sections(page(client))

    html = page(client, "/?kind=missions")

    assert sections(html) == ["missions"]
    assert listed(html, "missions") == [mission]


def test_the_inbox_sorts_oldest_or_newest_first(people: People) -> None:
    """``?sort=oldest`` and ``?sort=newest`` order by when each entry began to wait."""
    world = people.world
    missions = [ready_mission(world) for _ in range(3)]
    client = logged_in(world.olga)

    assert listed(page(client, "/?sort=oldest"), "missions") == missions
    assert listed(page(client, "/?sort=newest"), "missions") == missions[::-1]
    assert '<option value="newest" selected>' in page(client, "/?sort=newest")


def test_filter_values_that_cannot_be_read_are_shown_as_errors_not_a_crash(
    people: People,
) -> None:
    """An unknown group, kind or order is said beside its field, with 400 — never a 500,
    and never another group's entries."""
    ready_mission(people.world)
    client = logged_in(people.world.olga)

    html = page(client, "/?group=g-secret&kind=questions&sort=sideways&page=-3", status=400)

    assert "You are not a member of a group with this id" in text(
        element(html, "data-field", "error-group")
    )
    assert "“questions”: There is no such kind of entry" in text(
        element(html, "data-field", "error-kind")
    )
    assert "cannot be sorted that way" in text(element(html, "data-field", "error-sort"))
    assert 'aria-describedby="triage-group-error"' in html
    assert "g-secret" not in element(html, "id", "inbox-sections")
    page(client, "/inbox/section/?sort=sideways", status=400)


# --- asked of me, anyone may -------------------------------------------------------------------


def test_asked_by_name_is_apart_from_what_anyone_in_the_role_may_take(people: People) -> None:
    """issue 37 §5 with issue 36 §4: what someone asked petra by name is under its own
    heading, first; the approvals any mission owner may give are under "Anyone in your role
    may act"."""
    world = people.world
    item = wf.queued(world, wf.mission(world), contract=wf.gated_contract(2))
    wf.submit(
        world.olga,
        people.group,
        "work.ask",
        {"work_item": item, "for": "execution_approval", "asked": ["user:petra"], "note": "now"},
    )

    html = page(logged_in(people.petra))

    asked = element(html, "data-section", "asked")
    assert 'data-scope="asked"' in asked
    assert item in listed(html, "asked")
    anyone = element(html, "id", "inbox-scope-anyone")
    assert "Anyone in your role may act" in text(anyone)
    anyone_scope = html.split('aria-labelledby="inbox-scope-anyone"', 1)[1]
    assert 'data-section="asked"' not in anyone_scope
    assert 'data-section="approvals"' in anyone_scope
    assert html.index('data-section="asked"') < html.index('id="inbox-scope-anyone"')


# --- snoozes -----------------------------------------------------------------------------------


def snooze(client: Client, key: str, choice: str, **extra: str) -> str:
    response = client.post("/inbox/snooze/", {"snooze": f"{key}|{choice}", **extra})
    assert response.status_code == 302, response.content.decode()[:300]
    return response["Location"]


def test_a_snoozed_entry_is_hidden_counted_and_comes_back_when_the_time_passes(
    people: People, monkeypatch: pytest.MonkeyPatch
) -> None:
    """issue 37 §5: snoozed for an hour, an entry leaves the list ("1 snoozed — show") and
    the person lands back in its section; shown on request with its end; back after an
    hour, with nothing swept."""
    world = people.world
    mission = ready_mission(world)
    other = ready_mission(world)
    client = logged_in(world.olga)

    back = snooze(client, f"{people.group}|missions|{mission}", "hour", next="/?sort=oldest")

    assert back == "/?sort=oldest#inbox-missions"
    html = page(client, "/?sort=oldest")
    assert listed(html, "missions") == [other]
    assert text(element(html, "data-field", "snoozed")) == "1 snoozed — show"
    shown = page(client, "/?sort=oldest&snoozed=show")
    assert listed(shown, "missions") == [mission, other]
    assert "Snoozed until" in text(element(shown, "data-field", "snoozed-until"))

    later = datetime.now(UTC) + timedelta(hours=1, minutes=1)
    monkeypatch.setattr(inbox, "_now", lambda: later)
    html = page(client, "/?sort=oldest")
    assert listed(html, "missions") == [mission, other]
    assert 'data-field="snoozed"' not in html


def test_a_snooze_can_be_ended_by_hand(people: People) -> None:
    world = people.world
    mission = ready_mission(world)
    client = logged_in(world.olga)
    key = f"{people.group}|missions|{mission}"
    snooze(client, key, "week")
    assert listed(page(client), "missions") == []

    snooze(client, key, "wake")

    assert listed(page(client), "missions") == [mission]


def test_until_tomorrow_means_nine_in_the_morning_where_the_person_is() -> None:
    zone = ZoneInfo("Europe/Berlin")
    now = datetime(2026, 12, 7, 22, 30, tzinfo=UTC)  # 23:30 in Berlin
    until = snooze_until(SnoozeFor.TOMORROW, now, zone)
    assert until == datetime(2026, 12, 8, 9, 0, tzinfo=zone)
    assert snooze_until(SnoozeFor.DAY, now, zone) == now + timedelta(days=1)


def test_nobody_can_snooze_another_persons_entry(people: People) -> None:
    """A snooze is the signed-in person's own view: nina, in no group, cannot snooze an
    entry of olga's group (404, nothing stored); petra's snooze hides it from petra only."""
    world = people.world
    mission = ready_mission(world)
    key = f"{people.group}|missions|{mission}"

    response = logged_in(people.dash.nina).post("/inbox/snooze/", {"snooze": f"{key}|week"})

    assert response.status_code == 404
    assert not InboxSnooze.objects.exists()
    snooze(logged_in(people.petra), key, "week")
    assert listed(page(logged_in(people.petra)), "missions") == []
    assert listed(page(logged_in(world.olga)), "missions") == [mission]


def test_snoozing_needs_the_pages_csrf_token_and_a_button_of_the_page(people: People) -> None:
    mission = ready_mission(people.world)
    key = f"{people.group}|missions|{mission}"
    guarded = Client(enforce_csrf_checks=True)
    guarded.force_login(get_user_model().objects.get(username=people.world.olga.username))
    assert guarded.post("/inbox/snooze/", {"snooze": f"{key}|week"}).status_code == 403
    client = logged_in(people.world.olga)
    assert client.post("/inbox/snooze/", {"snooze": f"{key}|forever"}).status_code == 400
    assert client.post("/inbox/snooze/", {"snooze": "a|b|c|week"}).status_code == 400
    assert not InboxSnooze.objects.exists()


# --- paging and cost -----------------------------------------------------------------------------


def test_a_long_section_is_shown_a_page_at_a_time(
    people: People, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With many entries a section is paged, filters kept in every link: the page stays
    bounded whatever waits."""
    monkeypatch.setattr(inbox, "PAGE", 2)
    world = people.world
    missions = [ready_mission(world) for _ in range(5)]
    client = logged_in(world.olga)

    first = page(client, "/?sort=oldest&show=missions")
    assert listed(first, "missions") == missions[:2]
    pager = element(first, "data-field", "pager")
    assert "Page 1 of 3" in text(pager)
    assert 'href="?sort=oldest&amp;show=missions&amp;page=2#inbox-missions"' in pager
    last = page(client, "/?sort=oldest&show=missions&page=3")
    assert listed(last, "missions") == missions[4:]
    assert "Page 3 of 3" in text(element(last, "data-field", "pager"))


def test_the_inbox_reads_the_same_queries_for_three_or_thirteen_missions_to_approve(
    people: People,
) -> None:
    """Reads are per group, never per entry: snoozes are one read, and ten more missions
    (one of them snoozed) cost no query more."""
    world = people.world
    for _ in range(3):
        ready_mission(world)
    client = logged_in(world.olga)
    page(client, "/?sort=newest")
    with CaptureQueriesContext(connection) as few:
        page(client, "/inbox/section/?sort=newest")
    missions = [ready_mission(world) for _ in range(10)]
    snooze(client, f"{people.group}|missions|{missions[0]}", "day")
    with CaptureQueriesContext(connection) as many:
        html = page(client, "/inbox/section/?sort=newest")
    assert len(listed(html, "missions")) == 10  # SHOWN of the 12 awake
    assert len(many) == len(few), [q["sql"][:120] for q in many.captured_queries]
    with CaptureQueriesContext(connection) as one_kind:
        page(client, "/inbox/section/?kind=missions")
    assert len(one_kind) < len(many)


# --- bulk final approval -----------------------------------------------------------------------


def approvals_logged(group_id: str) -> list[dict[str, object]]:
    rows = Event.objects.filter(group_id=group_id, type="mission.approved").order_by("sequence")
    return [
        {"command": command, "actor": actor, **json.loads(document)["payload"]}
        for command, actor, document in rows.values_list("command_id", "actor", "document")
    ]


def test_three_missions_approved_at_once_one_refused_each_by_its_own_command(
    people: People,
) -> None:
    """issue 37 §5, R10.2-16: each ticked mission gets its own ``mission.approve`` with the
    one comment; one that petra approved meanwhile is refused in words (the code only in
    collapsed details), the others pass; the comment is offered again for the refused."""
    world = people.world
    first, second, third = (ready_mission(world, goal=f"Report {n}") for n in (1, 2, 3))
    client = logged_in(world.olga)
    page(client)  # the page olga ticks the missions on
    wf.submit(people.petra, people.group, "mission.approve", {"mission": second, "comment": ""})

    response = client.post(
        "/inbox/approve-missions/",
        {
            "missions": [f"{people.group}|{m}" for m in (first, second, third)],
            "comment": "All three read well.",
            "batch": "dash-batch-1",
        },
    )

    assert response.status_code == 200
    html = response.content.decode()
    logged = [a for a in approvals_logged(people.group) if a["actor"] == world.olga.principal]
    assert [a["mission"] for a in logged] == [first, third]
    assert {a["comment"] for a in logged} == {"All three read well."}
    assert len({a["command"] for a in logged}) == 2
    assert "2 of 3 missions approved; 1 refused" in text(element(html, "data-field", "summary"))
    refused = element(html, "data-field", "refused")
    assert second in refused
    assert first not in refused
    assert "This mission has ended: there is nothing left to approve." in text(refused)
    assert "ILLEGAL_TRANSITION" in element(refused, "class", "technical-details")
    assert "ILLEGAL_TRANSITION" not in text(refused).split("Technical details")[0]
    assert ">All three read well.</textarea>" in html
    assert f'value="{people.group}|{second}" id="retry-1" checked' in html

    again = client.post(
        "/inbox/approve-missions/",
        {
            "missions": [f"{people.group}|{first}"],
            "comment": "All three read well.",
            "batch": "dash-batch-1",
        },
    )
    assert again.status_code == 200  # the same page posted again: replayed, not repeated
    assert len(approvals_logged(people.group)) == 3


def test_when_every_approval_is_refused_or_the_form_is_wrong_the_comment_stays(
    people: People,
) -> None:
    world = people.world
    mission = ready_mission(world)
    wf.submit(people.petra, people.group, "mission.approve", {"mission": mission, "comment": ""})
    client = logged_in(world.olga)

    refused = client.post(
        "/inbox/approve-missions/",
        {"missions": [f"{people.group}|{mission}"], "comment": "Looks complete."},
    )
    assert refused.status_code == 409
    assert ">Looks complete.</textarea>" in refused.content.decode()

    nothing = client.post("/inbox/approve-missions/", {"comment": "Nothing ticked."})
    assert nothing.status_code == 400
    html = nothing.content.decode()
    assert "Tick at least one mission to approve." in text(element(html, "data-field", "problem"))
    assert ">Nothing ticked.</textarea>" in html

    too_long = client.post(
        "/inbox/approve-missions/",
        {"missions": [f"{people.group}|{mission}"], "comment": "y" * 10_001},
    )
    assert too_long.status_code == 400
    assert "at most 10,000" in too_long.content.decode()


def test_the_missions_section_offers_the_bulk_approval_form(people: People) -> None:
    mission = ready_mission(people.world)
    html = page(logged_in(people.world.olga))
    section = element(html, "id", "inbox-missions")
    assert f'value="{people.group}|{mission}" form="inbox-bulk-approve"' in section
    assert 'id="inbox-bulk-approve"' in section
    assert 'name="csrfmiddlewaretoken"' in section
