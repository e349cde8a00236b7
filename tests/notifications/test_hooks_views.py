"""The hooks page of a group (issue 36 §2; docs/dashboard.md "Chat and webhooks"): only the
group's admins (the group role ``admin``) and staff manage hooks, a member who is not an admin
reads who does, a stranger gets 404; a saved URL is never shown back, a webhook's secret is
shown once; a refused form keeps what was typed; test, turn on again and delete work."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from apps.notifications import hooks
from apps.notifications.hook_models import GroupHook, HookKind, HookMessage
from apps.notifications.models import Delivery
from tests import factories
from tests.notifications.story import Cast, cast

pytestmark = pytest.mark.django_db

WEBHOOK_URL = "https://hooks.example.org/mw/s3cr3t-path"


@pytest.fixture
def story() -> Cast:
    found = cast("g-hooks")
    adam = factories.human("adam")
    factories.grant(found.world.alice, found.group, adam, "admin")
    get_user_model().objects.filter(username="adam").update(first_name="Adam")
    factories.human("stranger")
    return found


def as_user(username: str) -> Client:
    client = Client()
    client.force_login(get_user_model().objects.get(username=username))
    return client


def page(group: str) -> str:
    return f"/groups/{group}/hooks/"


def test_only_admins_and_staff_manage_hooks(story: Cast) -> None:
    assert as_user("adam").get(page(story.group)).status_code == 200  # group role admin
    assert as_user("alice").get(page(story.group)).status_code == 200  # staff, not a member
    refused = as_user("omar").get(page(story.group))  # a mission owner
    assert refused.status_code == 403
    text = refused.content.decode()
    assert "Only the group's admins manage its chat rooms and webhooks: ask Adam." in text
    assert "Add a hook" not in text
    assert as_user("stranger").get(page(story.group)).status_code == 404
    assert as_user("adam").get(page("g-nowhere")).status_code == 404
    # a member who is not an admin cannot post either
    posted = as_user("omar").post(
        page(story.group),
        {"name": "x", "kind": "webhook", "url": WEBHOOK_URL, "kinds": ["work_blocked"]},
    )
    assert posted.status_code == 403
    assert not GroupHook.objects.exists()


def test_a_webhook_secret_is_shown_once_and_its_url_never(story: Cast) -> None:
    adam = as_user("adam")
    answer = adam.post(
        page(story.group),
        {"name": "ops", "kind": "webhook", "url": WEBHOOK_URL, "kinds": ["approval_needed"]},
    )
    assert answer.status_code == 302
    hook = GroupHook.objects.get()
    assert (hook.kind, hook.url, hook.kinds, hook.enabled) == (
        "webhook", WEBHOOK_URL, ["approval_needed"], True,
    )  # fmt: skip
    first = adam.get(answer["Location"]).content.decode()
    assert hook.secret
    assert hook.secret in first
    assert "shown only now" in first
    assert "Added the hook “ops”." in first
    assert "Webhook (https://hooks.example.org/…)" in first
    assert "s3cr3t-path" not in first
    again = adam.get(page(story.group)).content.decode()
    assert hook.secret not in again  # once
    assert "s3cr3t-path" not in again
    detail = adam.get(f"{page(story.group)}{hook.pk}/").content.decode()
    assert hook.secret not in detail
    assert "s3cr3t-path" not in detail


def test_a_refused_form_says_why_and_keeps_what_was_typed(story: Cast) -> None:
    answer = as_user("adam").post(
        page(story.group),
        {"name": "Team room", "kind": "chat", "url": "nonsense://what", "kinds": ["work_blocked"]},
    )
    assert answer.status_code == 400
    text = answer.content.decode()
    assert "Apprise does not recognise this URL" in text
    assert 'value="Team room"' in text
    assert 'value="nonsense://what"' in text
    assert re.search(r'<input[^>]*value="work_blocked"[^>]*checked', text)
    assert not re.search(r'<input[^>]*value="approval_needed"[^>]*checked', text)
    assert re.search(r'<input[^>]*value="chat"[^>]*checked', text)
    assert not GroupHook.objects.exists()
    # a name taken in this group
    hooks.create(
        group_id=story.group, name="ops", kind="webhook", url=WEBHOOK_URL, kinds=["sent_back"],
        by=get_user_model().objects.get(username="adam"),
    )  # fmt: skip
    taken = as_user("adam").post(
        page(story.group),
        {
            "name": "ops",
            "kind": "webhook",
            "url": "https://else.example.org/",
            "kinds": ["sent_back"],
        },
    )
    assert taken.status_code == 400
    assert "This group already has a hook named “ops”." in taken.content.decode()
    assert 'value="https://else.example.org/"' in taken.content.decode()


def test_test_message_turn_on_again_and_delete(
    story: Cast, django_capture_on_commit_callbacks: Callable
) -> None:
    adam = as_user("adam")
    made = hooks.create(
        group_id=story.group, name="room", kind=HookKind.CHAT, url="json://127.0.0.1:9/",
        kinds=["work_blocked"], by=get_user_model().objects.get(username="adam"),
    )  # fmt: skip
    hook = made.hook
    assert made.secret == ""  # a chat hook has none
    with django_capture_on_commit_callbacks() as queued:
        answer = adam.post(f"{page(story.group)}{hook.pk}/test/", {"token": "t-1"})
    assert answer.status_code == 302
    assert len(queued) == 1  # sent to the worker after commit
    message = HookMessage.objects.get(hook=hook)
    assert message.kind == "test"
    assert "Adam sent this test" in message.document["body"]
    # the same form sent twice: one delivery
    with django_capture_on_commit_callbacks():
        adam.post(f"{page(story.group)}{hook.pk}/test/", {"token": "t-1"})
    assert HookMessage.objects.filter(hook=hook).count() == 1
    detail = adam.get(answer["Location"]).content.decode()
    assert "Test message for “room”" in detail
    assert "Waiting to be sent" in detail

    hooks.turn_off(hook, "5 deliveries in a row failed; the last: HTTP 500")
    listed = adam.get(page(story.group)).content.decode()
    assert "5 deliveries in a row failed; the last: HTTP 500" in listed
    assert "Turn room on again" in listed
    adam.post(f"{page(story.group)}{hook.pk}/enable/")
    hook.refresh_from_db()
    assert hook.enabled

    confirm = adam.get(f"{page(story.group)}{hook.pk}/delete/")
    assert "Delete the hook room?" in confirm.content.decode()
    assert GroupHook.objects.filter(pk=hook.pk).exists()  # asking deletes nothing
    adam.post(f"{page(story.group)}{hook.pk}/delete/")
    assert not GroupHook.objects.filter(pk=hook.pk).exists()
    assert not Delivery.objects.filter(channel="chat").exists()
