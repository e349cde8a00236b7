"""The live Timeline (issue 37 §1 "the Timeline page goes live"): its newest page with no filter
says where it stands for the browser to follow the log, and the lines that arrive are read
from a bounded fragment, in words and verified (R16-03, wire§6); ``?at=N`` is the page whose
newest event is #N, marked."""

from __future__ import annotations

import json
import re

import pytest

from apps.dashboard import timeline_reads
from tests.dashboard import workflows as wf
from tests.dashboard.conftest import Dashboard, logged_in
from tests.dashboard.plain_words import visible_text
from tests.dashboard.test_pages import create_missions

pytestmark = pytest.mark.django_db


def sequences(html: str) -> list[int]:
    return [int(n) for n in re.findall(r'id="event-\d+"\s+data-sequence="(\d+)"', html)]


def live_data(html: str) -> dict[str, object] | None:
    script = r'<script id="timeline-live-data" type="application/json">(.*?)</script>'
    found = re.search(script, html)
    return json.loads(found.group(1)) if found else None


def test_the_newest_unfiltered_page_follows_the_log(dash: Dashboard) -> None:
    """Only the newest page with no filter is live: it names the newest event it shows and
    its hash (the browser checks the next one's link against it)."""
    world = dash.world
    create_missions(world, 2)
    client = logged_in(dash.maria)
    html = client.get(f"/groups/{world.group}/timeline/").content.decode()
    data = live_data(html)
    assert data is not None
    assert data["after"] == wf.head(world.group)
    assert data["hash"] == wf.last_event(world.group)["hash"]
    assert data["lines_url"] == f"/groups/{world.group}/timeline/lines/"
    assert 'id="connection-status"' in html
    assert 'src="/static/dashboard/timeline-page.js"' in html
    for query in ("?before=3", "?kind=mission.created", f"?who={world.w1.principal}"):
        older = client.get(f"/groups/{world.group}/timeline/{query}").content.decode()
        assert live_data(older) is None, query


def test_the_fragment_has_the_events_after_a_sequence_in_words(dash: Dashboard) -> None:
    world = dash.world
    before = wf.head(world.group)
    mission = wf.mission(world, goal="Reconcile the ledger of week 9")
    client = logged_in(dash.maria)
    response = client.get(f"/groups/{world.group}/timeline/lines/?after={before}")
    assert response.status_code == 200
    html = response.content.decode()
    assert sequences(html) == [before + 1]
    assert "w1 created the mission “Reconcile the ledger of week 9”" in visible_text(html)
    assert 'data-verdict="verified"' in html
    assert mission in html  # in the line's collapsed JSON
    nothing = client.get(f"/groups/{world.group}/timeline/lines/?after={before + 1}")
    assert sequences(nothing.content.decode()) == []


def test_the_fragment_is_at_most_a_page_the_newest(dash: Dashboard, monkeypatch) -> None:
    """Bounded whatever arrived: more than a page after #N is the newest page."""
    monkeypatch.setattr(timeline_reads, "PAGE_SIZE", 3)
    monkeypatch.setattr(timeline_reads.timeline_page, "__defaults__", (3,))
    world = dash.world
    before = wf.head(world.group)
    create_missions(world, 5)
    head = wf.head(world.group)
    html = logged_in(dash.maria).get(f"/groups/{world.group}/timeline/lines/?after={before}")
    assert sequences(html.content.decode()) == [head, head - 1, head - 2]


def test_the_fragment_is_for_members_only_and_reads_its_cursor(dash: Dashboard) -> None:
    group = dash.world.group
    assert logged_in(dash.nina).get(f"/groups/{group}/timeline/lines/?after=1").status_code == 404
    client = logged_in(dash.maria)
    assert client.get(f"/groups/{group}/timeline/lines/?after=x").status_code == 400


def test_at_is_the_page_whose_newest_event_it_is_marked(dash: Dashboard) -> None:
    """``?at=N`` (the group page's old "go to event", which now redirects here)."""
    world = dash.world
    create_missions(world, 3)
    client = logged_in(dash.maria)
    html = client.get(f"/groups/{world.group}/?at=2", follow=True).content.decode()
    assert sequences(html)[0] == 2
    assert 'id="event-2"\n    data-sequence="2" data-verdict="verified" aria-current="true"' in html
    assert live_data(html) is None
