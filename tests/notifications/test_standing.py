"""Where a notification's matter stands now, on the notifications page: an approval another
owner gave, a submission judged, a block answered and a mission approved since say "Settled
since: …" in plain words; what still waits says nothing. Built through the real write path
and produced from the log (R10.2-06, R10.2-22, R11.4-04)."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from apps.notifications import blocks, producing, standing
from apps.notifications.kinds import Kind
from apps.notifications.models import Notification
from apps.registry import services
from tests.dashboard import workflows as wf
from tests.notifications.story import cast, gated_item_accepted
from tests.notifications.test_recipients import item as recipients_item

pytestmark = pytest.mark.django_db


def produce_all(group: str) -> None:
    while producing.produce(group).more:
        pass


def page_of(username: str) -> str:
    client = Client()
    client.force_login(get_user_model().objects.get(username=username))
    response = client.get("/notifications/")
    assert response.status_code == 200
    return response.content.decode()


def since(html: str, notification: Notification) -> str:
    """The "Settled since" line of ``notification`` on the page, or ""."""
    found = re.search(rf'data-notification="{notification.pk}".*?</li>', html, flags=re.DOTALL)
    assert found, notification
    line = re.search(r'data-field="since">([^<]*)<', found.group(0))
    return line.group(1) if line else ""


def test_an_approval_given_by_enough_owners_is_settled_for_everyone_asked() -> None:
    """Both owners are asked (two approvals needed). Olga approves: for her it is settled
    ("you approved it"), for omar not yet. Omar approves too: it may start, for both."""
    story = cast()
    world = story.world
    gated_item_accepted(story, "wi-1", approvals=2)
    produce_all(story.group)
    asked = Notification.objects.filter(kind=Kind.APPROVAL_NEEDED, subject_id="wi-1")
    olgas, omars = asked.get(user__username="olga"), asked.get(user__username="omar")
    assert since(page_of("olga"), olgas) == ""

    assert wf.approve(world.olga, story.group, "wi-1").status == 201
    assert (
        since(page_of("olga"), olgas) == "Settled since: you approved it; it waits for the others."
    )
    assert since(page_of("omar"), omars) == ""

    assert wf.approve(story.omar, story.group, "wi-1").status == 201
    assert since(page_of("omar"), omars) == "Settled since: you approved it; it may start."
    assert since(page_of("olga"), olgas) == "Settled since: you approved it; it may start."
    assert 'class="notification notification--unread notification--settled"' in page_of("omar")


def test_a_former_member_is_not_told_what_became_of_the_groups_work() -> None:
    """R10.4-06: omar keeps the notification he was sent, but once his membership is
    revoked, what happened in the group since is not his to read."""
    story = cast()
    world = story.world
    gated_item_accepted(story, "wi-1", approvals=1)
    produce_all(story.group)
    omars = Notification.objects.get(kind=Kind.APPROVAL_NEEDED, user__username="omar")
    assert wf.approve(world.olga, story.group, "wi-1").status == 201
    assert since(page_of("omar"), omars).startswith("Settled since:")
    services.membership_revoke(
        group_id=story.group, admin=world.alice.caller, principal=story.omar.principal
    )
    assert since(page_of("omar"), omars) == ""


def test_a_block_answered_since_is_settled() -> None:
    story = cast()
    world = story.world
    item = wf.queued(world, "m-1")
    wf.block(world, item, wf.start(world, item), "access to the archive")
    produce_all(story.group)
    blocks.remind(grace_s=0)
    told = Notification.objects.get(kind=Kind.WORK_BLOCKED, user__username="olga")
    assert since(page_of("olga"), told) == ""

    answer = {"work_item": item, "to": "queued"}
    assert wf.submit(world.w1, story.group, "work.unblock", answer).status == 201
    assert (
        since(page_of("olga"), told)
        == "Settled since: it was unblocked; it is now queued to start."
    )


def test_news_that_asks_nothing_never_says_settled() -> None:
    """A membership change, like a decision told to whoever asked, is news, not a request:
    nothing to settle."""
    story = cast()
    world = story.world
    gated_item_accepted(story, "wi-1", approvals=1)
    produce_all(story.group)
    assert wf.approve(world.olga, story.group, "wi-1").status == 201
    produce_all(story.group)
    html = page_of("olga")
    checked = set()
    for notification in Notification.objects.filter(user__username="olga"):
        if notification.kind != Kind.APPROVAL_NEEDED:
            assert since(html, notification) == "", notification.kind
            checked.add(notification.kind)
    assert Kind.MEMBERSHIP_CHANGED in checked  # "You were added to …"


def notice(kind: Kind, subject_type: str = "work_item", link: str = "") -> Notification:
    return Notification(
        pk=1, kind=kind, group_id="g", subject_type=subject_type, subject_id="wi-1", link=link
    )


@pytest.mark.parametrize(
    ("kind", "link", "state", "words"),
    [
        (Kind.REVIEW_WAITING, "", "submitted", ""),
        (Kind.REVIEW_WAITING, "", "verified", "it was judged; it is now accepted."),
        (
            Kind.ASKED_OF_YOU,
            "/groups/g/work-items/wi-1/review/",
            "failed",
            "it was judged; it is now failed.",
        ),
        (
            Kind.ASKED_OF_YOU,
            "/groups/g/work-items/wi-1/approval/",
            "active",
            "it no longer waits for approval; it is now running.",
        ),
        (Kind.DEADLINE_NEAR, "", "queued", ""),
        (Kind.DEADLINE_NEAR, "", "active", "it is now running."),
        (Kind.WORK_BLOCKED, "", "blocked", ""),
        (Kind.SENT_BACK, "", "verified", ""),
    ],
)
def test_each_kind_that_asks_is_settled_by_its_own_change(
    kind: Kind, link: str, state: str, words: str
) -> None:
    item = replace(recipients_item(), state=state)
    now = standing.Now(items={("g", "wi-1"): item}, missions={})
    assert standing.settled(notice(kind, link=link), now, "user:olga") == words


@pytest.mark.parametrize(
    ("state", "words"), [("active", ""), ("approved", "the mission is approved.")]
)
def test_a_mission_ready_for_approval_is_settled_once_it_ended(state: str, words: str) -> None:
    now = standing.Now(items={}, missions={("g", "wi-1"): state})
    assert standing.settled(notice(Kind.MISSION_READY, "mission"), now, "user:olga") == words
