"""Group news queued for a group's hooks by the producer (issue 36 §2; R10.2-06): one
delivery per hook, event and kind — not one per person —, only for the kinds a hook
receives and only while it is on, never twice; and a hook that keeps failing is turned off
and the group's human admins are told in the app."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import override_settings

from apps.notifications import hook_delivery, hooks, producing
from apps.notifications.hook_models import GroupHook, HookKind, HookMessage
from apps.notifications.kinds import Kind
from apps.notifications.models import Delivery, Notification, NotificationCursor
from tests import factories
from tests.notifications.story import cast, gated_item_accepted

pytestmark = pytest.mark.django_db


def _hook(group: str, name: str, kind: str, url: str, kinds: list[str]) -> GroupHook:
    admin = get_user_model().objects.get(username="alice")
    return hooks.create(group_id=group, name=name, kind=kind, url=url, kinds=kinds, by=admin).hook


def _produce_all(group: str) -> None:
    while producing.produce(group).more:
        pass


def test_one_delivery_per_hook_event_and_kind_for_the_kinds_it_receives() -> None:
    story = cast()
    every = _hook(
        story.group, "ops", HookKind.WEBHOOK, "https://hooks.example.org/a", [k.value for k in Kind]
    )
    reviews_only = _hook(
        story.group, "reviews", HookKind.CHAT, "json://hooks.example.org/b", ["review_waiting"]
    )
    off = _hook(
        story.group, "off", HookKind.WEBHOOK, "https://hooks.example.org/c", ["approval_needed"]
    )
    hooks.turn_off(off, "paused for the test")

    gated_item_accepted(story, "wi-1")  # olga and omar are asked: two people, one event
    _produce_all(story.group)

    asked = Notification.objects.filter(kind="approval_needed", subject_id="wi-1")
    assert sorted(asked.values_list("user__username", flat=True)) == ["olga", "omar"]
    messages = HookMessage.objects.filter(kind="approval_needed")
    assert [m.hook.name for m in messages] == ["ops"]  # once, to the hook that wants it
    document = messages.get().document
    assert document["kind"] == "approval_needed"
    assert document["event_id"] == asked.first().event_id
    assert document["group"] == story.group
    assert document["title"] == "Approve the execution of “Summarise wi-1”"
    assert document["link"].endswith(f"/groups/{story.group}/work-items/wi-1/approval/")
    assert document["link"].startswith("http")
    assert document["subject"] == {"type": "work_item", "id": "wi-1"}
    assert document["people"] == ["Olga", "Omar"]  # by name, never user:…
    assert document["delivery"] == str(messages.get().delivery_id)
    assert document["occurred_at"]
    delivery = messages.get().delivery
    assert (delivery.channel, delivery.target, delivery.status) == (
        "webhook",
        str(every.pk),
        "pending",
    )
    assert not HookMessage.objects.filter(hook=reviews_only).exists()
    assert not HookMessage.objects.filter(hook=off).exists()

    # produced again from the start: nothing new, for people or hooks
    before = Delivery.objects.count()
    NotificationCursor.objects.filter(group_id=story.group).update(sequence=0)
    _produce_all(story.group)
    assert Delivery.objects.count() == before


def test_a_new_hook_is_told_only_what_happens_after_it_was_added() -> None:
    """The producer runs behind the log: news of an event it reaches after the hook was added
    (here rita's membership, granted before) is the people's, never the new hook's."""
    story = cast()  # omar's and rita's memberships are in the log, not produced yet
    hook = _hook(
        story.group, "ops", HookKind.WEBHOOK, "https://hooks.example.org/a", [k.value for k in Kind]
    )
    gated_item_accepted(story, "wi-1")
    _produce_all(story.group)

    told = Notification.objects.filter(kind="membership_changed", user__username="rita")
    assert told.exists()  # rita still hears of her own membership
    kinds = sorted(set(HookMessage.objects.filter(hook=hook).values_list("kind", flat=True)))
    assert kinds == ["approval_needed"]  # the hook: only the news after it was added
    event_ids = {m.document["event_id"] for m in HookMessage.objects.filter(hook=hook)}
    assert event_ids == set(
        Notification.objects.filter(kind="approval_needed").values_list("event_id", flat=True)
    )


@override_settings(MWP_HOOK_DISABLE_AFTER=2)
def test_a_hook_that_keeps_failing_is_turned_off_and_the_admins_told() -> None:
    story = cast()
    adam = factories.human("adam")
    factories.grant(story.world.alice, story.group, adam, "admin")
    hook = _hook(
        story.group, "ops", HookKind.WEBHOOK, "https://hooks.example.org/a", ["work_blocked"]
    )

    assert hook_delivery.count_failure(hook.pk, "HTTP 500") == []
    hook.refresh_from_db()
    assert (hook.enabled, hook.consecutive_failures) == (True, 1)
    hook_delivery.count_failure(hook.pk, "HTTP 502: bad gateway")
    hook.refresh_from_db()
    assert (hook.enabled, hook.consecutive_failures) == (False, 2)
    assert hook.disabled_at is not None
    assert hook.disabled_reason == "2 deliveries in a row failed; the last: HTTP 502: bad gateway"

    told = Notification.objects.filter(kind=Kind.HOOK_DISABLED)
    assert list(told.values_list("user__username", flat=True)) == ["adam"]  # the human admins
    assert told.get().link == f"/groups/{story.group}/hooks/"
    assert "“ops”" in told.get().title

    # a third failure (a test message to the hook while off) tells nobody again
    hook_delivery.count_failure(hook.pk, "HTTP 500")
    assert told.count() == 1
    hooks.turn_on(hook)
    hook.refresh_from_db()
    assert (hook.enabled, hook.consecutive_failures, hook.disabled_reason) == (True, 0, "")
