"""``work.ask`` over HTTP, through the one write path, as a client written from wire.md would
meet it (R10.2-06, R13.2-03; issue 36 §4).

A mission owner or a coordinator names the people an execution approval or a review waits
for; the event and the WorkItem projection say who was asked, by whom and when. Asking
someone who could not act is 403 ``FORBIDDEN`` with ``details`` naming them, and appends
nothing.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.factories import human

from .test_human_decisions import submitted
from .work_http import Wire, WorkWorld, approval_risk, contract, owned

pytestmark = pytest.mark.django_db

ASK = "work.ask"


def gated(wire: Wire, ww: WorkWorld, work_item: str, approvals: int = 2) -> None:
    """A queued item waiting for ``approvals`` execution approvals."""
    owned(wire, ww, work_item, contract=contract(risk=approval_risk(approvals)))


def asking(work_item: str, *asked: Any, **extra: Any) -> dict[str, Any]:
    return {
        "work_item": work_item,
        "for": "execution_approval",
        "asked": [p if isinstance(p, str) else p.principal for p in asked],
        **extra,
    }


def test_a_mission_owner_asks_another_and_the_item_says_who_was_asked(
    wire: Wire, ww: WorkWorld
) -> None:
    """R10.2-06: 201 with one ``work.asked``; its payload names the people, the revision and
    the note; the projection keeps the ask with who asked and when; the state is unchanged."""
    gated(wire, ww, "wi-ask")
    body = asking("wi-ask", ww.oscar, ww.cora, note="before noon, please")
    answer = wire.ok(ww.olga, ASK, body)
    assert [event["type"] for event in answer["events"]] == ["work.asked"]
    assert answer["result"] == {
        "work_item": "wi-ask",
        "for": "execution_approval",
        "asked": [ww.oscar.principal, ww.cora.principal],
    }
    [event] = wire.events(after=answer["events"][0]["sequence"] - 1)
    assert event["actor"] == ww.olga.principal
    assert event["payload"] == {
        "work_item": "wi-ask",
        "for": "execution_approval",
        "asked": [ww.oscar.principal, ww.cora.principal],
        "revision": 1,
        "note": "before noon, please",
    }
    item = wire.item("wi-ask")
    assert item["state"] == "queued"
    (kept,) = item["asks"]
    assert kept["by"] == ww.olga.principal
    assert kept["asked"] == [ww.oscar.principal, ww.cora.principal]
    assert kept["sequence"] == event["sequence"]
    assert kept["recorded_at"] == event["recorded_at"]


def test_the_coordinator_agent_asks_too(wire: Wire, ww: WorkWorld) -> None:
    """wire§9: a coordinator (here an agent, signing) may ask; the answer is the same."""
    gated(wire, ww, "wi-agent")
    wire.ok(ww.w1, ASK, asking("wi-agent", ww.oscar))
    assert wire.item("wi-agent")["asks"][0]["by"] == ww.w1.principal


@pytest.mark.parametrize(
    ("who", "reason"),
    [
        ("rex", "FORBIDDEN"),  # a reviewer agent: only people grant
        ("w2", "FORBIDDEN"),  # the owner, a worker
        ("mo_agent", "FORBIDDEN"),  # an agent holding mission_owner: humans only
        ("stranger", "NOT_A_MEMBER"),
    ],
)
def test_asking_someone_who_may_not_grant_is_403_naming_them(
    wire: Wire, ww: WorkWorld, who: str, reason: str
) -> None:
    """R10.2-06, wire§8: 403 ``FORBIDDEN``, ``details`` {principal, path, reason: the code
    their own grant would get}; nothing is appended."""
    gated(wire, ww, "wi-no")
    persona = getattr(ww, who)
    error = wire.refused(
        ww.olga, ASK, asking("wi-no", ww.oscar, persona), 403, "FORBIDDEN", "R10.2-06"
    )
    assert error["details"] == {
        "principal": persona.principal,
        "path": "$.asked[1]",
        "reason": reason,
    }


def test_a_person_with_no_membership_or_who_already_decided_cannot_be_asked(
    wire: Wire, ww: WorkWorld
) -> None:
    """R10.2-06: a person outside the group (``NOT_A_MEMBER``) and one who already granted
    this revision (``DUPLICATE_APPROVAL``) are named in the refusal's details."""
    gated(wire, ww, "wi-dup")
    outsider = human("ursula")
    error = wire.refused(ww.olga, ASK, asking("wi-dup", outsider), 403, "FORBIDDEN")
    assert error["details"]["reason"] == "NOT_A_MEMBER"
    grant = {"work_item": "wi-dup", "contract_revision": 1, "comment": ""}
    wire.ok(ww.oscar, "approval.grant_execution", grant)
    error = wire.refused(ww.olga, ASK, asking("wi-dup", ww.oscar), 403, "FORBIDDEN")
    assert error["details"] == {
        "principal": ww.oscar.principal,
        "path": "$.asked[0]",
        "reason": "DUPLICATE_APPROVAL",
    }


def test_malformed_asks_and_asks_of_nothing_waiting(wire: Wire, ww: WorkWorld) -> None:
    """wire§8: a bad body is 400 ``MALFORMED`` at its path; an item that waits for no
    approval is 409 ``ILLEGAL_TRANSITION``; a stale revision 409 ``STALE_REVISION``."""
    gated(wire, ww, "wi-m", approvals=1)
    error = wire.refused(ww.olga, ASK, asking("wi-m"), 400, "MALFORMED")
    assert error["details"] == {"path": "$.asked"}
    error = wire.refused(ww.olga, ASK, asking("wi-m", ww.olga), 400, "MALFORMED")
    assert error["details"] == {"path": "$.asked[0]"}
    body = asking("wi-m", ww.oscar, contract_revision=2)
    error = wire.refused(ww.olga, ASK, body, 409, "STALE_REVISION")
    assert error["details"] == {"revision": 1}
    owned(wire, ww, "wi-free")  # its contract needs no execution approval
    error = wire.refused(ww.olga, ASK, asking("wi-free", ww.oscar), 409, "ILLEGAL_TRANSITION")
    assert error["details"]["approvals_required"] == 0
    error = wire.refused(ww.olga, ASK, asking("wi-ghost", ww.oscar), 404, "NOT_FOUND")


def test_who_may_ask(wire: Wire, ww: WorkWorld) -> None:
    """wire§9: a worker or a reviewer may not ask (``FORBIDDEN`` naming the allowed roles)."""
    gated(wire, ww, "wi-who")
    error = wire.refused(ww.w2, ASK, asking("wi-who", ww.oscar), 403, "FORBIDDEN", "wire§9")
    assert error["details"] == {"allowed_roles": ["coordinator", "mission_owner"]}
    wire.refused(ww.rex, ASK, asking("wi-who", ww.oscar), 403, "FORBIDDEN")


def test_asking_for_a_review_of_the_submission(wire: Wire, ww: WorkWorld) -> None:
    """R13.2-03: the coordinator asks the reviewer agent and a mission owner; the event names
    the submission; the owner cannot be asked (its reason ``FORBIDDEN``: it holds no role
    that reviews)."""
    submitted(wire, ww, "wi-rev")
    current = wire.item("wi-rev")["review"]["submission"]
    body = {"work_item": "wi-rev", "for": "review", "asked": [ww.rex.principal, ww.olga.principal]}
    answer = wire.ok(ww.w1, ASK, {**body, "submission": current})
    [event] = wire.events(after=answer["events"][0]["sequence"] - 1)
    assert event["payload"]["submission"] == current
    assert wire.item("wi-rev")["asks"][-1]["for"] == "review"
    error = wire.refused(
        ww.w1, ASK, {**body, "asked": [ww.w2.principal]}, 403, "FORBIDDEN", "R13.2-03"
    )
    assert error["details"]["principal"] == ww.w2.principal
    error = wire.refused(
        ww.w1, ASK, {**body, "submission": current + 1000}, 409, "ILLEGAL_TRANSITION"
    )
