"""What a person did themselves is no longer unread news to them (``apps.notifications.answered``):
through the real write path and the producer, the notification that asked for an approval, a
review or a final approval is marked read once its person has done it — by their own act, not
another's, and not a request made after it."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model

from apps.notifications import answered, bell, blocks, producing
from apps.notifications.kinds import Kind
from apps.notifications.models import Notification
from apps.work import reviews
from apps.work.tasks import STORE
from tests import factories
from tests.dashboard import workflows as wf
from tests.notifications.story import cast, gated_item_accepted
from tests.work.lifecycle import submit

pytestmark = pytest.mark.django_db

REVIEW = {
    "verdicts": [
        {"criterion": "c1", "verdict": "pass", "note": "checks pass"},
        {"criterion": "c2", "verdict": "pass", "note": "reads neutral to me"},
    ],
    "summary": "Good to go.",
}


def produce_all(group: str) -> None:
    while producing.produce(group).more:
        pass


def unread(username: str, kind: Kind, subject: str) -> bool:
    """Whether every one of ``username``'s ``kind`` notifications about ``subject`` (at least
    one) is unread."""
    rows = Notification.objects.filter(user__username=username, kind=kind, subject_id=subject)
    found = list(rows.values_list("read_at", flat=True))
    assert found, (username, kind, subject)
    return all(read_at is None for read_at in found)


def bell_of(username: str) -> int:
    return bell.unread_count(get_user_model().objects.get(username=username).pk)


def test_approving_marks_the_approvers_request_read_and_only_theirs() -> None:
    """R10.2-06, quorum of two: olga approves from her inbox without opening the notification;
    her "Approve the execution of …" is read and her bell one lower; omar, who has not
    approved, still has his unread, and is told it still needs him."""
    story = cast()
    gated_item_accepted(story, "wi-1")
    produce_all(story.group)
    before = bell_of("olga")
    assert unread("olga", Kind.APPROVAL_NEEDED, "wi-1")

    decision = {"work_item": "wi-1", "contract_revision": 1, "comment": ""}
    submit(story.world.olga, story.group, "approval.grant_execution", decision)
    produce_all(story.group)

    assert not unread("olga", Kind.APPROVAL_NEEDED, "wi-1")
    assert bell_of("olga") == before - 1
    assert unread("omar", Kind.APPROVAL_NEEDED, "wi-1")


def test_refusing_answers_the_request_too_but_an_agents_act_answers_nobodys() -> None:
    """A refusal is an answer (R10.2-06); the coordinator agent's cancel of another item
    marks no person's notification read: it is not their act."""
    story = cast()
    gated_item_accepted(story, "wi-1")
    gated_item_accepted(story, "wi-2")
    produce_all(story.group)
    refusal = {"work_item": "wi-1", "contract_revision": 1, "comment": "not now"}
    submit(story.omar, story.group, "approval.refuse_execution", refusal)
    submit(story.world.w1, story.group, "work.cancel", {"work_item": "wi-2", "reason": "dropped"})
    produce_all(story.group)

    assert not unread("omar", Kind.APPROVAL_NEEDED, "wi-1")
    assert unread("olga", Kind.APPROVAL_NEEDED, "wi-1")  # omar refused, not olga
    assert unread("olga", Kind.APPROVAL_NEEDED, "wi-2")
    assert unread("omar", Kind.APPROVAL_NEEDED, "wi-2")


def test_judging_a_submission_marks_its_review_request_read() -> None:
    """R13.2-03 step 5: olga, the only person who may review here, is asked to review a
    result with a human_review criterion; her acceptance answers it."""
    world = factories.build_world("g-answered")
    item = wf.authorize(world, wf.mission(world))
    wf.accept(world, item, wf.offer(world, item))
    wf.submit_result(world, item, wf.start(world, item))
    reviews.review_submission(STORE, world.group, item)
    produce_all(world.group)
    assert unread("olga", Kind.REVIEW_WAITING, item)

    submit(world.olga, world.group, "work.accept_result", {"work_item": item, "review": REVIEW})
    produce_all(world.group)

    assert not unread("olga", Kind.REVIEW_WAITING, item)


def test_the_final_approval_marks_the_missions_ready_notification_read() -> None:
    """R10.2-22: "… is ready for final approval" is answered by approving the mission."""
    world = factories.build_world("g-answered")
    mission = wf.mission(world)
    wf.verified_item(world, mission)
    produce_all(world.group)
    assert unread("olga", Kind.MISSION_READY, mission)

    submit(world.olga, world.group, "mission.approve", {"mission": mission, "comment": ""})
    produce_all(world.group)

    assert not unread("olga", Kind.MISSION_READY, mission)


def test_asking_for_changes_at_the_final_approval_answers_it_too() -> None:
    """R13.2-03 step 5, R10.2-21: sending chosen WorkItems back is the person's decision on
    the final approval; the next "ready" (once the replacements end) will be news again."""
    world = factories.build_world("g-answered")
    mission = wf.mission(world)
    item = wf.verified_item(world, mission)
    produce_all(world.group)
    body = {"mission": mission, "work_items": [item], "note": "Cite the sources."}
    assert submit(world.olga, world.group, "mission.request_changes", body).status == 201
    produce_all(world.group)

    assert not unread("olga", Kind.MISSION_READY, mission)


def test_a_request_made_after_the_act_stays_unread() -> None:
    """Only what was asked before the act is answered by it: a request the producer made from
    a later event (a new revision's, say) is still news."""
    story = cast()
    gated_item_accepted(story, "wi-1")
    produce_all(story.group)
    olga = get_user_model().objects.get(username="olga")
    later = Notification.objects.create(
        user=olga,
        kind=Kind.APPROVAL_NEEDED,
        group_id=story.group,
        key="wi-1@r2:later",
        event_sequence=10_000,
        subject_type="work_item",
        subject_id="wi-1",
        title="Approve the execution of revision 2",
        link=f"/groups/{story.group}/work-items/wi-1/approval/",
        email_mode="off",
    )
    event: dict[str, Any] = {
        "type": "approval.execution_granted",
        "actor": "user:olga",
        "sequence": 9_999,
        "payload": {"work_item": "wi-1"},
    }
    users = producing.Recipients()
    assert answered.mark_answered(event, story.group, users) == 1  # the first request only
    later.refresh_from_db()
    assert later.read_at is None


def test_a_block_asked_again_replaces_the_older_unread_one() -> None:
    """R11.4-04..06: the coordinator agent answered the first block, the worker blocked again;
    olga is told of the second, and the first — the same errand, answered — is no longer
    unread beside it: one unread notification for one block waiting. (A grant short of the
    quorum is not such a repeat: see the first test, where omar keeps both.)"""
    world = factories.build_world("g-answered")
    item = wf.queued(world, wf.mission(world))
    wf.block(world, item, wf.start(world, item), "access to the archive", ref="blk-1")
    blocks.remind(grace_s=0)
    first = Notification.objects.get(user__username="olga", kind=Kind.WORK_BLOCKED)
    assert first.read_at is None
    unblock = {"work_item": item, "to": "queued"}
    assert submit(world.w1, world.group, "work.unblock", unblock).status == 201
    wf.block(world, item, wf.start(world, item), "the archive's password", ref="blk-2")
    blocks.remind(grace_s=0)

    told = Notification.objects.filter(user__username="olga", kind=Kind.WORK_BLOCKED)
    assert told.count() == 2
    first.refresh_from_db()
    assert first.read_at is not None
    newest = told.order_by("-pk").first()
    assert newest.read_at is None
    assert "the archive's password" in newest.body
