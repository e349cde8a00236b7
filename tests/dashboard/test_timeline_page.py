"""The Timeline page (issue 37 §2; docs/dashboard.md "Timeline"): the log one line per event
in words, filtered by kind, who, mission, WorkItem and time, paged both ways by sequence,
each event verified (R16-03, wire§6), members only (404 for others)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import urlencode

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from apps.dashboard import timeline_reads
from apps.demo import cast, story
from apps.ledger.models import Event
from tests.dashboard import workflows as wf
from tests.dashboard.conftest import Dashboard, People, logged_in
from tests.dashboard.html import element
from tests.dashboard.plain_words import jargon_in, visible_text
from tests.dashboard.test_pages import create_missions

pytestmark = pytest.mark.django_db


def url(group: str, **query: str) -> str:
    return f"/groups/{group}/timeline/" + (f"?{urlencode(query)}" if query else "")


def shown(html: str) -> list[int]:
    return [
        int(n)
        for n in re.findall(
            r'<li class="tl-line[^"]*" id="event-\d+"\s+data-sequence="(\d+)"', html
        )
    ]


def link(html: str, rel: str) -> str | None:
    found = re.search(rf'rel="{rel}" href="([^"]+)"', html)
    return found.group(1).replace("&amp;", "&") if found else None


def test_members_only(dash: Dashboard) -> None:
    """As every group page: anonymous visitors log in, non-members get 404 (R16-03)."""
    assert Client().get(url(dash.world.group)).status_code == 302
    assert logged_in(dash.nina).get(url(dash.world.group)).status_code == 404
    assert logged_in(dash.maria).get(url("g-nowhere")).status_code == 404
    assert logged_in(dash.maria).get(url(dash.world.group)).status_code == 200


def test_each_event_is_a_line_in_words_with_its_json_collapsed(dash: Dashboard) -> None:
    """A person reads sentences with names; the type, principals and payload are in the
    collapsed JSON of each line (issue 34 §6)."""
    create_missions(dash.world, 2)
    response = logged_in(dash.maria).get(url(dash.world.group))
    html = response.content.decode()
    head = Event.objects.filter(group_id=dash.world.group).count()
    assert shown(html) == list(range(head, 0, -1))
    text = visible_text(html)
    assert "w1 created the mission “" in text
    assert "added maria to the group" in text
    assert "mission.created" not in text
    assert "membership.granted" not in text
    assert not list(jargon_in(html))
    assert "&quot;type&quot;: &quot;mission.created&quot;" in html  # in the line's JSON
    assert "✓ Verified" in text
    assert f"these {head} events" in text


def test_paging_both_ways_by_sequence(dash: Dashboard) -> None:
    """Newest first, 50 a page; Older by ``?before=``, Newer by ``?after=``, never OFFSET."""
    create_missions(dash.world, 60)
    head = Event.objects.filter(group_id=dash.world.group).count()
    client = logged_in(dash.maria)
    newest = client.get(url(dash.world.group)).content.decode()
    assert shown(newest) == list(range(head, head - 50, -1))
    assert link(newest, "prev") is None
    older_url = link(newest, "next")
    assert older_url is not None
    assert older_url.endswith(f"before={head - 49}")
    older = client.get(url(dash.world.group) + older_url).content.decode()
    assert shown(older) == list(range(head - 50, 0, -1))
    assert link(older, "next") is None  # the oldest page
    newer_url = link(older, "prev")
    assert newer_url is not None
    assert newer_url.endswith(f"after={head - 50}")
    newer = client.get(url(dash.world.group) + newer_url).content.decode()
    # the 50 events just after, newest first
    assert shown(newer) == list(range(head, head - 50, -1))
    assert "✓ Verified" in visible_text(older)


def test_filters_by_kind_and_who_keep_their_values_in_the_pager(dash: Dashboard) -> None:
    create_missions(dash.world, 55)
    client = logged_in(dash.maria)
    html = client.get(url(dash.world.group, kind="mission.created")).content.decode()
    sequences = shown(html)
    assert len(sequences) == 50
    types = set(
        Event.objects.filter(group_id=dash.world.group, sequence__in=sequences).values_list(
            "type", flat=True
        )
    )
    assert types == {"mission.created"}
    older = link(html, "next")
    assert older is not None
    assert "kind=mission.created" in older
    rest = shown(client.get(url(dash.world.group) + older).content.decode())
    assert len(rest) == 5
    assert max(rest) < min(sequences)

    html = client.get(url(dash.world.group, kind="family:membership")).content.decode()
    assert "created the mission" not in visible_text(html)
    assert "to the group" in visible_text(html)

    html = client.get(url(dash.world.group, who="agent:w1", kind="family:mission")).content.decode()
    assert len(shown(html)) == 50
    actors = Event.objects.filter(group_id=dash.world.group, sequence__in=shown(html))
    assert set(actors.values_list("actor", flat=True)) == {"agent:w1"}


def test_a_filter_that_cannot_be_read_is_said_next_to_its_field(dash: Dashboard) -> None:
    """Never a 500: each field says what it could not read, and nothing is listed."""
    client = logged_in(dash.maria)
    response = client.get(
        url(
            dash.world.group,
            kind="work.nonsense",
            who="not a principal",
            mission="m-none",
            work_item="wi-none",
            to="yesterday",
        )
    )
    assert response.status_code == 200
    html = response.content.decode()
    text = visible_text(html)
    assert "“work.nonsense” is not a kind of event this page knows." in text
    assert "“not a principal” is not a person or an agent." in text
    assert "No mission of this group has “m-none” as its id or in its goal." in text
    assert "No WorkItem of this group has “wi-none” as its id or in its goal." in text
    assert "“yesterday” is not a time" in text
    assert 'id="tl-to" type="text" name="to" value="yesterday"' in html
    assert 'aria-describedby="tl-to-error"' in html
    assert shown(html) == []
    cursor = client.get(url(dash.world.group, before="-3")).content.decode()
    assert "is not a number of an event" in visible_text(cursor)


def test_a_time_range_with_nothing_in_it_says_so(dash: Dashboard) -> None:
    client = logged_in(dash.maria)
    html = client.get(url(dash.world.group, **{"from": "2099-01-01 00:00"})).content.decode()
    assert shown(html) == []
    assert "No events match these filters" in visible_text(html)
    everything = client.get(
        url(dash.world.group, **{"from": "2000-01-01", "to": "2099-01-01T00:00"})
    ).content.decode()
    assert len(shown(everything)) == Event.objects.filter(group_id=dash.world.group).count()
    reversed_range = client.get(
        url(dash.world.group, **{"from": "2026-01-02", "to": "2026-01-01"})
    ).content.decode()
    assert "“To” is before “From”" in visible_text(reversed_range)


def test_a_filter_no_index_answers_examines_a_bounded_part_of_the_log(
    dash: Dashboard, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Who, mission and WorkItem scan at most SCAN_LIMIT events a page and say how far."""
    monkeypatch.setattr(timeline_reads, "SCAN_LIMIT", 10)
    create_missions(dash.world, 20)
    head = Event.objects.filter(group_id=dash.world.group).count()
    client = logged_in(dash.maria)
    html = client.get(url(dash.world.group, who="user:alice")).content.decode()
    assert shown(html) == []  # alice's events are the oldest
    text = visible_text(html)
    assert f"this page searched #{head - 9} to #{head}" in text
    older = link(html, "next")
    assert older is not None
    assert older.endswith(f"before={head - 9}")


@pytest.fixture
def demo(tmp_path: Path) -> cast.DemoWorld:
    built = cast.demo_seed(keys_dir=tmp_path, password="pw")
    story.seed_work(built)
    return built


def test_mission_and_work_item_filters_show_the_events_that_name_them(
    demo: cast.DemoWorld,
) -> None:
    client = Client()
    client.force_login(get_user_model().objects.get(username="olivia"))
    html = client.get(url(cast.GROUP, work_item="demo-wi-incident-summary")).content.decode()
    lines = shown(html)
    assert lines
    for text in Event.objects.filter(group_id=cast.GROUP, sequence__in=lines).values_list(
        "document", flat=True
    ):
        assert '"work_item":"demo-wi-incident-summary"' in text
    assert "Summarise the incident reports" in visible_text(html)  # the title, not the id
    mission = client.get(url(cast.GROUP, mission="demo-m-incidents")).content.decode()
    assert set(lines) <= set(shown(mission))
    named = json.loads(
        Event.objects.get(group_id=cast.GROUP, sequence=max(shown(mission))).document
    )
    assert named["payload"].get("mission") == "demo-m-incidents" or named["payload"].get(
        "work_item"
    )


def test_the_mission_and_work_item_filters_read_words_of_a_goal(
    demo: cast.DemoWorld,
) -> None:
    """People know work by its goal: a filter of goal words naming one mission (WorkItem) is
    that filter, several are listed by goal, and the fields suggest the newest by goal."""
    client = Client()
    client.force_login(get_user_model().objects.get(username="olivia"))
    by_id = client.get(url(cast.GROUP, mission="demo-m-incidents")).content.decode()
    by_goal = client.get(url(cast.GROUP, mission="INCIDENT reports")).content.decode()
    assert shown(by_goal) == shown(by_id) != []
    assert 'name="mission" value="demo-m-incidents"' in by_goal  # the id it came to
    assert "“Summarise the incident reports of November”" in visible_text(by_goal)

    item = client.get(url(cast.GROUP, work_item="incident reports")).content.decode()
    assert shown(item) == shown(
        client.get(url(cast.GROUP, work_item="demo-wi-incident-summary")).content.decode()
    )

    several = visible_text(client.get(url(cast.GROUP, mission="the")).content.decode())
    assert "Several missions have “the” in their goal: “" in several
    assert "Type more of the goal, or pick one from the list." in several

    suggestions = element(by_id, "id", "tl-mission-choices")
    assert '<option value="demo-m-incidents">Summarise the incident reports of November' in (
        suggestions
    )
    assert 'list="tl-work-item-choices"' in by_id


def test_an_execution_grant_says_which_of_how_many_it_was(people: People) -> None:
    """R10.2-06: "Olga approved the execution of “…” (1 of 2)", from the item's decisions."""
    world = people.world
    item = wf.queued(world, wf.mission(world), contract=wf.gated_contract(approvals=2))
    assert wf.approve(world.olga, people.group, item).status == 201
    html = logged_in(people.petra).get(url(people.group, kind="approval.execution_granted"))
    text = visible_text(html.content.decode())
    assert (
        "olga approved the execution of “Summarise the incident reports of November” (1 of 2)"
        in text
    )
