"""Producing notifications from the log (issue 36 §1, §3; R10.2-06) on the database, through
the real write path: the producer run in-process, the rows it makes, its idempotence, and
people's preferences."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from apps.notifications import preferences, producing
from apps.notifications.kinds import EmailMode, Kind
from apps.notifications.models import Delivery, Notification, NotificationCursor
from tests import factories
from tests.notifications.story import cast, gated_item_accepted
from tests.work.lifecycle import head, submit

pytestmark = pytest.mark.django_db


def user(username: str):
    return get_user_model().objects.get(username=username)


def produce_all(group: str) -> None:
    while producing.produce(group).more:
        pass


def test_an_execution_approval_tells_both_mission_owners_once() -> None:
    """The item's start needs two mission owners (R10.2-06): olga and omar are each told once,
    with the approval screen's link and an email queued; nobody else is told of it."""
    story = cast()
    gated_item_accepted(story, "wi-1")
    done = producing.produce(story.group)
    assert done.examined_through == head(story.group)
    approvals = Notification.objects.filter(kind=Kind.APPROVAL_NEEDED)
    assert sorted(approvals.values_list("user__username", flat=True)) == ["olga", "omar"]
    first = approvals.get(user__username="omar")
    assert first.link == f"/groups/{story.group}/work-items/wi-1/approval/"
    assert first.subject_id == "wi-1"
    assert first.event_sequence is not None
    assert "Summarise wi-1" in first.title
    assert "user:" not in first.title + first.body
    assert "agent:" not in first.body
    assert Delivery.objects.filter(notification__in=approvals, channel="email").count() == 2
    # the memberships granted in the story told each person of their own
    members = Notification.objects.filter(kind=Kind.MEMBERSHIP_CHANGED)
    assert set(members.values_list("user__username", flat=True)) == {"olga", "omar", "rita"}


def test_producing_twice_creates_nothing_new() -> None:
    """Idempotent per event, person and kind: a second run, and a run over the same events
    again from the start (a rewound cursor), add no row and no delivery."""
    story = cast()
    gated_item_accepted(story, "wi-1")
    produce_all(story.group)
    counts = (Notification.objects.count(), Delivery.objects.count())
    assert counts[0] > 0
    assert producing.produce(story.group).created == []
    NotificationCursor.objects.filter(group_id=story.group).update(sequence=0)
    produce_all(story.group)
    assert (Notification.objects.count(), Delivery.objects.count()) == counts


def test_a_person_who_turned_a_kind_off_gets_nothing_of_it() -> None:
    """Issue 36 §3: omar turned approvals off (in the app and by email): no row, no email;
    olga, who only stopped its email, sees it in the app and is not emailed."""
    story = cast()
    preferences.set_preference(user("omar"), Kind.APPROVAL_NEEDED, in_app=False, email="off")
    preferences.set_preference(user("olga"), Kind.APPROVAL_NEEDED, email=EmailMode.OFF)
    gated_item_accepted(story, "wi-1")
    produce_all(story.group)
    approvals = Notification.objects.filter(kind=Kind.APPROVAL_NEEDED)
    assert list(approvals.values_list("user__username", "in_app", "email_mode")) == [
        ("olga", True, "off")
    ]
    assert not Delivery.objects.filter(notification__kind=Kind.APPROVAL_NEEDED).exists()


def test_preferences_default_and_keep_what_was_not_changed() -> None:
    """Without a row every kind is in the app and emailed at once; a change keeps the rest."""
    cast()
    olga = user("olga")
    found = preferences.effective(olga, Kind.REVIEW_WAITING)
    assert (found.in_app, found.email) == (True, EmailMode.IMMEDIATE)
    preferences.set_preference(olga, Kind.REVIEW_WAITING, email="daily_digest")
    preferences.set_preference(olga, Kind.REVIEW_WAITING, in_app=False)
    found = preferences.effective(olga, Kind.REVIEW_WAITING)
    assert (found.in_app, found.email, found.off) == (False, EmailMode.DAILY_DIGEST, False)


def test_a_decision_is_told_to_the_requester_and_nobody_is_asked_twice() -> None:
    """The item was asked for by agents (authoriser and mission creator), so its decision is
    told to the group's human coordinator, cora; olga decided before the producer ran, so
    only omar is asked to approve (the state is read when producing, not replayed)."""
    story = cast()
    cora = factories.human("cora")
    factories.grant(story.world.alice, story.group, cora, "coordinator")
    gated_item_accepted(story, "wi-1")
    decision = {"work_item": "wi-1", "contract_revision": 1, "comment": "fine by me"}
    submit(story.world.olga, story.group, "approval.grant_execution", decision)
    produce_all(story.group)
    decided = Notification.objects.get(kind=Kind.APPROVAL_DECIDED)
    assert decided.user.username == "cora"
    assert decided.title == "Olga approved the execution of “Summarise wi-1”"
    assert "fine by me" in decided.body
    assert "1 of 2" in decided.body
    asked = Notification.objects.filter(kind=Kind.APPROVAL_NEEDED)
    assert list(asked.values_list("user__username", flat=True)) == ["omar"]


@pytest.mark.django_db(transaction=True)
def test_a_hint_for_a_group_this_database_does_not_hold_is_passed_over() -> None:
    """Seen on the demo: a benchmark on another database shared the demo's broker, and its
    hints made the demo's worker fail at commit on the cursor's foreign key (SQLite checks it
    there). Such a hint produces nothing and leaves no cursor."""
    done = producing.produce("g-not-here")

    assert (done.created, done.emails, done.more) == ([], [], False)
    assert not NotificationCursor.objects.filter(group_id="g-not-here").exists()
