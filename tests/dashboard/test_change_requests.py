"""Asking for changes at the final approval, on the dashboard (issue 36 §5; R13.2-03 step 5,
R10.2-19, R10.2-21).

The "Ask for changes instead…" page sends ONE ``mission.request_changes`` for the accepted
results chosen; the mission page and the final-approval screen then say, in plain words, who
asked what of which WorkItems and that the coordinator replaces them, and neither offers the
approval until the replacements exist and have finished. Real PostgreSQL, the one write path.
"""

from __future__ import annotations

import pytest

from apps.dashboard.inbox import inbox_of
from apps.work.models import Mission
from missionweave.protocol.examples import example_contract
from tests.dashboard import workflows as wf
from tests.dashboard.conftest import Dashboard, logged_in
from tests.dashboard.html import element, text

pytestmark = pytest.mark.django_db

NOTE = "Add the timeline of the outage"


def _asked(dash: Dashboard) -> tuple[str, str, str]:
    """A mission of two verified items (``second`` waits on ``first``), both sent back by
    olga from the page; returns (mission, first, second)."""
    world = dash.world
    mission = wf.mission(world)
    first = wf.verified_item(world, mission)
    second = wf.verified_item(world, mission, depends_on=(first,))
    url = f"/groups/{world.group}/missions/{mission}/final-approval/send-back/"
    before = wf.head(world.group)
    done = logged_in(world.olga).post(url, {"work_items": [first, second], "note": NOTE})
    assert done.status_code == 302, done.content.decode()[:2000]
    assert wf.head(world.group) == before + 1  # one command, one event
    event = wf.last_event(world.group)
    assert event["type"] == "mission.changes_requested"
    assert event["payload"]["work_items"] == [first, second]
    return mission, first, second


def test_the_page_sends_one_request_and_both_pages_say_what_holds_the_approval(
    dash: Dashboard,
) -> None:
    """R13.2-03 step 5: after the request the final-approval screen and the mission page show
    it in words — who, the items' goals, the note, waiting for the coordinator — and offer no
    approval, saying why."""
    group = dash.world.group
    mission, first, second = _asked(dash)
    olga = logged_in(dash.world.olga)
    assert Mission.objects.get(group_id=group, mission_id=mission).state == "active"

    final = olga.get(f"/groups/{group}/missions/{mission}/final-approval/").content.decode()
    shown = text(element(final, "id", "change-requests"))
    assert "Changes asked by olga on" in shown
    assert f"“{NOTE}” — waiting for the coordinator to replace them." in shown
    assert shown.count("Summarise the incident reports of November") == 2  # each item's goal
    assert "final-approve-form" not in final
    refusal = text(element(final, "data-field", "refusal"))
    # both share their goal, so each is told apart by its id
    goal = "\u201cSummarise the incident reports of November\u201d"
    assert refusal == (
        f"Changes were asked of {goal} ({first}), {goal} ({second}): the mission can be "
        "approved once the coordinator has replaced them and the replacements have finished."
    )

    page = olga.get(f"/groups/{group}/missions/{mission}/").content.decode()
    assert "Changes asked by olga on" in text(element(page, "id", "change-requests"))
    assert "Review and approve the mission" not in page
    assert text(element(page, "data-field", "approve-note")).startswith(
        f"Changes were asked of {goal} ({first}), {goal} ({second})"
    )


def test_once_the_coordinator_replaces_the_items_the_request_is_shown_answered(
    dash: Dashboard,
) -> None:
    """R10.2-21: the coordinator's replacements (``work.authorize`` with ``replaces``) close
    the request; the approval then waits for them as unfinished work, and both pages list
    the request as answered: what was asked, and which WorkItem replaced each item."""
    world = dash.world
    mission, first, second = _asked(dash)
    for old, depends_on in ((first, []), (second, [first])):
        body = {
            "work_item": f"{old}-r1",
            "mission": mission,
            "contract": example_contract(),
            "depends_on": depends_on,
            "replaces": old,
        }
        wf.submit(world.w1, world.group, "work.authorize", body)
    olga = logged_in(world.olga)
    final = olga.get(f"/groups/{world.group}/missions/{mission}/final-approval/").content.decode()
    assert "2 WorkItems are not finished" in text(element(final, "data-field", "refusal"))
    page = olga.get(f"/groups/{world.group}/missions/{mission}/").content.decode()
    for body in (final, page):
        card = element(body, "id", "change-requests")
        assert "waiting for the coordinator" not in text(card)
        assert text(element(card, "data-field", "none-waiting")).startswith("None waiting")
        answered = element(card, "data-field", "answered-changes")
        assert "olga asked on" in text(answered)
        assert f"“{NOTE}”" in text(answered)
        assert text(answered).count("replaced by") == 2
        for old in (first, second):
            assert f'href="/groups/{world.group}/work-items/{old}-r1/"' in answered


def test_a_replaced_result_is_not_offered_again_on_the_send_back_page(dash: Dashboard) -> None:
    """An accepted result already replaced cannot be asked about again (wire.md §9): the page
    lists its replacement's work, not it."""
    world = dash.world
    mission, first, _second = _asked(dash)
    body = {
        "work_item": f"{first}-r1",
        "mission": mission,
        "contract": example_contract(),
        "depends_on": [],
        "replaces": first,
    }
    wf.submit(world.w1, world.group, "work.authorize", body)
    url = f"/groups/{world.group}/missions/{mission}/final-approval/send-back/"
    form = logged_in(world.olga).get(url).content.decode()
    assert f'value="{first}"' not in form


def _missions_to_approve(dash: Dashboard) -> list[str]:
    inbox = inbox_of(dash.world.olga.caller)
    (section,) = [section for section in inbox.sections if section.key == "missions"]
    return [entry.mission for entry in section.entries]


def test_the_inbox_holds_a_mission_back_while_its_changes_wait_for_replacements(
    dash: Dashboard,
) -> None:
    """Issue 36 §5: a mission whose owner asked for changes is not "to approve" until the
    coordinator has replaced every item named (and then not until the replacements finish)."""
    world = dash.world
    mission = wf.mission(world)
    first = wf.verified_item(world, mission)
    assert mission in _missions_to_approve(dash)
    url = f"/groups/{world.group}/missions/{mission}/final-approval/send-back/"
    logged_in(world.olga).post(url, {"work_items": [first], "note": NOTE})
    assert mission not in _missions_to_approve(dash)
