"""The WorkItem page shows the owner's latest schedule disclosure (R11.2-01, MWP-WRK-012):
start window, completion, confidence, capacity and when it was computed — and the live
section the page swaps in carries it too. The mission page shows a line of it under each
scheduled item's row, read in the page's one query of its items."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.work.models import WorkItem
from missionweave.protocol.timefmt import format_timestamp
from missionweave.protocol.work.schedule import disclosure_body
from tests.dashboard import workflows as wf
from tests.dashboard.conftest import Dashboard, logged_in
from tests.dashboard.html import element, text
from tests.factories import World

pytestmark = pytest.mark.django_db

#: fixed moments, so the page's words can be asserted exactly
EARLIEST = datetime(2030, 1, 2, 9, 0, tzinfo=UTC)
COMPUTED = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=1)


def disclose(
    world: World, item: str, *, confidence: float = 0.9, capacity: str = "available"
) -> None:
    """w2, the owner at epoch 1, discloses a start window of 09:00–11:00 and a completion at
    14:00 on 2 January 2030, computed a minute ago in 3 ms."""
    body = disclosure_body(
        work_item=item,
        ownership_epoch=1,
        earliest_start=EARLIEST,
        latest_start=EARLIEST + timedelta(hours=2),
        estimated_completion=EARLIEST + timedelta(hours=5),
        confidence=confidence,
        capacity_state=capacity,
        computed_at=COMPUTED,
        compute_seconds=0.003,
    )
    wf.submit(world.w2, world.group, "work.disclose_schedule", body)


def words(html: str) -> str:
    """Visible text, without the space ``text`` leaves where a link ends before a colon."""
    return text(html).replace(" :", ":")


def estimate_lines(html: str) -> int:
    return html.count('data-field="schedule-estimate"')


def test_the_work_item_page_shows_the_latest_schedule_from_the_worker(dash: Dashboard) -> None:
    """R11.2-01: after the owner's ``work.disclose_schedule`` the page has a "Schedule (from
    the worker)" card with the window, completion, confidence, capacity and computation
    time; a later disclosure replaces it. Before any, there is no such card."""
    world = dash.world
    item = wf.queued(world, wf.mission(world))
    client = logged_in(dash.maria)
    path = f"/groups/{world.group}/work-items/{item}/"
    assert 'data-field="schedule"' not in client.get(path).content.decode()

    for capacity, confidence in (("available", 0.9), ("busy", 0.65)):
        disclose(world, item, confidence=confidence, capacity=capacity)

    html = client.get(path).content.decode()
    card = text(element(html, "id", "schedule"))
    assert "Schedule (from the worker)" in card
    start = text(element(html, "data-field", "schedule-start"))
    assert start == "2030-01-02 09:00:00 UTC – 2030-01-02 11:00:00 UTC"
    completion = text(element(html, "data-field", "schedule-completion"))
    assert completion == "2030-01-02 14:00:00 UTC"
    assert text(element(html, "data-field", "schedule-confidence")) == "0.65"
    assert text(element(html, "data-field", "schedule-capacity")) == "busy"
    computed = text(element(html, "data-field", "schedule-computed"))
    assert computed == f"{COMPUTED:%Y-%m-%d %H:%M:%S} UTC in 0.003 s"
    assert "disclosed w2 ·" in card  # by the agent card's name
    assert world.w2.principal not in card

    section = client.get(f"/groups/{world.group}/work-items/{item}/section/").content.decode()
    assert text(element(section, "data-field", "schedule-capacity")) == "busy"
    assert format_timestamp(EARLIEST) in section  # the machine-readable <time datetime>


# --- the mission page ----------------------------------------------------------------------


def test_the_mission_page_shows_a_line_of_each_items_schedule_under_its_row(
    dash: Dashboard,
) -> None:
    """R11.2-01: under a queued item's row, the start window, confidence and capacity of its
    latest disclosure; under a running one, "running, finish by" its estimated completion.
    Nothing else of the disclosure (R11.2-02): not who disclosed, nor when it was computed
    or in how long — the WorkItem page's card, which the line links to, has those."""
    world = dash.world
    mission = wf.mission(world)
    waiting = wf.queued(world, mission)
    disclose(world, waiting, confidence=0.9, capacity="available")
    disclose(world, waiting, confidence=0.65, capacity="busy")
    running = wf.queued(world, mission)
    wf.start(world, running)
    disclose(world, running, confidence=0.8, capacity="saturated")
    client = logged_in(dash.maria)
    path = f"/groups/{world.group}/missions/{mission}/"
    html = client.get(path).content.decode()

    progress = element(html, "id", "progress")
    line = element(element(progress, "data-work-item", waiting), "data-field", "schedule-estimate")
    assert words(line) == (
        "Schedule: start 2030-01-02 09:00:00 UTC – 2030-01-02 11:00:00 UTC"
        " · confidence 0.65 · capacity busy"
    )
    assert f'href="/groups/{world.group}/work-items/{waiting}/#schedule"' in line
    assert f'datetime="{format_timestamp(EARLIEST)}"' in line
    line = element(element(progress, "data-work-item", running), "data-field", "schedule-estimate")
    assert words(line) == (
        "Schedule: running, finish by 2030-01-02 14:00:00 UTC · confidence 0.8 · capacity saturated"
    )
    for line in (element(progress, "data-work-item", item) for item in (waiting, running)):
        assert world.w2.principal not in line
        assert f"{COMPUTED:%H:%M:%S}" not in line
        assert "0.003" not in line

    section = client.get(f"{path}section/").content.decode()
    assert estimate_lines(section) == 2


def test_an_item_without_a_current_disclosure_shows_no_schedule_line(dash: Dashboard) -> None:
    """R11.2-01: an item its owner has not scheduled shows none; nor does one handed in,
    whose last disclosure the projection keeps but whose start window has no meaning now."""
    world = dash.world
    mission = wf.mission(world)
    silent = wf.queued(world, mission)
    handed_in = wf.queued(world, mission)
    disclose(world, handed_in)
    wf.submit_result(world, handed_in, wf.start(world, handed_in))
    row = WorkItem.objects.get(group_id=world.group, work_item_id=handed_in)
    assert row.state == "submitted"
    assert row.data["schedule"] is not None
    html = logged_in(dash.maria).get(f"/groups/{world.group}/missions/{mission}/")

    progress = element(html.content.decode(), "id", "progress")
    for item in (silent, handed_in):
        assert 'data-field="schedule-estimate"' not in element(progress, "data-work-item", item)
    assert estimate_lines(progress) == 0


def test_the_mission_page_reads_every_schedule_in_the_same_queries(dash: Dashboard) -> None:
    """R11.2-01, issue 37: the lines come from the one query that reads the shown progress
    rows' reports: the page makes as many queries with four scheduled items as with one."""
    world = dash.world
    mission = wf.mission(world)
    client = logged_in(dash.maria)
    path = f"/groups/{world.group}/missions/{mission}/"
    disclose(world, wf.queued(world, mission))
    client.get(path)  # the first request of a session does a little more once

    def queries() -> tuple[int, int]:
        with CaptureQueriesContext(connection) as context:
            html = client.get(path).content.decode()
        return len(context.captured_queries), estimate_lines(html)

    one, lines = queries()
    assert lines == 1
    for _ in range(3):
        disclose(world, wf.queued(world, mission))
    assert queries() == (one, 4)
