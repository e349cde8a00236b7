"""Late results after a real reassignment (R11.5-01, R11.5-02, R11.5-03), over HTTP.

The owner starts with a one-second lease (``lease_ttl_s: 1``) and stops renewing; once the
lease has run out by the database clock, the sweep (``apps.work.sweeps.sweep_due``, what the
Celery beat task runs) reassigns the item. The former owner's submission then arrives: it is
kept for audit (202 ``work.late_result_recorded``) and changes nothing else; every other
command of the former owner is ``STALE_OWNERSHIP``.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import pytest
from rest_framework.test import APIClient

from apps.work.sweeps import sweep_due
from missionweave.protocol import states as S
from missionweave.protocol.canonical import digest as content_digest
from missionweave.protocol.identifiers import AUTHORITY
from missionweave.protocol.timefmt import parse_timestamp

from .work_http import (
    Wire,
    WorkWorld,
    authorized,
    build_work_world,
    checkpoint_body,
    evidence,
    far,
    offer_body,
    progress_body,
    submission,
)

pytestmark = pytest.mark.django_db


def _expired_and_swept(api: APIClient, *, also_offered: bool) -> tuple[WorkWorld, Wire, str, int]:
    """``wi-late`` started by ``w2`` under a one-second lease (offered to ``w3`` too when
    ``also_offered``), then swept after the lease ran out; returns the lease id and the head
    before the sweep."""
    ww = build_work_world()
    wire = Wire(api, ww.group, ww.w1)
    authorized(wire, ww, "wi-late")
    offers = [("o-w2", ww.w2, far())] + ([("o-w3", ww.w3, far())] if also_offered else [])
    wire.ok(ww.w1, "work.offer", offer_body("wi-late", offers))
    accept = {"work_item": "wi-late", "offer": "o-w2", "contract_revision": 1}
    epoch = wire.ok(ww.w2, "work.accept_offer", accept)["result"]["ownership_epoch"]
    start = {"work_item": "wi-late", "ownership_epoch": epoch, "lease_ttl_s": 1}
    lease = wire.ok(ww.w2, "work.start", start)["result"]["lease"]
    wait = (parse_timestamp(lease["expires_at"]) - datetime.now(UTC)).total_seconds()
    time.sleep(max(wait, 0) + 0.05)
    before = wire.head()
    report = sweep_due()
    assert (report.examined, report.applied, report.refused) == (1, 1, 0), report
    return ww, wire, lease["lease_id"], before


#: what the former owner had produced before it was fenced
LATE_SUMMARY = b"# November incidents\n\nFinished after the lease ran out.\n"


def _late_submission(
    wire: Wire, ww: WorkWorld, lease_id: str, data: bytes = LATE_SUMMARY
) -> dict[str, Any]:
    """The former owner's complete submission of ``data``, uploaded by it first (a late result
    names stored bytes like any other, wire.md §9)."""
    evidence_items = [evidence("c1", ww.w2), evidence("c2", ww.w2, method="human_review")]
    return submission(wire, ww.w2, "wi-late", lease_id, evidence_items, data)


def test_the_sweep_reassigns_an_expired_lease_to_the_next_offered_worker(api: APIClient) -> None:
    """R11.5-01, R11.3-09: the authority records the expiry, fences the owner and re-offers;
    a second sweep finds nothing due."""
    ww, wire, lease_id, before = _expired_and_swept(api, also_offered=True)
    events = wire.events(after=before)
    assert [(e["type"], e["actor"]) for e in events] == [
        ("lease.expired", AUTHORITY),
        ("work.reassigned", AUTHORITY),
        ("work.offered", AUTHORITY),
    ]
    assert events[0]["payload"]["lease_id"] == lease_id
    assert events[1]["payload"]["offered_to"] == ww.w3.principal
    item = wire.item("wi-late")
    assert (item["state"], item["owner"], item["former_owners"]) == (
        S.OFFERED,
        None,
        [ww.w2.principal],
    )
    assert sweep_due().examined == 0


def test_a_former_owners_late_submission_is_recorded_for_audit_and_changes_nothing(
    api: APIClient,
) -> None:
    """R11.5-02, R11.5-03: after the reassignment and the next owner's acceptance, the old
    owner's ``work.submit`` is 202 ``work.late_result_recorded``: the state, owner and
    submission are unchanged and the result is in the late-result log."""
    ww, wire, lease_id, _before = _expired_and_swept(api, also_offered=True)
    reoffer = wire.events(after=wire.head() - 1)[0]["payload"]["offers"][0]["offer"]
    accept = {"work_item": "wi-late", "offer": reoffer, "contract_revision": 1}
    assert wire.ok(ww.w3, "work.accept_offer", accept)["result"]["ownership_epoch"] == 2
    before = wire.item("wi-late")
    late = _late_submission(wire, ww, lease_id)

    answer = wire.ok(ww.w2, "work.submit", late, status=202)

    [recorded] = answer["events"]
    assert recorded["type"] == "work.late_result_recorded"
    assert answer["result"] == {"late_result": True, "state": S.QUEUED}
    [document] = wire.events(after=recorded["sequence"] - 1)
    payload = document["payload"]
    assert payload["former_owner"] == ww.w2.principal
    # R11.5-02: the epoch the former owner held and the key that bounds what is kept
    assert (payload["former_ownership_epoch"], payload["current_ownership_epoch"]) == (1, 2)
    # (docs/protocol.md: the epoch and the digest of the canonical body)
    assert content_digest(late) in payload["late_result_key"]
    after = wire.item("wi-late")
    for unchanged in ("state", "owner", "ownership_epoch", "submission", "lease", "start_deadline"):
        assert after[unchanged] == before[unchanged], unchanged
    assert after["late_results"] == 1
    [entry] = after["late_result_log"]
    assert entry["sequence"] == recorded["sequence"]
    assert entry["former_owner"] == ww.w2.principal
    assert entry["lease_id"] == lease_id
    assert entry["artifacts"] == late["artifacts"]


def test_a_late_result_on_an_item_nobody_owns_leaves_it_open(api: APIClient) -> None:
    """R11.5-03: with no eligible worker the item went back to ``open``; the late result does
    not complete it."""
    ww, wire, lease_id, _before = _expired_and_swept(api, also_offered=False)
    assert wire.item("wi-late")["state"] == S.OPEN
    answer = wire.ok(ww.w2, "work.submit", _late_submission(wire, ww, lease_id), status=202)
    assert answer["result"] == {"late_result": True, "state": S.OPEN}
    item = wire.item("wi-late")
    assert (item["state"], item["submission"], item["late_results"]) == (S.OPEN, None, 1)


def test_the_same_late_result_is_kept_once_and_a_repeat_points_at_it(api: APIClient) -> None:
    """R11.5-02: a late result is kept once per (former ownership epoch, content): the same
    submission sent again (a retrying agent) is answered 202 with ``kept_at``, the sequence of
    the one event kept, and appends nothing; a different result of the same former owner is
    kept too, under a key of its own."""
    ww, wire, lease_id, _before = _expired_and_swept(api, also_offered=True)
    late = _late_submission(wire, ww, lease_id)
    [kept] = wire.ok(ww.w2, "work.submit", late, status=202)["events"]
    head = wire.head()

    repeat = wire.ok(ww.w2, "work.submit", late, status=202)

    assert repeat["events"] == []
    assert repeat["result"] == {
        "late_result": True,
        "state": S.OFFERED,
        "kept_at": kept["sequence"],
    }
    assert wire.head() == head
    assert wire.item("wi-late")["late_results"] == 1

    revised = _late_submission(wire, ww, lease_id, data=LATE_SUMMARY + b"\nRevised.\n")
    [again] = wire.ok(ww.w2, "work.submit", revised, status=202)["events"]

    assert again["sequence"] == head + 1
    first, second = wire.events(after=kept["sequence"] - 1)
    assert [first["type"], second["type"]] == ["work.late_result_recorded"] * 2
    assert first["payload"]["former_ownership_epoch"] == 1
    assert second["payload"]["former_ownership_epoch"] == 1
    assert first["payload"]["late_result_key"] != second["payload"]["late_result_key"]
    item = wire.item("wi-late")
    assert item["late_results"] == 2
    assert [entry["sequence"] for entry in item["late_result_log"]] == [
        kept["sequence"],
        again["sequence"],
    ]


#: every other owner's command, each with the former owner's own lease id (or epoch)
FORMER_OWNER_COMMANDS = (
    "work.start", "lease.renew", "work.progress", "work.usage", "work.checkpoint", "work.block",
    "work.fail",
)  # fmt: skip


def test_every_other_command_of_the_former_owner_is_stale_ownership(api: APIClient) -> None:
    """R11.3-01, R11.5-01, wire§8: the fenced owner, even with its own lease id and epoch, is
    STALE_OWNERSHIP for each of its other commands, and none appends anything."""
    ww, wire, lease_id, _before = _expired_and_swept(api, also_offered=True)
    bodies: dict[str, dict[str, Any]] = {
        "work.start": {"work_item": "wi-late", "ownership_epoch": 1},
        "lease.renew": {"work_item": "wi-late", "lease_id": lease_id},
        "work.progress": progress_body("wi-late", lease_id),
        "work.usage": {"work_item": "wi-late", "lease_id": lease_id, "usage": {"tokens": 5}},
        "work.checkpoint": checkpoint_body("wi-late", lease_id),
        "work.block": {
            **checkpoint_body("wi-late", lease_id),
            "required_resolution": "access to the archive",
        },
        "work.fail": {
            "work_item": "wi-late",
            "lease_id": lease_id,
            "evidence": [evidence("c1", ww.w2, verdict="fail")],
        },
    }
    assert set(bodies) == set(FORMER_OWNER_COMMANDS)
    before = wire.item("wi-late")
    for command in FORMER_OWNER_COMMANDS:
        error = wire.refused(ww.w2, command, bodies[command], 409, "STALE_OWNERSHIP")
        assert error["requirement"] == "R11.3-01", command
    assert wire.item("wi-late") == before
