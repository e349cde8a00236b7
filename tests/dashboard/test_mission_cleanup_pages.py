"""What the mission and WorkItem pages say of context packages (R13.3-01..04, R13.3-07), of
work waiting on ended work and of replacements (R10.2-20, R10.2-21), built with real commands
through the one write path on PostgreSQL and read as a browser gets them."""

from __future__ import annotations

from typing import Any

import pytest

from apps.dashboard.names import display_name
from missionweave.protocol.examples import example_contract
from tests.dashboard import workflows as wf
from tests.dashboard.conftest import Dashboard, logged_in
from tests.dashboard.html import element, text
from tests.dashboard.plain_words import jargon_in, visible_text
from tests.factories import World, now_text

pytestmark = pytest.mark.django_db


def _page(dash: Dashboard, path: str) -> str:
    response = logged_in(dash.world.olga).get(path)
    assert response.status_code == 200, response.status_code
    return response.content.decode()


def _publish(world: World, mission: str, items: list[str], version: int, **extra: Any) -> None:
    package = {
        "id": "ctx-brief",
        "version": version,
        "mission": mission,
        "work_items": items,
        "event_range": [1, wf.head(world.group)],
        "artifacts": [],
        "decisions": ["one summary per incident"],
        "constraints": ["no customer names"],
        "open_questions": ["include October?"],
        "generator": world.w1.principal,
        "created_at": now_text(),
        **extra,
    }
    wf.submit(world.w1, world.group, "context.publish", {"package": package})


def test_the_mission_page_lists_its_context_packages_and_their_versions(dash: Dashboard) -> None:
    """R13.3-02, R13.3-04: each package with its latest version in full — decisions,
    constraints, open questions, the items it is about, who wrote it by name — and its
    earlier versions; the digest only in the technical details."""
    world = dash.world
    mission = wf.mission(world)
    item = wf.authorize(world, mission)
    _publish(world, mission, [item], 1)
    _publish(world, mission, [item], 2, decisions=["one summary per incident", "weekly digest"])

    html = _page(dash, f"/groups/{world.group}/missions/{mission}/")

    card = element(html, "data-package", "ctx-brief")
    assert text(element(card, "data-field", "package-version")) == "version 2 of 2"
    author = text(element(card, "data-field", "package-author"))
    assert author.startswith(f"Written by {display_name(world.w1.principal)}")
    assert item in author
    decisions = text(element(card, "data-field", "package-decisions"))
    assert decisions == "one summary per incident weekly digest"
    assert "include October?" in visible_text(card)
    earlier = element(card, "data-field", "package-versions")
    assert "Version 1, written by" in text(earlier)
    assert jargon_in(html) == []


def test_a_mission_without_packages_says_so(dash: Dashboard) -> None:
    world = dash.world
    mission = wf.mission(world)
    html = _page(dash, f"/groups/{world.group}/missions/{mission}/")
    assert "No context packages." in visible_text(element(html, "id", "context-packages"))


def test_work_waiting_on_a_cancelled_item_is_shown_with_the_reason(dash: Dashboard) -> None:
    """R10.2-14, R10.2-20: the waiting item's page and its mission's page say it cannot
    start, on what, and why; after a replacement both say what replaces what."""
    world = dash.world
    mission = wf.mission(world)
    first = wf.authorize(world, mission, contract=example_contract(goal="Gather the sources"))
    waiting = wf.authorize(
        world, mission, contract=example_contract(goal="Write it up"), depends_on=(first,)
    )
    cancel = {"work_item": first, "reason": "the sources moved"}
    wf.submit(world.w1, world.group, "work.cancel", cancel)

    item_html = _page(dash, f"/groups/{world.group}/work-items/{waiting}/")
    note = visible_text(element(item_html, "data-field", "ended-dependencies"))
    assert "Waiting on work that ended." in note
    assert "depends on: Gather the sources ," in note  # named by its goal
    assert "which was cancelled" in note
    assert "the sources moved" in note
    mission_html = _page(dash, f"/groups/{world.group}/missions/{mission}/")
    listed = visible_text(element(mission_html, "data-field", "waiting-on-ended"))
    assert listed.startswith("Write it up waits on Gather the sources (cancelled")
    assert "the sources moved" in listed
    assert jargon_in(item_html) == []
    assert jargon_in(mission_html) == []

    body = {
        "work_item": "wi-again",
        "mission": mission,
        "contract": example_contract(goal="Gather the sources, again"),
        "depends_on": [],
        "replaces": first,
    }
    wf.submit(world.w1, world.group, "work.authorize", body)
    item_html = _page(dash, f"/groups/{world.group}/work-items/{waiting}/")
    assert 'data-field="ended-dependencies"' not in item_html
    replaced = _page(dash, f"/groups/{world.group}/work-items/{first}/")
    assert text(element(replaced, "data-field", "replaced-by")) == "wi-again"
    mission_html = _page(dash, f"/groups/{world.group}/missions/{mission}/")
    assert visible_text(element(mission_html, "data-field", "replacements")).startswith(
        f"Gather the sources, again wi-again carries on the work of Gather the sources {first}"
    )
