"""Migration 0013 (issue 35): rows written while every ``work.started`` counted as an attempt
are brought to what a replay under the fresh-attempt rule gives (R11.4-08)."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps as django_apps

from apps.work.models import WorkItem
from missionweave.protocol import states as S
from missionweave.protocol.canonical import sha256_digest
from tests import factories
from tests.factories import mission_body
from tests.ledger.checks import assert_log_consistent
from tests.work.lifecycle import contract, offer_body, offer_entry, submit

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_migration_recounts_attempts_of_items_that_resumed_after_a_block() -> None:
    """A block and its unblock, then a start: the row an older server wrote says two
    attempts; after the migration it says one, exactly as the log replays."""
    world = factories.build_world("g-attempts")
    group = world.group
    submit(world.w1, group, "mission.create", mission_body("m-a"))
    body = {"work_item": "wi-a", "mission": "m-a", "contract": contract(), "depends_on": []}
    submit(world.w1, group, "work.authorize", body)
    submit(world.w1, group, "work.offer", offer_body("wi-a", [offer_entry("wi-a-o", world.w2)]))
    accept = {"work_item": "wi-a", "offer": "wi-a-o", "contract_revision": 1}
    submit(world.w2, group, "work.accept_offer", accept)
    start = {"work_item": "wi-a", "ownership_epoch": 1}
    lease = submit(world.w2, group, "work.start", start).body["result"]["lease"]["lease_id"]
    checkpoint = {"ref": "blk", "state_digest": sha256_digest(b"blk"), "artifacts": []}
    block = {"work_item": "wi-a", "lease_id": lease, "required_resolution": "a person"}
    submit(world.w2, group, "work.block", {**block, "checkpoint": checkpoint})
    submit(world.w1, group, "work.unblock", {"work_item": "wi-a", "to": S.QUEUED})
    submit(world.w2, group, "work.start", start)

    row = WorkItem.objects.get(group_id=group, work_item_id="wi-a")
    assert row.data["attempts"] == 1
    older = {k: v for k, v in row.data.items() if k != "resumes_attempt"}
    WorkItem.objects.filter(pk=row.pk).update(data={**older, "attempts": 2})
    with pytest.raises(AssertionError):
        assert_log_consistent(group)

    migration = importlib.import_module("apps.work.migrations.0013_attempts_count_fresh_starts")
    migration.replay_every_group(django_apps, None)

    row = WorkItem.objects.get(group_id=group, work_item_id="wi-a")
    assert (row.state, row.data["attempts"], row.data["resumes_attempt"]) == (S.ACTIVE, 1, False)
    assert_log_consistent(group)
