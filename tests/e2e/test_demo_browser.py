"""A mission a person creates in the browser is taken up by the demo's agents (issue 36 §5,
Must hold): ``manage.py demo`` on the embedded default, its coordinator, workers and reviewer
as separate processes; olivia creates a mission from the group's "New mission" page, and the
coordinator plans it (``work.authorize``), offers its first WorkItem, and a worker runs it
(``work.started``, ``work.submitted``) — nobody but the agents acting after her click."""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from apps.demo import cast
from tests.demo.launch import launched_demo
from tests.e2e.screens import check_screen

pytestmark = pytest.mark.e2e
PASSWORD = "missionweave-demo"
#: how long the agents have to plan, offer, start and submit the new mission's first item
RUNS_WITHIN_S = 150


@dataclass
class Demo:
    base: str
    token: str
    log: Path


def _events(demo: Demo, group: str) -> list[dict]:
    events: list[dict] = []
    while True:
        url = f"{demo.base}/api/v1/groups/{group}/events?after={len(events)}&limit=1000"
        request = urllib.request.Request(url, headers={"Authorization": f"Bearer {demo.token}"})
        with urllib.request.urlopen(request, timeout=10) as answer:
            page = json.loads(answer.read())["events"]
        if not page:
            return events
        events += page


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[Demo]:
    """``manage.py demo`` on its own SQLite file, agents at a quick pace; stopped by SIGTERM."""
    with launched_demo(tmp_path) as launched:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not launched.token():
            assert launched.process.poll() is None, launched.output()
            time.sleep(0.5)
        assert launched.token(), launched.output()
        up = Demo(launched.base, launched.token(), launched.log_path)
        while time.monotonic() < deadline:
            try:
                _events(up, cast.GROUP)
                break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.5)
        yield up


def _sign_in(page: Page, demo: Demo, username: str) -> None:
    page.goto(f"{demo.base}/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name=re.compile("sign in|log in", re.I)).click()
    expect(page).not_to_have_url(re.compile(r"/login/"))


def test_a_mission_created_in_the_browser_is_planned_offered_and_run_by_the_demos_agents(
    page: Page, demo: Demo
) -> None:
    _sign_in(page, demo, "olivia")
    page.goto(f"{demo.base}/groups/{cast.GROUP}/")
    page.get_by_role("link", name="New mission").first.click()
    page.get_by_role("textbox", name="Goal").fill("Summarise the incident reports of the week")
    page.get_by_role("button", name="Create the mission").click()
    expect(page).to_have_url(re.compile(rf"/groups/{cast.GROUP}/missions/m-[^/]+/$"))
    mission = page.url.rstrip("/").rsplit("/", 1)[1]
    check_screen(page, "demo-01-mission-created")

    deadline = time.monotonic() + RUNS_WITHIN_S
    moved: dict[str, set[str]] = {}
    while time.monotonic() < deadline:
        moved = {}
        for event in _events(demo, cast.GROUP):
            payload = event["payload"]
            work_item = str(payload.get("work_item") or "")
            if payload.get("mission") == mission or work_item.startswith(f"{mission}-"):
                moved.setdefault(event["type"], set()).add(event["actor"].split(":")[0])
        if "work.submitted" in moved:
            break
        time.sleep(2)
    assert moved.get("mission.created") == {"user"}, moved
    # after her click, only the agents: planned and offered by the coordinator, run by a worker
    for event_type in ("work.authorized", "work.offered", "work.started", "work.submitted"):
        assert moved.get(event_type) == {"agent"}, (event_type, moved, demo.log.read_text()[-4000:])
    page.reload()
    expect(page.locator("main")).to_contain_text(f"{mission}-gather")
    check_screen(page, "demo-02-mission-running")
