"""Priority changes and essential questions over HTTP, through the one write path, as a client
written from wire.md would meet them (issue 35 §4, §5).

``work.reprioritize`` (R0-12, R11.3-11, R11.1-07): a coordinator or a mission owner changes a
WorkItem's urgency and deadline in any non-terminal state; the projection serves the new
values in its contract, indexes the new urgency, and keeps the change. A worker may not.

Essential questions (R10.1-02..04): a reply settles one only when it comes from a coordinator
or a mission owner who did not ask it; any other reply is kept as a message.
"""

from __future__ import annotations

import pytest

from apps.work.models import WorkItem
from tests.factories import now_text

from .work_http import Wire, WorkWorld, authorized, far, offer_body, owned, started

pytestmark = pytest.mark.django_db

REPRIORITIZE = "work.reprioritize"


def test_a_mission_owner_escalates_a_queued_item_and_the_projection_follows(
    wire: Wire, ww: WorkWorld
) -> None:
    """R0-12, R11.1-07: one ``work.reprioritized`` whose payload carries the new and previous
    values; the item stays queued under the same owner and revision; the row's indexed
    urgency follows (the dashboard's lists filter on it)."""
    owned(wire, ww, "wi-p")
    before = wire.item("wi-p")
    body = {"work_item": "wi-p", "urgency": "critical", "reason": "the customer called"}
    answer = wire.ok(ww.olga, REPRIORITIZE, body)
    assert [event["type"] for event in answer["events"]] == ["work.reprioritized"]
    [event] = wire.events(after=answer["events"][0]["sequence"] - 1)
    assert event["payload"] == {
        "work_item": "wi-p",
        "urgency": "critical",
        "deadline": before["contract"]["deadline"],
        "previous": {"urgency": "normal", "deadline": before["contract"]["deadline"]},
        "reason": "the customer called",
    }
    item = wire.item("wi-p")
    assert item["contract"]["urgency"] == "critical"
    for unchanged in ("state", "revision", "owner", "ownership_epoch", "start_deadline"):
        assert item[unchanged] == before[unchanged], unchanged
    assert item["priority_changes"][-1]["by"] == ww.olga.principal
    row = WorkItem.objects.get(group_id=wire.group, work_item_id="wi-p")
    assert row.urgency == "critical"


def test_the_coordinator_moves_an_active_items_deadline(wire: Wire, ww: WorkWorld) -> None:
    """R0-12: at any non-terminal state; the lease is untouched."""
    started(wire, ww, "wi-a")
    lease = wire.item("wi-a")["lease"]
    deadline = now_text(1800)
    body = {"work_item": "wi-a", "deadline": deadline, "reason": "the board meets earlier"}
    wire.ok(ww.w1, REPRIORITIZE, body)
    item = wire.item("wi-a")
    assert (item["contract"]["deadline"], item["lease"]) == (deadline, lease)


def test_a_worker_may_not_change_priority_and_nothing_is_appended(
    wire: Wire, ww: WorkWorld
) -> None:
    """wire.md §3 step 7, R11.1-06: the owner cannot escalate its own work."""
    owned(wire, ww, "wi-w")
    body = {"work_item": "wi-w", "urgency": "critical", "reason": "mine first"}
    wire.refused(ww.w2, REPRIORITIZE, body, 403, "FORBIDDEN")
    assert wire.item("wi-w")["contract"]["urgency"] == "normal"


def test_a_worker_cannot_answer_its_own_essential_question_and_accept(
    wire: Wire, ww: WorkWorld
) -> None:
    """R10.1-02, R10.1-03, R10.1-04 (issue 35 §5 reproduction): the asker's reply is kept
    (201, ``resolves: false``) but the acceptance is still refused; another worker's reply
    settles nothing either; the coordinator's does, and then the worker accepts."""
    authorized(wire, ww, "wi-q")
    wire.ok(ww.w1, "work.offer", offer_body("wi-q", [("o1", ww.w2, far())]))
    question = {"work_item": "wi-q", "text": "Which reports?", "essential": True}
    asked = wire.ok(ww.w2, "work.message", question)["result"]["message"]
    own = {"work_item": "wi-q", "text": "All of them, I suppose", "in_reply_to": asked}
    assert wire.ok(ww.w2, "work.message", own)["result"]["resolves"] is False
    other = {"work_item": "wi-q", "text": "Last month's", "in_reply_to": asked}
    assert wire.ok(ww.w3, "work.message", other)["result"]["resolves"] is False
    accept = {"work_item": "wi-q", "offer": "o1", "contract_revision": 1}
    wire.refused(ww.w2, "work.accept_offer", accept, 409, "ILLEGAL_TRANSITION", "R10.1-03")
    item = wire.item("wi-q")
    assert (item["open_questions"], item["messages"]) == ([asked], 3)
    assert item["question_askers"] == {asked: ww.w2.principal}

    answer = {"work_item": "wi-q", "text": "November's only", "in_reply_to": asked}
    assert wire.ok(ww.w1, "work.message", answer)["result"]["resolves"] is True
    assert wire.item("wi-q")["open_questions"] == []
    wire.ok(ww.w2, "work.accept_offer", accept)
