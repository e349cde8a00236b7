"""``mission.request_changes`` over HTTP, through the one write path (R13.2-03 step 5,
R10.2-21; issue 36 §5).

At the final approval a human mission owner sends an accepted (verified) result back with a
note: the request is kept on the mission, ``mission.approve`` is refused while it is open, the
coordinator replaces the item (allowed only because the request names it), and once the
replacement is accepted the mission is approved. Refusals append nothing.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.ledger.checks import assert_log_consistent

from .work_http import (
    Wire,
    WorkWorld,
    authorize_body,
    authorized,
    checked,
    contract,
    evidence,
    far,
    machine_criteria,
    offer_body,
    review,
    started,
    submission,
)

pytestmark = pytest.mark.django_db

REQUEST = "mission.request_changes"
NOTE = "Add the March incidents."


def verified(wire: Wire, ww: WorkWorld, work_item: str, **extra: Any) -> None:
    """An item of ``m-1`` started, submitted and accepted by the coordinator: ``verified``."""
    lease = started(
        wire, ww, work_item, contract=contract(acceptance_criteria=machine_criteria()), **extra
    )
    body = submission(wire, ww.w2, work_item, lease, [evidence("c1", ww.w2)])
    wire.ok(ww.w2, "work.submit", body)
    checked(ww.group, work_item)
    wire.ok(ww.w1, "work.accept_result", {"work_item": work_item, "review": review("c1")})


def asking(*items: str, note: str = NOTE) -> dict[str, Any]:
    return {"mission": "m-1", "work_items": list(items), "note": note}


def test_a_request_holds_the_approval_until_the_replacement_is_accepted(
    wire: Wire, ww: WorkWorld
) -> None:
    """R13.2-03, R10.2-21: 201 with one ``mission.changes_requested``; the mission keeps it;
    ``mission.approve`` is 409 naming the item; the coordinator's replacement is accepted;
    then the approval waits for it to finish, and passes once it is verified."""
    verified(wire, ww, "wi-1")
    answer = wire.ok(ww.olga, REQUEST, asking("wi-1"))
    assert answer["result"] == {"mission": "m-1", "work_items": ["wi-1"]}
    [event] = wire.events(after=answer["events"][0]["sequence"] - 1)
    assert (event["type"], event["payload"]) == (
        "mission.changes_requested",
        {"mission": "m-1", "work_items": ["wi-1"], "note": NOTE},
    )
    (kept,) = wire.mission("m-1")["change_requests"]
    assert kept["by"] == ww.olga.principal
    assert (kept["work_items"], kept["note"], kept["sequence"]) == (
        ["wi-1"],
        NOTE,
        event["sequence"],
    )
    assert wire.item("wi-1")["state"] == "verified"

    approve = {"mission": "m-1", "comment": "fine"}
    error = wire.refused(
        ww.oscar, "mission.approve", approve, 409, "ILLEGAL_TRANSITION", "R13.2-03"
    )
    assert error["details"] == {"changes_requested": ["wi-1"]}

    machine = contract(acceptance_criteria=machine_criteria())
    replacement = authorize_body("wi-1-r1", "m-1", replaces="wi-1", contract=machine)
    types = [e["type"] for e in wire.ok(ww.w1, "work.authorize", replacement)["events"]]
    assert types == ["work.authorized", "work.replaced"]
    assert wire.item("wi-1")["replaced_by"] == "wi-1-r1"
    error = wire.refused(ww.oscar, "mission.approve", approve, 409, "ILLEGAL_TRANSITION")
    assert error["details"] == {"unfinished": ["wi-1-r1"]}

    lease = _start_replacement(wire, ww, "wi-1-r1")
    body = submission(wire, ww.w2, "wi-1-r1", lease, [evidence("c1", ww.w2)])
    wire.ok(ww.w2, "work.submit", body)
    checked(ww.group, "wi-1-r1")
    wire.ok(ww.w1, "work.accept_result", {"work_item": "wi-1-r1", "review": review("c1")})
    wire.ok(ww.oscar, "mission.approve", approve)
    assert wire.mission("m-1")["state"] == "approved"
    assert_log_consistent(ww.group)


def _start_replacement(wire: Wire, ww: WorkWorld, work_item: str) -> str:
    wire.ok(ww.w1, "work.offer", offer_body(work_item, [(f"{work_item}-o", ww.w2, far())]))
    body = {"work_item": work_item, "offer": f"{work_item}-o", "contract_revision": 1}
    epoch = wire.ok(ww.w2, "work.accept_offer", body)["result"]["ownership_epoch"]
    answer = wire.ok(ww.w2, "work.start", {"work_item": work_item, "ownership_epoch": epoch})
    return answer["result"]["lease"]["lease_id"]


def test_what_cannot_be_asked_is_refused_and_appends_nothing(wire: Wire, ww: WorkWorld) -> None:
    """wire.md §8, §9: not the owner's role, an agent mission owner (humans only), an item not
    verified, of no mission, or a blank note; a verified item nobody asked changes of cannot
    be replaced."""
    verified(wire, ww, "wi-1")
    authorized(wire, ww, "wi-open")
    wire.refused(ww.w1, REQUEST, asking("wi-1"), 403, "FORBIDDEN")
    wire.refused(ww.mo_agent, REQUEST, asking("wi-1"), 403, "FORBIDDEN")
    error = wire.refused(
        ww.olga, REQUEST, asking("wi-1", "wi-open"), 409, "ILLEGAL_TRANSITION", "R13.2-03"
    )
    assert error["details"] == {"path": "$.work_items[1]", "work_item": "wi-open", "state": "open"}
    error = wire.refused(ww.olga, REQUEST, asking("wi-none"), 404, "NOT_FOUND")
    assert error["details"]["path"] == "$.work_items[0]"
    wire.refused(ww.olga, REQUEST, asking("wi-1", note=" "), 400, "MALFORMED")
    replacement = authorize_body("wi-1-r1", "m-1", replaces="wi-1")
    error = wire.refused(
        ww.w1, "work.authorize", replacement, 409, "ILLEGAL_TRANSITION", "R10.2-21"
    )
    assert error["details"]["state"] == "verified"
