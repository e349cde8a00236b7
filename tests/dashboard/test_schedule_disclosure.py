"""The WorkItem page shows the owner's latest schedule disclosure (R11.2-01, MWP-WRK-012):
start window, completion, confidence, capacity and when it was computed — and the live
section the page swaps in carries it too."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from missionweave.protocol.timefmt import format_timestamp
from missionweave.protocol.work.schedule import disclosure_body
from tests.dashboard import workflows as wf
from tests.dashboard.conftest import Dashboard, logged_in
from tests.dashboard.html import element, text

pytestmark = pytest.mark.django_db

#: fixed moments, so the page's words can be asserted exactly
EARLIEST = datetime(2030, 1, 2, 9, 0, tzinfo=UTC)
COMPUTED = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=1)


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
    assert world.w2.principal in card

    section = client.get(f"/groups/{world.group}/work-items/{item}/section/").content.decode()
    assert text(element(section, "data-field", "schedule-capacity")) == "busy"
    assert format_timestamp(EARLIEST) in section  # the machine-readable <time datetime>
