"""The actions people lacked (issue 36 §5): create a mission, add a WorkItem from a contract,
cancel one WorkItem, and ask for changes at the final approval instead of approving.

Olga is a mission owner; cora a human coordinator (and mission owner); rita a reviewer; maria
an observer; nina a member of nothing. Every form goes through the one write path as the
person; a refused form is the page again with what was typed. Real PostgreSQL.
"""

from __future__ import annotations

import json
import re

import pytest

from apps.dashboard.work_item_add import line_of
from apps.ledger.models import Event
from apps.work.models import Mission, WorkItem
from missionweave.protocol.examples import example_contract
from tests.dashboard import workflows as wf
from tests.dashboard.conftest import Dashboard, logged_in
from tests.dashboard.html import text
from tests.factories import HumanPersona, grant, human

pytestmark = pytest.mark.django_db


@pytest.fixture
def cora(dash: Dashboard) -> HumanPersona:
    persona = human("cora")
    grant(dash.world.alice, dash.world.group, persona, "coordinator", "mission_owner")
    return persona


@pytest.fixture
def rita(dash: Dashboard) -> HumanPersona:
    persona = human("rita")
    grant(dash.world.alice, dash.world.group, persona, "reviewer")
    return persona


def _contract_text(**overrides: object) -> str:
    contract = example_contract(inputs=[], deadline="2030-01-01T00:00:00Z")
    contract.update(overrides)
    return json.dumps(contract, indent=2)


# --- create a mission (mission.create) -------------------------------------------------------


def test_a_mission_owner_creates_a_mission_and_lands_on_its_page(dash: Dashboard) -> None:
    """R10.2-01, wire§9 mission.create: goal and the budgets typed (empty = unlimited)."""
    group = dash.world.group
    olga = logged_in(dash.world.olga)
    form = olga.get(f"/groups/{group}/new-mission/")
    assert form.status_code == 200
    assert 'name="goal"' in form.content.decode()
    response = olga.post(
        f"/groups/{group}/new-mission/",
        {"goal": "Map the outage of 3 December", "tokens": "50000", "money": "12.5"},
    )
    assert response.status_code == 302
    event = wf.last_event(group)
    assert (event["type"], event["actor"]) == ("mission.created", "user:olga")
    assert event["payload"]["budgets"] == {"money": 12.5, "tokens": 50000}
    mission = event["payload"]["mission"]
    assert mission.startswith("m-map-the-outage-of-3-december-")
    assert response["Location"] == f"/groups/{group}/missions/{mission}/"
    page = olga.get(response["Location"])
    assert "Created the mission" in text(page.content.decode())


def test_a_refused_mission_keeps_what_was_typed_and_marks_the_field(dash: Dashboard) -> None:
    """A negative budget and a taken id are said beside their fields, the goal kept."""
    group = dash.world.group
    wf.mission(dash.world, "m-taken")
    olga = logged_in(dash.world.olga)
    head = wf.head(group)
    bad = olga.post(
        f"/groups/{group}/new-mission/", {"goal": "Keep this goal", "tokens": "-5", "mission": "x"}
    )
    assert bad.status_code == 400
    html = bad.content.decode()
    assert "Keep this goal" in html
    assert 'value="-5"' in html
    assert re.search(r'data-field="tokens".*?field-errors', html, re.S)
    taken = olga.post(
        f"/groups/{group}/new-mission/", {"goal": "Keep it too", "mission": "m-taken"}
    )
    assert taken.status_code == 409
    shown = text(taken.content.decode())
    assert "already exists" in shown
    assert "Keep it too" in taken.content.decode()
    assert "ILLEGAL_TRANSITION" not in shown.split("Technical details")[0]
    assert wf.head(group) == head


def test_a_reviewer_is_told_who_creates_missions_and_gets_no_form(
    dash: Dashboard, rita: HumanPersona
) -> None:
    """wire§9: mission owners and coordinators create missions; the group page offers no link."""
    group = dash.world.group
    page = logged_in(rita).get(f"/groups/{group}/new-mission/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'name="goal"' not in html
    assert "Only coordinators and mission owners create missions; you are a reviewer." in text(html)
    assert "/new-mission/" not in logged_in(rita).get(f"/groups/{group}/").content.decode()
    assert "/new-mission/" in logged_in(dash.world.olga).get(f"/groups/{group}/").content.decode()
    refused = logged_in(rita).post(f"/groups/{group}/new-mission/", {"goal": "Mine"})
    assert refused.status_code == 403
    assert "Mine" in refused.content.decode()


def test_a_non_member_gets_404_for_every_new_screen(dash: Dashboard) -> None:
    """wire§4: a page never reveals a group to a person outside it."""
    world = dash.world
    mission = wf.mission(world)
    item = wf.authorize(world, mission)
    nina = logged_in(dash.nina)
    g = world.group
    for url in (
        f"/groups/{g}/new-mission/",
        f"/groups/{g}/missions/{mission}/add-work-item/",
        f"/groups/{g}/work-items/{item}/cancel/",
        f"/groups/{g}/missions/{mission}/final-approval/send-back/",
    ):
        assert nina.get(url).status_code == 404, url
    posted = nina.post(f"/groups/{g}/new-mission/", {"goal": "my words"})
    assert posted.status_code == 404
    assert "my words" in posted.content.decode()  # their text back, nothing of the group


# --- add a WorkItem from a contract (work.authorize) ----------------------------------------


def test_the_contract_editor_is_prefilled_with_a_valid_example(
    dash: Dashboard, cora: HumanPersona
) -> None:
    """R10.1-01: the example of wire.md §10 made current, valid as it stands."""
    mission = wf.mission(dash.world, goal="Map the outage")
    html = logged_in(cora).get(f"/groups/{dash.world.group}/missions/{mission}/add-work-item/")
    body = html.content.decode()
    assert 'class="contract-editor"' in body
    assert "&quot;schema&quot;: &quot;mwp.contract/1&quot;" in body
    assert "Map the outage" in body


def test_an_invalid_contract_is_checked_before_sending_and_each_field_is_named(
    dash: Dashboard, cora: HumanPersona
) -> None:
    """The protocol core's validator names every bad field by its path (R10.1-01); nothing is
    sent and the typed text comes back exactly."""
    group = dash.world.group
    mission = wf.mission(dash.world)
    head = wf.head(group)
    typed = _contract_text(budgets={"tokens": -1}, urgency="whenever")
    response = logged_in(cora).post(
        f"/groups/{group}/missions/{mission}/add-work-item/", {"contract": typed}
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert 'data-path="$.budgets.tokens"' in html
    assert 'data-path="$.urgency"' in html
    assert "$.budgets.tokens</code>: expected a number of at least 0" in html
    assert "whenever" in html
    assert wf.head(group) == head
    broken = logged_in(cora).post(
        f"/groups/{group}/missions/{mission}/add-work-item/", {"contract": '{"goal": '}
    )
    assert broken.status_code == 400
    assert "not valid JSON" in broken.content.decode()
    assert "{&quot;goal&quot;: " in broken.content.decode()


def test_a_coordinator_adds_a_work_item_with_its_dependency(
    dash: Dashboard, cora: HumanPersona
) -> None:
    """wire§9 work.authorize: the contract, an id, the WorkItems it waits on; the page of
    the new WorkItem follows."""
    group = dash.world.group
    mission = wf.mission(dash.world)
    first = wf.authorize(dash.world, mission)
    client = logged_in(cora)
    page = client.get(f"/groups/{group}/missions/{mission}/add-work-item/").content.decode()
    assert f'value="{first}"' in page
    response = client.post(
        f"/groups/{group}/missions/{mission}/add-work-item/",
        {
            "contract": _contract_text(goal="Write the timeline"),
            "work_item": "wi-timeline",
            "depends_on": [first],
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    assert response["Location"] == f"/groups/{group}/work-items/wi-timeline/"
    event = wf.last_event(group)
    assert (event["type"], event["actor"]) == ("work.authorized", "user:cora")
    assert event["payload"]["depends_on"] == [first]
    assert WorkItem.objects.get(group_id=group, work_item_id="wi-timeline").mission == mission


def test_a_mission_owner_is_told_that_coordinators_add_work(dash: Dashboard) -> None:
    """work.authorize is a coordinator's (wire§9): olga gets words, no editor, and the mission
    page says who adds its WorkItems."""
    group = dash.world.group
    mission = wf.mission(dash.world)
    olga = logged_in(dash.world.olga)
    html = olga.get(f"/groups/{group}/missions/{mission}/add-work-item/").content.decode()
    assert "contract-editor" not in html
    assert "Only coordinators add WorkItems; you are a mission owner." in text(html)
    mission_page = olga.get(f"/groups/{group}/missions/{mission}/").content.decode()
    assert "Coordinators add its WorkItems." in text(mission_page)
    refused = olga.post(
        f"/groups/{group}/missions/{mission}/add-work-item/", {"contract": _contract_text()}
    )
    assert refused.status_code == 403


# --- cancel one WorkItem (work.cancel) ------------------------------------------------------


def test_cancelling_a_work_item_asks_first_then_records_the_reason(dash: Dashboard) -> None:
    """R10.2-14: the page says what follows; only the second step cancels, with the reason."""
    group = dash.world.group
    mission = wf.mission(dash.world)
    item = wf.authorize(dash.world, mission)
    olga = logged_in(dash.world.olga)
    item_page = olga.get(f"/groups/{group}/work-items/{item}/").content.decode()
    assert f"/work-items/{item}/cancel/" in item_page
    asked = olga.get(f"/groups/{group}/work-items/{item}/cancel/")
    assert "Yes, cancel this WorkItem" in asked.content.decode()
    head = wf.head(group)
    empty = olga.post(f"/groups/{group}/work-items/{item}/cancel/", {"reason": "  "})
    assert empty.status_code == 400
    assert wf.head(group) == head
    done = olga.post(f"/groups/{group}/work-items/{item}/cancel/", {"reason": "Not needed now"})
    assert done.status_code == 302
    event = wf.last_event(group)
    assert (event["type"], event["actor"], event["payload"]["reason"]) == (
        "work.cancelled",
        "user:olga",
        "Not needed now",
    )
    again = olga.post(f"/groups/{group}/work-items/{item}/cancel/", {"reason": "Twice, typed"})
    assert again.status_code == 409
    assert "already ended" in text(again.content.decode())
    assert "Twice, typed" in again.content.decode()


def test_a_reviewer_gets_no_cancel_link_and_is_told_who_cancels(
    dash: Dashboard, rita: HumanPersona
) -> None:
    group = dash.world.group
    item = wf.authorize(dash.world, wf.mission(dash.world))
    client = logged_in(rita)
    assert "/cancel/" not in client.get(f"/groups/{group}/work-items/{item}/").content.decode()
    html = client.get(f"/groups/{group}/work-items/{item}/cancel/").content.decode()
    assert "Yes, cancel" not in html
    assert "Only coordinators and mission owners cancel WorkItems; you are a reviewer." in text(
        html
    )
    refused = client.post(f"/groups/{group}/work-items/{item}/cancel/", {"reason": "kept words"})
    assert refused.status_code == 403
    assert "kept words" in refused.content.decode()


# --- ask for changes at the final approval --------------------------------------------------


def test_at_the_final_approval_accepted_items_are_asked_changes_of_in_one_command(
    dash: Dashboard,
) -> None:
    """R13.2-03 step 5, R10.2-19: no command reopens a verified item; the chosen accepted
    results go in ONE ``mission.request_changes`` with the note, and the mission is not
    approved (tests/dashboard/test_change_requests.py: what the pages then say)."""
    group = dash.world.group
    mission = wf.mission(dash.world)
    item = wf.verified_item(dash.world, mission)
    olga = logged_in(dash.world.olga)
    final = olga.get(f"/groups/{group}/missions/{mission}/final-approval/").content.decode()
    assert "/final-approval/send-back/" in final
    url = f"/groups/{group}/missions/{mission}/final-approval/send-back/"
    form = olga.get(url).content.decode()
    assert f'value="{item}"' in form
    missing = olga.post(url, {"note": "typed note"})
    assert missing.status_code == 400
    assert "typed note" in missing.content.decode()
    before = wf.head(group)
    done = olga.post(url, {"work_items": [item], "note": "Add the timeline of the outage"})
    assert done.status_code == 302
    event = wf.last_event(group)
    assert wf.head(group) == before + 1
    assert (event["type"], event["actor"]) == ("mission.changes_requested", "user:olga")
    assert event["payload"] == {
        "mission": mission,
        "work_items": [item],
        "note": "Add the timeline of the outage",
    }
    assert Mission.objects.get(group_id=group, mission_id=mission).state == "active"
    assert "The mission is not approved." in text(olga.get(done["Location"]).content.decode())


def test_a_submitted_result_is_sent_back_with_the_note(dash: Dashboard) -> None:
    """R10.2-13: a submitted result chosen there is sent back (work.fail, needs changes)."""
    world = dash.world
    group = world.group
    mission = wf.mission(world)
    item = wf.authorize(world, mission)
    wf.accept(world, item, wf.offer(world, item))
    lease = wf.start(world, item)
    wf.submit_result(world, item, lease, artifact=b"# Summary\n")
    olga = logged_in(world.olga)
    url = f"/groups/{group}/missions/{mission}/final-approval/send-back/"
    done = olga.post(url, {"work_items": [item], "note": "Cover every report"})
    assert done.status_code == 302, done.content.decode()[:3000]
    failed = [
        json.loads(d)
        for d in Event.objects.filter(group_id=group, type="work.failed").values_list(
            "document", flat=True
        )
    ]
    assert failed
    assert failed[-1]["actor"] == "user:olga"
    assert failed[-1]["payload"]["evidence"][0]["result"]["summary"] == "Cover every report"


def test_a_reviewer_may_not_ask_for_changes_at_the_final_approval(
    dash: Dashboard, rita: HumanPersona
) -> None:
    group = dash.world.group
    mission = wf.mission(dash.world)
    url = f"/groups/{group}/missions/{mission}/final-approval/send-back/"
    html = logged_in(rita).get(url).content.decode()
    assert "Ask for these changes" not in html
    assert "you are a reviewer" in text(html)


def test_a_contract_problem_says_on_which_line_its_field_is_written() -> None:
    """The editor's problems point at the line of the typed text (array items counted)."""
    typed = json.dumps(example_contract(), indent=2)
    lines = typed.splitlines()
    tokens = line_of(typed, "$.budgets.tokens")
    assert tokens is not None
    assert '"tokens": 200000' in lines[tokens - 1]
    second = line_of(typed, "$.acceptance_criteria[1].method")
    assert second is not None
    assert '"human_review"' in lines[second - 1]
    assert line_of(typed, "$.nowhere") is None
