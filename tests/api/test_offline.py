"""Bounded offline execution over HTTP (R11.5-04..R11.5-13), on PostgreSQL with signed envelopes.

A worker starts its WorkItem, "disconnects" (sends nothing), buffers commands with the binding
of R11.5-08 and usage deltas, then opens a new session — whose opening revokes its lease before
``POST /sessions`` answers (R11.3-10) — and sends what it buffered re-signed with the new
session and membership epochs (R11.5-09). The authority reconciles each in one transaction:
``ext.missionweaveprotocol.core.resource_usage_recorded`` naming both sessions, then the
command's own event (R11.5-11, R11.5-12), or a refusal that appends nothing (R11.5-13,
R11.5-10). Everything is read back over the API, as an independent client would.
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest
from rest_framework.test import APIClient

from apps.ledger.write_path import submit_authority_command
from missionweave.protocol.budgets import USAGE_RECORDED
from missionweave.protocol.offline import BINDING_PATH, EXTENSION, MAX_GRACE
from missionweave.protocol.timefmt import format_timestamp, parse_timestamp
from missionweave.protocol.work.leases import REASSIGN, reassign_command_id
from tests.factories import AgentPersona, now_text

from .http import json_of
from .work_http import (
    Wire,
    WorkWorld,
    checkpoint_body,
    contract,
    evidence,
    owned,
    progress_body,
    submission,
)

pytestmark = pytest.mark.django_db


def start(wire: Wire, ww: WorkWorld, item: str, *, ttl: int | None = None, **extra: Any) -> str:
    """``w2`` owns and starts ``item`` (a lease of ``ttl`` seconds); returns the lease id."""
    epoch = owned(wire, ww, item, **extra)["ownership_epoch"]
    body: dict[str, Any] = {"work_item": item, "ownership_epoch": epoch}
    if ttl is not None:
        body["lease_ttl_s"] = ttl
    return wire.ok(ww.w2, "work.start", body)["result"]["lease"]["lease_id"]


def binding_of(
    wire: Wire, worker: AgentPersona, item: str, usage: dict[str, Any], **over: Any
) -> dict[str, Any]:
    """What the worker records when it buffers a command now under its current lease
    (R11.5-08): the lease as the authority served it, disconnected a moment ago."""
    lease = wire.item(item)["lease"]
    value = {
        "agent": worker.principal,
        "group": wire.group,
        "work_item": item,
        "session_epoch": lease["session_epoch"],
        "ownership_epoch": lease["ownership_epoch"],
        "lease_id": lease["lease_id"],
        "disconnected_at": lease["started_at"],
        "buffered_at": now_text(),
        "grace_deadline": format_timestamp(parse_timestamp(lease["expires_at"]) + MAX_GRACE),
        "lease_expires_at": lease["expires_at"],
        "usage": usage,
    }
    value.update(over)
    return value


def reconnect(worker: AgentPersona) -> int:
    """A new session for ``worker`` (R11.3-10 revokes its lease); returns the old epoch."""
    old = worker.session_epoch
    worker.open_session()
    assert worker.session_epoch == old + 1
    return old


def test_reconnected_worker_reconciles_buffered_progress_with_its_usage_first(
    wire: Wire, ww: WorkWorld
) -> None:
    """R11.5-07..R11.5-12: accepted, the usage event first naming both sessions, the item's
    and the mission's budgets charged, the item left where the revocation put it."""
    lease_id = start(wire, ww, "wi-off")
    usage = {"tokens": 1200, "compute": 30.5, "money": 0}
    bound = binding_of(wire, ww.w2, "wi-off", usage)
    old_epoch = reconnect(ww.w2)
    after = wire.head()
    revoked = wire.events(after - 1)
    assert [e["type"] for e in revoked] == ["lease.revoked"]

    answer = wire.ok(
        ww.w2, "work.progress", progress_body("wi-off", lease_id), extensions={EXTENSION: bound}
    )
    assert [e["type"] for e in answer["events"]] == [USAGE_RECORDED, "work.progress_reported"]
    charge, progress = wire.events(after)
    assert charge["type"] == USAGE_RECORDED
    assert charge["actor"] == ww.w2.principal
    assert charge["payload"]["usage"] == {"tokens": 1200, "compute": 30.5}
    assert charge["payload"]["historical_session_epoch"] == old_epoch
    assert charge["payload"]["reconciling_session_epoch"] == ww.w2.session_epoch
    assert charge["payload"]["lease_id"] == lease_id
    assert charge["payload"]["charged_missions"] == ["m-1"]
    assert progress["payload"]["offline"] == bound
    assert answer["result"]["reconciled"]["usage"] == {"tokens": 1200, "compute": 30.5}

    item = wire.item("wi-off")
    assert item["state"] == "queued"
    assert item["budgets"]["used"] == {"tokens": 1200, "compute": 30.5}
    assert wire.mission("m-1")["budgets"]["used"] == {"tokens": 1200, "compute": 30.5}


def test_a_replayed_buffered_command_is_charged_once(
    api: APIClient, wire: Wire, ww: WorkWorld
) -> None:
    """wire§3 step 5 with R11.5-09: a retry re-signed with a fresh issued_at is the same
    content (epochs and issued_at are not content): the stored answer, nothing appended."""
    lease_id = start(wire, ww, "wi-replay")
    bound = binding_of(wire, ww.w2, "wi-replay", {"tokens": 700})
    reconnect(ww.w2)
    body = checkpoint_body("wi-replay", lease_id)
    first = wire.ok(ww.w2, "work.checkpoint", body, id="buffered-1", extensions={EXTENSION: bound})
    head = wire.head()
    again = wire.send(
        ww.w2, "work.checkpoint", body, id="buffered-1", extensions={EXTENSION: bound}
    )
    assert json_of(again, 201) == first
    assert again["Idempotent-Replayed"] == "true"
    assert wire.head() == head
    item = wire.item("wi-replay")
    assert item["budgets"]["used"] == {"tokens": 700}
    assert item["last_checkpoint"]["ref"] == "draft-1"
    assert item["state"] == "queued"


def test_a_buffered_message_is_posted_after_reconnecting(wire: Wire, ww: WorkWorld) -> None:
    """R11.5-12 "the Message or checkpoint"."""
    start(wire, ww, "wi-msg")
    bound = binding_of(wire, ww.w2, "wi-msg", {})
    reconnect(ww.w2)
    body = {"work_item": "wi-msg", "text": "Written while offline"}
    answer = wire.ok(ww.w2, "work.message", body, extensions={EXTENSION: bound})
    assert [e["type"] for e in answer["events"]] == ["work.message_posted"]


@pytest.mark.parametrize(
    ("usage", "kind"),
    [({"tokens": 250000}, "work_item"), ({"side_effects": 1}, "work_item")],
)
def test_an_item_budget_overflow_refuses_charge_and_progress(
    wire: Wire, ww: WorkWorld, usage: dict[str, Any], kind: str
) -> None:
    """R11.5-11, R11.5-13: the charge and the command are one transaction, so an overflow is 409
    BUDGET_EXCEEDED with nothing appended and nothing charged."""
    lease_id = start(wire, ww, "wi-over")
    bound = binding_of(wire, ww.w2, "wi-over", usage)
    reconnect(ww.w2)
    error = wire.refused(
        ww.w2,
        "work.progress",
        progress_body("wi-over", lease_id),
        409,
        "BUDGET_EXCEEDED",
        "R11.5-13",
        extensions={EXTENSION: bound},
    )
    assert error["details"]["budget"]["kind"] == kind
    assert wire.item("wi-over")["budgets"]["used"] == {}
    assert wire.mission("m-1")["budgets"]["used"] == {}


def test_a_mission_budget_overflow_up_the_ancestry_refuses_everything(
    wire: Wire, ww: WorkWorld
) -> None:
    """R11.5-12, R11.5-13: the mission's tokens (1,000,000) bound the charge even where the
    item's own contract allows more."""
    big = contract(budgets={"tokens": 5_000_000})
    lease_id = start(wire, ww, "wi-anc", contract=big)
    bound = binding_of(wire, ww.w2, "wi-anc", {"tokens": 1_500_000})
    reconnect(ww.w2)
    error = wire.refused(
        ww.w2,
        "work.checkpoint",
        checkpoint_body("wi-anc", lease_id),
        409,
        "BUDGET_EXCEEDED",
        extensions={EXTENSION: bound},
    )
    assert error["details"]["budget"]["kind"] == "mission"
    assert error["details"]["budget"]["id"] == "m-1"
    assert wire.item("wi-anc")["last_checkpoint"] is None


def test_buffered_before_the_lease_started_is_outside_the_grace_window(
    wire: Wire, ww: WorkWorld
) -> None:
    """R11.5-10: 409 OUTSIDE_GRACE_WINDOW, nothing appended."""
    lease_id = start(wire, ww, "wi-early")
    lease = wire.item("wi-early")["lease"]
    early = format_timestamp(
        parse_timestamp(lease["started_at"]).replace(microsecond=0) - timedelta(seconds=60)
    )
    bound = binding_of(wire, ww.w2, "wi-early", {"tokens": 5}, buffered_at=early)
    bound["disconnected_at"] = early
    reconnect(ww.w2)
    error = wire.refused(
        ww.w2,
        "work.progress",
        progress_body("wi-early", lease_id),
        409,
        "OUTSIDE_GRACE_WINDOW",
        "R11.5-10",
        extensions={EXTENSION: bound},
    )
    assert error["details"]["reason"] == "before_lease"


def test_a_grace_beyond_the_maximum_is_outside_the_grace_window(wire: Wire, ww: WorkWorld) -> None:
    lease_id = start(wire, ww, "wi-long")
    lease = wire.item("wi-long")["lease"]
    too_long = parse_timestamp(lease["expires_at"]) + MAX_GRACE + timedelta(seconds=1)
    bound = binding_of(wire, ww.w2, "wi-long", {}, grace_deadline=format_timestamp(too_long))
    reconnect(ww.w2)
    error = wire.refused(
        ww.w2,
        "work.progress",
        progress_body("wi-long", lease_id),
        409,
        "OUTSIDE_GRACE_WINDOW",
        extensions={EXTENSION: bound},
    )
    assert error["details"]["reason"] == "grace_too_long"


def test_buffered_after_the_revocation_is_a_stale_lease(wire: Wire, ww: WorkWorld) -> None:
    """R11.5-10 "after lease closure": the new session revoked the lease; a command claiming
    to be buffered after that was produced under no lease."""
    lease_id = start(wire, ww, "wi-late")
    bound = binding_of(wire, ww.w2, "wi-late", {"tokens": 5})
    reconnect(ww.w2)
    bound["buffered_at"] = now_text()  # after the revocation, before now
    time.sleep(0.01)
    error = wire.refused(
        ww.w2,
        "work.progress",
        progress_body("wi-late", lease_id),
        409,
        "STALE_LEASE",
        "R11.5-10",
        extensions={EXTENSION: bound},
    )
    assert error["details"]["reason"] == "after_lease_closure"
    assert error["details"]["closed_by"] == "lease.revoked"


def test_a_changed_owner_is_stale_ownership(wire: Wire, ww: WorkWorld) -> None:
    """R11.5-10 "for a changed owner": the lease ran out, the authority reassigned the item
    (R11.5-01) and offered it to w3 while w2 was away."""
    lease_id = start(wire, ww, "wi-moved", ttl=1)
    bound = binding_of(wire, ww.w2, "wi-moved", {"tokens": 5})
    time.sleep(1.2)
    body = {"work_item": "wi-moved", "ownership_epoch": 1, "reason": "lease_expired"}
    submit_authority_command(
        group_id=wire.group,
        type_=REASSIGN,
        body=body,
        command_id=reassign_command_id("wi-moved", 1),
    )
    assert wire.item("wi-moved")["owner"] is None
    reconnect(ww.w2)
    wire.refused(
        ww.w2,
        "work.progress",
        progress_body("wi-moved", lease_id),
        409,
        "STALE_OWNERSHIP",
        "R11.5-10",
        extensions={EXTENSION: bound},
    )


def test_the_binding_must_name_the_signer(wire: Wire, ww: WorkWorld) -> None:
    """R11.5-08: w3 cannot reconcile w2's buffered command (400 MALFORMED at the field)."""
    start(wire, ww, "wi-who")
    bound = binding_of(wire, ww.w2, "wi-who", {})
    body = {"work_item": "wi-who", "text": "not mine"}
    error = wire.refused(
        ww.w3, "work.message", body, 400, "MALFORMED", extensions={EXTENSION: bound}
    )
    assert error["details"]["path"] == f"{BINDING_PATH}.agent"


def test_a_malformed_binding_is_refused_at_its_path(wire: Wire, ww: WorkWorld) -> None:
    lease_id = start(wire, ww, "wi-bad")
    bound = binding_of(wire, ww.w2, "wi-bad", {"tokens": "many"})
    error = wire.refused(
        ww.w2,
        "work.progress",
        progress_body("wi-bad", lease_id),
        400,
        "MALFORMED",
        extensions={EXTENSION: bound},
    )
    assert error["details"]["path"] == f"{BINDING_PATH}.usage.tokens"


def test_a_submission_cannot_be_buffered(wire: Wire, ww: WorkWorld) -> None:
    """R11.5-06: reconcile before submitting; a work.submit with the binding is MALFORMED,
    however complete the submission (its output stored, R13.2-02; every criterion covered)."""
    lease_id = start(wire, ww, "wi-sub")
    bound = binding_of(wire, ww.w2, "wi-sub", {})
    claims = [evidence("c1", ww.w2), evidence("c2", ww.w2, method="human_review")]
    body = submission(wire, ww.w2, "wi-sub", lease_id, claims)
    error = wire.refused(
        ww.w2, "work.submit", body, 400, "MALFORMED", "R11.5-06", extensions={EXTENSION: bound}
    )
    assert error["details"]["path"] == BINDING_PATH


def test_any_other_extension_is_still_unsupported(wire: Wire, ww: WorkWorld) -> None:
    """wire§3 step 2: only the offline binding is supported; another URN beside it too."""
    other = "urn:example:extension:telepathy"
    lease_id = start(wire, ww, "wi-ext")
    body = progress_body("wi-ext", lease_id)
    bound = binding_of(wire, ww.w2, "wi-ext", {})
    for extensions in ({other: {}}, {EXTENSION: bound, other: {}}):
        error = wire.refused(
            ww.w2,
            "work.progress",
            body,
            400,
            "UNSUPPORTED_EXTENSION",
            "wire§3",
            extensions=extensions,
        )
        assert error["details"] == {"extension": other}
