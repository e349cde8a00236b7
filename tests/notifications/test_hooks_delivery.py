"""Chat and webhooks of a group, end to end against real parts (issue 36 §2 "Must hold";
R10.2-06): real commands through the write path, a real Celery worker that produces and
delivers, and real HTTP server processes (``hook_receiver``) that receive the webhook and the
Apprise ``json://`` message. A receiver that answers 500 twice then 200 gets the webhook
three times and it is delivered exactly once, every attempt logged, each signature valid; a
hook's kinds filter holds; a hook that keeps failing is turned off and the group's admins
are told in the app and by email (a real SMTP server process).
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable
from pathlib import Path

from django.contrib.auth import get_user_model

from apps.notifications import hook_signing, hooks
from apps.notifications.hook_models import DeliveryAttempt, GroupHook, HookKind, HookMessage
from apps.notifications.models import Delivery, Notification
from tests import factories
from tests.dashboard import workflows as wf
from tests.notifications.delivery import PUBLIC_URL, WAIT_S, delivery_env, settle
from tests.notifications.hook_receiver import receiver
from tests.notifications.mailbox import smtp_server
from tests.notifications.story import Cast, cast, gated_item_accepted

#: the first retry's wait; each further retry waits twice as long (``hook_tasks.backoff_s``)
BACKOFF_S = 0.5
#: what two timestamps of the worker's clock may differ from a countdown by
CLOCK_SLACK_S = 0.05


def worker_env(tmp_path: Path, **more: str) -> dict[str, str]:
    more = {"MWP_HOOK_BACKOFF_S": str(BACKOFF_S), **more}
    return delivery_env(MWP_VAR_DIR=str(tmp_path / "var"), **more)


def _hook(story: Cast, name: str, kind: str, url: str, kinds: list[str]) -> hooks.Created:
    adam = get_user_model().objects.get(username="alice")
    return hooks.create(group_id=story.group, name=name, kind=kind, url=url, kinds=kinds, by=adam)


def test_a_webhook_refused_twice_is_delivered_once_signed_and_chat_goes_through_apprise(
    start_celery: Callable[..., object], hints_to: Callable, tmp_path: Path
) -> None:
    with (
        receiver(tmp_path / "webhook", fail_first=2) as webhook,
        receiver(tmp_path / "chat") as chat,
        receiver(tmp_path / "blocked-only") as filtered,
    ):
        story = cast()
        ops = _hook(story, "ops", HookKind.WEBHOOK, webhook.url, ["approval_needed"])
        _hook(story, "room", HookKind.CHAT, f"json://127.0.0.1:{chat.port}/", ["approval_needed"])
        _hook(story, "blocked", HookKind.WEBHOOK, filtered.url, ["work_blocked"])
        with start_celery(extra_env=worker_env(tmp_path)) as processes:
            hints_to(processes)
            gated_item_accepted(story, "wi-1")  # asks olga and omar: one piece of group news
            assert len(webhook.wait_for(3, timeout=WAIT_S)) == 3, processes.log()
            assert chat.wait_for(1, timeout=WAIT_S), processes.log()
            delivery = Delivery.objects.get(channel="webhook", hook_message__hook=ops.hook)
            assert settle(lambda: Delivery.objects.get(pk=delivery.pk).status == "sent"), (
                processes.log()
            )
            time.sleep(2.0)  # whatever would be sent again, or to the filtered hook, has been

        received = webhook.requests()
        assert [r.answered for r in received] == [500, 500, 200]  # exactly once delivered
        for request in received:
            timestamp = request.header("X-MissionWeave-Timestamp")
            assert hook_signing.verify(
                ops.secret, timestamp, request.body, request.header("X-MissionWeave-Signature")
            )
            assert request.header("X-MissionWeave-Delivery") == str(delivery.pk)
            assert request.header("X-MissionWeave-Event") == "approval_needed"
            assert request.header("Content-Type") == "application/json"
        document = received[-1].json()
        assert document["kind"] == "approval_needed"
        assert document["group"] == story.group
        assert document["title"] == "Approve the execution of “Summarise wi-1”"
        assert document["link"] == f"{PUBLIC_URL}/groups/{story.group}/work-items/wi-1/approval/"
        assert document["subject"] == {"type": "work_item", "id": "wi-1"}
        assert document["event_id"]
        assert document["occurred_at"]
        assert received[0].body == received[-1].body  # every retry sends the same document

        delivery.refresh_from_db()
        assert (delivery.status, delivery.attempts) == ("sent", 3)
        attempts = list(DeliveryAttempt.objects.filter(delivery=delivery).order_by("number"))
        assert [(a.number, a.ok, a.status_code) for a in attempts] == [
            (1, False, 500), (2, False, 500), (3, True, 200),
        ]  # fmt: skip
        assert attempts[0].error.startswith("HTTP 500")
        assert all(a.duration_ms >= 0 for a in attempts)
        # backoff: retry n waits MWP_HOOK_BACKOFF_S x 2^(n-1) (0.5 s, then 1 s) after a failure
        gaps = [(b.at - a.at).total_seconds() for a, b in itertools.pairwise(attempts)]
        assert gaps[0] >= BACKOFF_S - CLOCK_SLACK_S, gaps
        assert gaps[1] >= 2 * BACKOFF_S - CLOCK_SLACK_S, gaps
        hook = GroupHook.objects.get(pk=ops.hook.pk)
        assert (hook.enabled, hook.consecutive_failures) == (True, 0)
        assert hook.last_delivered_at is not None

        # Apprise's JSON message: title and body in plain words with the absolute link
        (message,) = chat.requests()
        sent = json.loads(message.body)
        assert sent["title"] == f"{story.group}: Approve the execution of “Summarise wi-1”"
        assert (
            f"Open: {PUBLIC_URL}/groups/{story.group}/work-items/wi-1/approval/" in sent["message"]
        )
        assert Delivery.objects.get(channel="chat").status == "sent"
        # the kinds filter: the hook for blocked work got nothing
        assert filtered.requests() == []
        assert not HookMessage.objects.filter(hook__name="blocked").exists()


def test_a_block_the_coordinator_leaves_unanswered_reaches_the_hook_once_by_the_beat(
    start_celery: Callable[..., object], hints_to: Callable, tmp_path: Path
) -> None:
    """R11.4-04..06: w1, an agent, coordinates, so the block itself tells nobody; the worker's
    embedded beat (``remind_blocked``, grace 1 s here) finds it still unanswered and the
    group's ``work_blocked`` hook receives it once, in the worker's words, as the mission
    owners' inboxes do."""
    with receiver(tmp_path / "blocked") as blocked_hook:
        story = cast()
        _hook(story, "blocked", HookKind.WEBHOOK, blocked_hook.url, ["work_blocked"])
        env = worker_env(tmp_path, MWP_NOTIFY_BLOCK_GRACE_S="1")
        with start_celery(extra_env=env) as processes:
            hints_to(processes)
            world = story.world
            item = wf.queued(world, wf.mission(world))
            wf.block(world, item, wf.start(world, item), "access to the archive")
            assert blocked_hook.wait_for(1, timeout=WAIT_S), processes.log()
            time.sleep(2.0)  # the beat's later runs, every half second, add nothing

        (request,) = blocked_hook.requests()
        document = request.json()
        assert document["kind"] == "work_blocked"
        assert document["subject"] == {"type": "work_item", "id": item}
        assert document["body"] == (
            "It needs: “access to the archive” Nobody has answered it for 1 min."
        )
        told = Notification.objects.filter(kind="work_blocked", subject_id=item)
        assert sorted(told.values_list("user__username", flat=True)) == ["olga", "omar"]


def test_a_hook_that_keeps_failing_is_turned_off_and_its_admins_told(
    start_celery: Callable[..., object], hints_to: Callable, tmp_path: Path
) -> None:
    with (
        receiver(tmp_path / "down", fail_first=10_000) as down,
        smtp_server(tmp_path / "mail") as mailbox,
    ):
        story = cast()
        adam = factories.human("adam")
        factories.grant(story.world.alice, story.group, adam, "admin")
        get_user_model().objects.filter(username="adam").update(email="adam@example.test")
        ops = _hook(story, "ops", HookKind.WEBHOOK, down.url, ["approval_needed"]).hook
        env = worker_env(
            tmp_path,
            MWP_HOOK_RETRIES="1",
            MWP_HOOK_DISABLE_AFTER="2",
            MWP_HOOK_BACKOFF_S="0.2",
            EMAIL_URL=mailbox.url,
        )
        with start_celery(extra_env=env) as processes:
            hints_to(processes)
            gated_item_accepted(story, "wi-1")
            gated_item_accepted(story, "wi-2")
            told = Notification.objects.filter(kind="hook_disabled")
            assert settle(told.exists), processes.log()
            gated_item_accepted(story, "wi-3")  # after it was turned off
            assert settle(
                lambda: Notification.objects.filter(
                    kind="approval_needed", subject_id="wi-3"
                ).exists()
            ), processes.log()
            time.sleep(1.5)

        hook = GroupHook.objects.get(pk=ops.pk)
        assert not hook.enabled
        assert hook.disabled_at is not None
        assert hook.disabled_reason.startswith("2 deliveries in a row failed; the last: HTTP 500")
        assert list(told.values_list("user__username", flat=True)) == ["adam"]
        assert told.get().link == f"/groups/{story.group}/hooks/"
        failed = Delivery.objects.filter(channel="webhook")
        assert sorted(failed.values_list("status", "attempts")) == [("failed", 2), ("failed", 2)]
        assert DeliveryAttempt.objects.filter(delivery__in=failed).count() == 4
        assert len(down.requests()) == 4  # two attempts each (one retry), nothing after
        assert not HookMessage.objects.filter(document__subject__id="wi-3").exists()
        # and by email (their default for every kind), through a real SMTP server
        subject = f"[MissionWeave] {told.get().title}"  # "The hook “ops” of … was turned off"

        def to_adam() -> list:
            return [m for m in mailbox.to("adam@example.test") if str(m["Subject"]) == subject]

        assert settle(lambda: bool(to_adam())), [m["Subject"] for m in mailbox.messages()]
        assert len(to_adam()) == 1
        assert f"/groups/{story.group}/hooks/" in to_adam()[0].get_body(("plain",)).get_content()
