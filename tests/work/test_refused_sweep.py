"""A refused execution stops its start-by clock: the sweep does not reassign it (R10.2-06,
R11.3-02, R11.5-01; issue 34).

On PostgreSQL, through the real write path and the real ``sweep_due``, with the database
clock: two gated items are accepted with a one-second start window; a mission owner refuses
the execution of one. Once both start-by times have passed, the sweep reassigns the other
(its owner missed its start deadline) and leaves the refused one queued with its owner and
nothing due — it waits for a corrected contract or a cancel, not for another worker.
"""

from __future__ import annotations

import importlib
import time

import pytest
from django.apps import apps as django_apps

from apps.work.models import WorkItem
from apps.work.sweeps import sweep_due
from missionweave.protocol.identifiers import AUTHORITY
from missionweave.protocol.timefmt import parse_timestamp
from tests import factories
from tests.factories import mission_body
from tests.ledger.checks import assert_log_consistent, event_documents
from tests.work.lifecycle import contract, offer_body, offer_entry, submit

pytestmark = pytest.mark.django_db(transaction=True)

START_WITHIN_S = 1


def test_the_sweep_does_not_reassign_a_refused_item_after_its_start_by_passes() -> None:
    """R10.2-06, R11.3-02, R11.5-01, issue 34: after the refusal the row is due never
    (``due_at`` null, no start deadline); past both start-by times the sweep reassigns only
    the item nobody refused; the refused one keeps its owner, state and ownership epoch, and
    no authority event names it; the log replays into the live rows."""
    world = factories.build_world("g-refused")
    w3 = factories.agent("w3", world.org)
    factories.grant(world.alice, world.group, w3, "worker")
    w3.open_session()
    group = world.group
    submit(world.w1, group, "mission.create", mission_body("m-r"))
    for item in ("wi-refused", "wi-waiting"):
        authorize = {"work_item": item, "mission": "m-r", "contract": contract(approvals=1)}
        submit(world.w1, group, "work.authorize", {**authorize, "depends_on": []})
        offers = [offer_entry(f"{item}-o", world.w2), offer_entry(f"{item}-o3", w3)]
        body = offer_body(item, offers, start_within_s=START_WITHIN_S)
        submit(world.w1, group, "work.offer", body)
        accept = {"work_item": item, "offer": f"{item}-o", "contract_revision": 1}
        submit(world.w2, group, "work.accept_offer", accept)
    refusal = {"work_item": "wi-refused", "contract_revision": 1, "comment": "not with this data"}
    submit(world.olga, group, "approval.refuse_execution", refusal)

    refused = WorkItem.objects.get(group_id=group, work_item_id="wi-refused")
    waiting = WorkItem.objects.get(group_id=group, work_item_id="wi-waiting")
    assert (refused.due_at, refused.data["start_deadline"]) == (None, None)
    assert waiting.due_at is not None
    assert waiting.due_reason == "start_deadline_missed"

    time.sleep(START_WITHIN_S + 0.5)
    report = sweep_due()
    assert (report.examined, report.applied) == (1, 1), report

    refused = WorkItem.objects.get(group_id=group, work_item_id="wi-refused")
    assert (refused.state, refused.owner, refused.due_at) == ("queued", world.w2.principal, None)
    assert refused.data["ownership_epoch"] == 1
    assert refused.data["execution_refused"]["by"] == world.olga.principal
    waiting = WorkItem.objects.get(group_id=group, work_item_id="wi-waiting")
    assert (waiting.state, waiting.data["reassignments"]) == ("offered", 1)

    swept = [d for d in event_documents(group) if d["actor"] == AUTHORITY]
    assert {d["payload"]["work_item"] for d in swept} == {"wi-waiting"}
    assert sweep_due().examined == 0  # and no later sweep selects it either
    assert_log_consistent(group)


def test_the_migration_stops_the_clock_of_rows_refused_before_it() -> None:
    """Issue 34: a refused queued row written before the change (a start deadline, due at
    it) is brought by migration 0012 to exactly what a replay of its log gives, so
    ``rebuild_projections --verify`` agrees and the sweep never selects it."""
    world = factories.build_world("g-refused-old")
    group = world.group
    submit(world.w1, group, "mission.create", mission_body("m-o"))
    body = {"work_item": "wi-old", "mission": "m-o", "contract": contract(approvals=1)}
    submit(world.w1, group, "work.authorize", {**body, "depends_on": []})
    offer = offer_body("wi-old", [offer_entry("wi-old-o", world.w2)], start_within_s=1)
    submit(world.w1, group, "work.offer", offer)
    accept = {"work_item": "wi-old", "offer": "wi-old-o", "contract_revision": 1}
    deadline = submit(world.w2, group, "work.accept_offer", accept).body["result"]
    refusal = {"work_item": "wi-old", "contract_revision": 1, "comment": "not this data"}
    submit(world.olga, group, "approval.refuse_execution", refusal)
    row = WorkItem.objects.get(group_id=group, work_item_id="wi-old")
    old = {k: v for k, v in row.data.items() if k != "execution_refused"}
    WorkItem.objects.filter(pk=row.pk).update(
        data={**old, "start_deadline": deadline["start_deadline"]},
        due_at=parse_timestamp(deadline["start_deadline"]),
        due_reason="start_deadline_missed",
    )
    with pytest.raises(AssertionError):
        assert_log_consistent(group)

    migration = importlib.import_module("apps.work.migrations.0012_refused_execution_stops")
    migration.stop_refused_clocks(django_apps, None)

    row = WorkItem.objects.get(group_id=group, work_item_id="wi-old")
    assert (row.due_at, row.due_reason, row.data["start_deadline"]) == (None, "", None)
    assert row.data["execution_refused"]["reason"] == "not this data"
    assert_log_consistent(group)
