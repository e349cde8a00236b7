"""Cancel cleans up, over HTTP on PostgreSQL (R10.2-14, R10.2-18, R10.2-20, R10.2-21; wire.md
§6, §9): a cancelled parent's child mission in another group stops running and spending, the
items waiting on an ended item are told, and a replacement carries the ended item's work on.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import timedelta
from typing import Any

import pytest
from rest_framework.test import APIClient

from apps.ledger.follow_ups import RESEND_AFTER, resend_pending
from apps.ledger.models import PendingFollowUp
from tests.factories import HumanPersona, grant, group, human

from .work_http import (
    Wire,
    WorkWorld,
    authorize_body,
    authorized,
    build_work_world,
    owned,
    started,
)

pytestmark = pytest.mark.django_db

CHILD_GROUP = "g-lab"
Commit = Callable[..., AbstractContextManager[Any]]


class CleanupWorld:
    """The WorkWorld plus ``g-lab``: ``w1`` coordinates both groups, ``w2`` works in both,
    ``carol`` owns missions in ``g-lab``."""

    def __init__(self, api: APIClient) -> None:
        self.ww: WorkWorld = build_work_world()
        group(CHILD_GROUP, self.ww.org)
        self.carol: HumanPersona = human("carol")
        grant(self.ww.alice, CHILD_GROUP, self.carol, "mission_owner")
        grant(self.ww.alice, CHILD_GROUP, self.ww.w1, "coordinator")
        grant(self.ww.alice, CHILD_GROUP, self.ww.w2, "worker")
        self.parent = Wire(api, self.ww.group, self.ww.olga)
        self.child = Wire(api, CHILD_GROUP, self.carol)


@pytest.fixture
def cw(api: APIClient, db: None) -> CleanupWorld:
    return CleanupWorld(api)


def _child_running_and_spending(cw: CleanupWorld, commit: Commit) -> str:
    """``wi-p`` (mission ``m-p``) blocked by ``m-c`` in ``g-lab``, whose ``wi-c`` runs under
    ``w2``'s lease and has charged usage; the lease id."""
    owned(cw.parent, cw.ww, "wi-p", mission="m-p")
    body = {
        "work_item": "wi-p",
        "child": {"mission": "m-c", "group": CHILD_GROUP, "goal": "Gather", "budgets": {}},
        "failure_policy": "fail_parent",
    }
    with commit():
        cw.parent.ok(cw.ww.w1, "mission.create_child", body)
    lease = started(cw.child, cw.ww, "wi-c", mission="m-c")
    usage = {"work_item": "wi-c", "lease_id": lease, "usage": {"tokens": 100}}
    with commit():
        cw.child.ok(cw.ww.w2, "work.usage", usage)
    return lease


def _assert_child_stopped(cw: CleanupWorld, child_head: int, lease: str) -> None:
    """The child's log holds the authority's cancellation, its running item is cancelled with
    its lease revoked, and the worker can charge nothing more."""
    events = cw.child.events(after=child_head)
    assert [(e["type"], e["actor"]) for e in events] == [
        ("mission.cancelled", "authority"),
        ("work.cancelled", "authority"),
    ]
    assert events[0]["payload"]["cancelled_with"]["work_item"] == "wi-p"
    assert cw.child.mission("m-c")["state"] == "cancelled"
    item = cw.child.item("wi-c")
    assert (item["state"], item["lease"]["status"]) == ("cancelled", "revoked")
    body = {"work_item": "wi-c", "lease_id": lease, "usage": {"tokens": 100}}
    cw.child.refused(cw.ww.w2, "work.usage", body, 409, "STALE_LEASE")  # wire§8: closed


def test_cancelling_a_parent_cancels_its_child_mission_in_another_group(
    cw: CleanupWorld, commit: Commit
) -> None:
    """R10.2-14, R10.4-05 (reproduction: the child kept running and spending): the parent's
    group records ``mission.child_cancelled``; after its commit the authority cancels the
    child mission in its own group, with its running WorkItem."""
    lease = _child_running_and_spending(cw, commit)
    parent_head, child_head = cw.parent.head(), cw.child.head()

    with commit():
        answer = cw.parent.ok(cw.ww.w1, "work.cancel", {"work_item": "wi-p", "reason": "moot"})

    assert [e["type"] for e in answer["events"]] == ["work.cancelled", "mission.child_cancelled"]
    (_, record) = cw.parent.events(after=parent_head)
    assert record["payload"]["child"] == {"group": CHILD_GROUP, "mission": "m-c"}
    assert cw.parent.item("wi-p")["child"]["status"] == "cancelled"
    _assert_child_stopped(cw, child_head, lease)
    assert not PendingFollowUp.objects.exists()


def test_cancelling_the_parent_mission_cancels_the_branch_across_groups(
    cw: CleanupWorld, commit: Commit
) -> None:
    """R10.2-21, R10.2-18: ``mission.cancel`` at mission level ends the mission's items and,
    through the one a child mission unblocks, that child in its group."""
    lease = _child_running_and_spending(cw, commit)
    child_head = cw.child.head()

    with commit():
        cw.parent.ok(cw.ww.w1, "mission.cancel", {"mission": "m-p", "reason": "dropped"})

    assert cw.parent.item("wi-p")["state"] == "cancelled"
    _assert_child_stopped(cw, child_head, lease)


def test_a_cancellation_lost_after_commit_is_carried_by_the_outbox_once(
    cw: CleanupWorld, commit: Commit, django_capture_on_commit_callbacks: Commit
) -> None:
    """R10.4-05: the child's cancellation is an outbox row of the parent's transaction; when
    the process dies before carrying it, the resend task does, once."""
    lease = _child_running_and_spending(cw, commit)
    child_head = cw.child.head()
    with django_capture_on_commit_callbacks(execute=False):  # "the process died here"
        cw.parent.ok(cw.ww.w1, "work.cancel", {"work_item": "wi-p", "reason": "moot"})
    (pending,) = PendingFollowUp.objects.all()
    assert (pending.target_group, pending.follow_up["type"]) == (
        CHILD_GROUP,
        "link.cancel_child_mission",
    )
    assert cw.child.mission("m-c")["state"] == "active"

    PendingFollowUp.objects.update(created_at=pending.created_at - RESEND_AFTER - timedelta(1))
    assert resend_pending() == 1
    assert resend_pending() == 0
    _assert_child_stopped(cw, child_head, lease)


def test_clients_cannot_send_the_authoritys_cancellation(cw: CleanupWorld) -> None:
    """wire§9: ``link.cancel_child_mission`` is the authority's; a client's is
    UNKNOWN_COMMAND."""
    body = {"mission": "m-c", "correlation_id": "x", "reason": "r", "parent": {}}
    cw.child.refused(cw.ww.w1, "link.cancel_child_mission", body, 400, "UNKNOWN_COMMAND")


# --- the items waiting on an ended one ---------------------------------------------------------


def test_a_cancelled_items_dependents_are_told_and_cannot_start_silently(
    cw: CleanupWorld,
) -> None:
    """R10.2-14, R10.4-03 (reproduction: the dependent waited for ever, nobody told): the
    cancel appends ``work.dependency_ended`` for the queued dependent, whose projection
    names the ended dependency; its owner's ``work.start`` is DEPENDENCY_UNMET with the
    dependency in ``details.ended``."""
    authorized(cw.parent, cw.ww, "wi-a")
    epoch = owned(cw.parent, cw.ww, "wi-b", depends_on=["wi-a"])["ownership_epoch"]
    head = cw.parent.head()

    cw.parent.ok(cw.ww.w1, "work.cancel", {"work_item": "wi-a", "reason": "out of scope"})

    told = cw.parent.events(after=head)[-1]
    assert (told["type"], told["payload"]) == (
        "work.dependency_ended",
        {
            "work_item": "wi-b",
            "dependency": "wi-a",
            "outcome": "cancelled",
            "reason": "out of scope",
        },
    )
    waiting = cw.parent.item("wi-b", persona=cw.ww.w2)
    assert waiting["state"] == "queued"
    (entry,) = waiting["ended_dependencies"]
    assert (entry["dependency"], entry["outcome"], entry["sequence"]) == (
        "wi-a",
        "cancelled",
        told["sequence"],
    )
    error = cw.parent.refused(
        cw.ww.w2,
        "work.start",
        {"work_item": "wi-b", "ownership_epoch": epoch},
        409,
        "DEPENDENCY_UNMET",
    )
    assert error["details"]["ended"] == {"wi-a": "cancelled"}


def test_a_replacement_takes_over_the_replaced_items_dependents(cw: CleanupWorld) -> None:
    """R10.2-21: ``work.authorize`` with ``replaces`` records both ends of the replacement,
    clears the dependents' entries, and refuses a second offer of the replaced item."""
    authorized(cw.parent, cw.ww, "wi-a")
    authorized(cw.parent, cw.ww, "wi-b", depends_on=["wi-a"])
    cw.parent.ok(cw.ww.w1, "work.cancel", {"work_item": "wi-a", "reason": "wrong sources"})

    answer = cw.parent.ok(
        cw.ww.w1, "work.authorize", authorize_body("wi-a2", "m-1", replaces="wi-a")
    )

    assert [e["type"] for e in answer["events"]] == [
        "work.authorized",
        "work.replaced",
        "work.dependency_restored",
    ]
    assert cw.parent.item("wi-a")["replaced_by"] == "wi-a2"
    assert cw.parent.item("wi-a2")["replaces"] == "wi-a"
    assert cw.parent.item("wi-b")["ended_dependencies"] == []
    cw.parent.refused(
        cw.ww.w1,
        "work.authorize",
        authorize_body("wi-a3", "m-1", replaces="wi-a"),
        409,
        "ILLEGAL_TRANSITION",
        "R10.2-21",
    )
