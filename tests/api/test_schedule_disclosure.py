"""Schedule disclosure over HTTP (MWP-WRK-012; R0-09, R11.2-01, R11.2-02), as an independent
client written from wire.md would use it: ``work.disclose_schedule`` by the item's owner
appends ``work.schedule_disclosed`` and the WorkItem projection shows it as ``schedule``;
everyone else, a stale epoch and any malformed body are refused with the contract's codes and
append nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from missionweave.protocol.work.schedule import disclosure_body

from .work_http import Wire, WorkWorld, checkpoint_body, owned, started

pytestmark = pytest.mark.django_db

DISCLOSE = "work.disclose_schedule"


def schedule(work_item: str, epoch: int = 1, **changes: Any) -> dict[str, Any]:
    """A disclosure computed now: start within the hour, done in three."""
    now = datetime.now(UTC)
    body = disclosure_body(
        work_item=work_item,
        ownership_epoch=epoch,
        earliest_start=now + timedelta(minutes=5),
        latest_start=now + timedelta(hours=1),
        estimated_completion=now + timedelta(hours=3),
        confidence=0.75,
        capacity_state="busy",
        computed_at=now,
        compute_seconds=0.002,
    )
    return {**body, **changes}


def test_the_owner_discloses_on_acceptance_and_again_once_active(wire: Wire, ww: WorkWorld) -> None:
    """R11.2-01: on acceptance (queued, by ownership epoch: no lease yet) and on a material
    change (active): 201 with one ``work.schedule_disclosed`` whose payload is the body; the
    projection's ``schedule`` is the latest, the item's state unchanged."""
    epoch = owned(wire, ww, "wi-s")["ownership_epoch"]
    body = schedule("wi-s", epoch)
    answer = wire.ok(ww.w2, DISCLOSE, body)
    assert [event["type"] for event in answer["events"]] == ["work.schedule_disclosed"]
    [event] = wire.events(after=answer["events"][0]["sequence"] - 1)
    assert event["payload"] == body
    assert event["actor"] == ww.w2.principal
    item = wire.item("wi-s")
    assert item["state"] == "queued"
    assert item["schedule"] == {
        **{k: v for k, v in body.items() if k != "work_item"},
        "by": ww.w2.principal,
        "sequence": event["sequence"],
        "recorded_at": event["recorded_at"],
    }

    lease = wire.ok(ww.w2, "work.start", {"work_item": "wi-s", "ownership_epoch": epoch})
    assert lease["result"]["lease"]["lease_id"]
    revised = schedule("wi-s", epoch, capacity_state="saturated", confidence=0.4)
    wire.ok(ww.w2, DISCLOSE, revised)
    item = wire.item("wi-s")
    assert item["state"] == "active"
    assert (item["schedule"]["capacity_state"], item["schedule"]["confidence"]) == (
        "saturated",
        0.4,
    )


def test_everyone_but_the_owner_is_refused_and_nothing_is_appended(
    wire: Wire, ww: WorkWorld
) -> None:
    """wire.md §3 step 7 (a role that may not issue it: FORBIDDEN), §8 precedence (never the
    owner: FORBIDDEN), R11.3-01 (an earlier ownership epoch: STALE_OWNERSHIP), wire§4 (an
    unknown item: NOT_FOUND). Each refusal leaves the log head and the item's schedule as
    they were."""
    epoch = owned(wire, ww, "wi-r")["ownership_epoch"]
    wire.ok(ww.w2, DISCLOSE, schedule("wi-r", epoch))
    before = wire.item("wi-r")["schedule"]

    wire.refused(ww.w3, DISCLOSE, schedule("wi-r", epoch), 403, "FORBIDDEN", "wire§9")
    wire.refused(ww.w1, DISCLOSE, schedule("wi-r", epoch), 403, "FORBIDDEN", "wire§9")
    wire.refused(ww.rex, DISCLOSE, schedule("wi-r", epoch), 403, "FORBIDDEN")  # a reviewer
    wire.refused(ww.olga, DISCLOSE, schedule("wi-r", epoch), 403, "FORBIDDEN")  # mission owner
    error = wire.refused(
        ww.w2, DISCLOSE, schedule("wi-r", epoch + 1), 409, "STALE_OWNERSHIP", "R11.3-01"
    )
    assert error["details"] == {"ownership_epoch": epoch}
    error = wire.refused(ww.w2, DISCLOSE, schedule("wi-ghost"), 404, "NOT_FOUND")
    assert error["details"]["path"] == "$.work_item"
    assert wire.item("wi-r")["schedule"] == before


def test_a_malformed_disclosure_is_refused_naming_the_field(wire: Wire, ww: WorkWorld) -> None:
    """R11.2-02 by construction: a field outside the declared ones (a group, a queue
    position), free text where a time or the capacity state goes, an unordered window or a
    confidence above 1 is 400 MALFORMED with ``details.path``, and nothing is appended."""
    epoch = owned(wire, ww, "wi-m")["ownership_epoch"]
    good = schedule("wi-m", epoch)
    window = good["estimated_start"]
    cases = [
        ({**good, "group": "g-other"}, "$.group"),
        ({**good, "queue_position": 3}, "$.queue_position"),
        (
            {**good, "estimated_start": {**window, "note": "after g-other's job"}},
            "$.estimated_start.note",
        ),
        ({**good, "capacity_state": "busy with g-other"}, "$.capacity_state"),
        ({**good, "computed_at": "yesterday"}, "$.computed_at"),
        (
            {
                **good,
                "estimated_start": {"earliest": window["latest"], "latest": window["earliest"]},
            },
            "$.estimated_start",
        ),
        ({**good, "estimated_completion": window["earliest"]}, "$.estimated_completion"),
        ({**good, "confidence": 1.5}, "$.confidence"),
        ({**good, "compute_seconds": -1}, "$.compute_seconds"),
    ]
    for body, path in cases:
        error = wire.refused(ww.w2, DISCLOSE, body, 400, "MALFORMED")
        assert error["details"]["path"] == path, (path, error)
    assert wire.item("wi-m")["schedule"] is None


def test_a_checkpoint_keeps_disclosure_open_and_a_cancellation_closes_it(
    wire: Wire, ww: WorkWorld
) -> None:
    """R10.2-08, R11.2-01: an item a checkpoint re-queues may still be disclosed for;
    R10.2-22: once cancelled it is ILLEGAL_TRANSITION, with nothing appended."""
    lease = started(wire, ww, "wi-c")
    wire.ok(ww.w2, "work.checkpoint", checkpoint_body("wi-c", lease))
    assert wire.item("wi-c")["state"] == "queued"
    wire.ok(ww.w2, DISCLOSE, schedule("wi-c"))
    wire.ok(ww.w1, "work.cancel", {"work_item": "wi-c", "reason": "no longer needed"})
    error = wire.refused(ww.w2, DISCLOSE, schedule("wi-c"), 409, "ILLEGAL_TRANSITION", "R10.2-22")
    assert error["details"]["state"] == "cancelled"
