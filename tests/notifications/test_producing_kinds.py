"""Each kind of work news reaches its people from real events (issue 36 §1): blocked work,
a submission waiting for review, a submission sent back, and a mission ready for final
approval, each driven through the one write path and produced from the log, with the link
of the screen that acts on it. (``test_producing`` covers the approvals and memberships;
``test_email_delivery`` the beat's start-by reminder.)"""

from __future__ import annotations

import pytest

from apps.notifications import blocks, producing
from apps.notifications.kinds import Kind
from apps.notifications.models import Notification
from tests import factories
from tests.dashboard import workflows as wf
from tests.factories import World
from tests.work import lifecycle

pytestmark = pytest.mark.django_db


def produce_all(group: str) -> None:
    while producing.produce(group).more:
        pass


def told(kind: Kind, subject: str) -> list[tuple[str, str]]:
    """(username, link) of each person told ``kind`` about ``subject``."""
    rows = Notification.objects.filter(kind=kind, subject_id=subject).order_by("user__username")
    return list(rows.values_list("user__username", "link"))


def world_with_a_reviewer() -> World:
    """The factories' world (olga mission owner, w1 coordinator and w2 worker agents) and
    rita, a person with the reviewer role."""
    world = factories.build_world("g-kinds")
    factories.grant(world.alice, world.group, factories.human("rita"), "reviewer")
    return world


def test_a_submission_agents_carry_tells_nobody() -> None:
    """w1, an agent, coordinates; a contract judged by the authority's checks alone needs no
    person until the final approval, so rita is not told (``waits_for_a_person``). One with
    a human_review criterion tells her."""
    world = world_with_a_reviewer()
    mission = wf.mission(world)
    machine = wf.queued(world, mission, contract=lifecycle.contract())
    lease = wf.start(world, machine)
    body = {
        "work_item": machine,
        "lease_id": lease,
        "artifacts": [wf.store_bytes(world.w2.principal, b"summary.md")],
        "evidence": [wf.evidence(world.w2.principal, "c1")],
    }
    assert wf.submit(world.w2, world.group, "work.submit", body).status == 201
    person = wf.queued(world, mission, contract=lifecycle.contract(human_review=True))
    wf.submit_result(world, person, wf.start(world, person))
    produce_all(world.group)
    assert told(Kind.REVIEW_WAITING, machine) == []
    assert [who for who, _link in told(Kind.REVIEW_WAITING, person)] == ["rita"]


def test_a_block_the_agent_coordinator_leaves_unanswered_tells_the_mission_owners_once() -> None:
    """R11.4-04..06: w1, an agent, coordinates, so the block itself tells nobody (it answers
    within moments); the beat's ``blocks.remind`` tells olga once the block has waited out
    the grace time, in the worker's words, and a second run tells nobody again."""
    world = world_with_a_reviewer()
    mission = wf.mission(world)
    item = wf.queued(world, mission)
    wf.block(world, item, wf.start(world, item), "access to the archive")
    produce_all(world.group)
    assert told(Kind.WORK_BLOCKED, item) == []
    assert blocks.remind(grace_s=120).created == []  # blocked moments ago: not yet
    assert len(blocks.remind(grace_s=0).created) == 1
    assert told(Kind.WORK_BLOCKED, item) == [("olga", f"/groups/{world.group}/work-items/{item}/")]
    blocked = Notification.objects.get(kind=Kind.WORK_BLOCKED)
    assert blocked.body == (  # the agent's words, quoted
        "It needs: “access to the archive” Nobody has answered it for 1 min."
    )
    assert blocks.remind(grace_s=0).created == []


def test_a_block_answered_within_the_grace_time_tells_nobody() -> None:
    world = world_with_a_reviewer()
    item = wf.queued(world, wf.mission(world))
    wf.block(world, item, wf.start(world, item), "access to the archive")
    answer = {"work_item": item, "to": "queued"}
    assert wf.submit(world.w1, world.group, "work.unblock", answer).status == 201
    produce_all(world.group)
    assert blocks.remind(grace_s=0).created == []
    assert told(Kind.WORK_BLOCKED, item) == []


def test_a_block_only_a_person_can_answer_tells_the_mission_owners_at_once() -> None:
    """No agent coordinates (w1 keeps only the worker role): the producer tells olga with
    the block itself, and the beat's later run, under the same key, adds nothing."""
    world = world_with_a_reviewer()
    item = wf.queued(world, wf.mission(world))
    lease = wf.start(world, item)
    factories.grant(world.alice, world.group, world.w1, "worker")
    wf.block(world, item, lease, "access to the archive")
    produce_all(world.group)
    assert [who for who, _link in told(Kind.WORK_BLOCKED, item)] == ["olga"]
    assert blocks.remind(grace_s=0).created == []


def test_a_submission_waits_for_the_reviewers_and_a_sent_back_one_tells_the_owners() -> None:
    """Submitted: rita, the reviewer, is asked to review (not olga: a reviewer exists). The
    coordinator fails the submission: olga, the mission owner, is told it was sent back; the
    mission's only item has ended, so she is also offered the final approval."""
    world = world_with_a_reviewer()
    mission = wf.mission(world)
    item = wf.queued(world, mission)
    wf.submit_result(world, item, wf.start(world, item))
    produce_all(world.group)
    group = world.group
    assert told(Kind.REVIEW_WAITING, item) == [
        ("rita", f"/groups/{group}/work-items/{item}/review/")
    ]

    wf.submit(
        world.w1, group, "work.fail", {"work_item": item, "evidence": wf.failure_evidence(world)}
    )
    produce_all(group)
    assert told(Kind.SENT_BACK, item) == [("olga", f"/groups/{group}/work-items/{item}/")]
    assert told(Kind.MISSION_READY, mission) == [
        ("olga", f"/groups/{group}/missions/{mission}/final-approval/")
    ]


def test_a_mission_whose_work_is_all_accepted_is_offered_for_final_approval_once() -> None:
    world = world_with_a_reviewer()
    mission = wf.mission(world)
    wf.verified_item(world, mission)
    produce_all(world.group)
    ready = told(Kind.MISSION_READY, mission)
    assert ready == [("olga", f"/groups/{world.group}/missions/{mission}/final-approval/")]
    assert Notification.objects.get(kind=Kind.MISSION_READY).body == (
        "Its WorkItem is finished and verified."
    )
    # the same state read again makes nothing new
    Notification.objects.filter(kind=Kind.MISSION_READY).update(read_at=None)
    producing.NotificationCursor.objects.filter(group_id=world.group).update(sequence=0)
    produce_all(world.group)
    assert len(told(Kind.MISSION_READY, mission)) == 1
