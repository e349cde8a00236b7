"""Email from the log, end to end against real parts (issue 36 §1-§3; R10.2-06, R11.3-02):
a real SMTP server process (aiosmtpd, ``smtp_sink``) receives what a real Celery worker
sends after real commands through the write path; the worker's embedded beat sends the
start-by reminder; the one-click unsubscribe link turns the kind off; a server that refuses
is retried with backoff, every attempt logged, and nothing is sent twice.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from email.message import EmailMessage
from pathlib import Path
from urllib.parse import urlsplit

from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.test import Client

from apps.notifications import preferences
from apps.notifications.kinds import EmailMode, Kind
from apps.notifications.models import Delivery, Notification
from tests.notifications.delivery import PUBLIC_URL, delivery_env, settle
from tests.notifications.mailbox import Mailbox, smtp_server
from tests.notifications.story import cast, email_of, gated_item_accepted


def worker_env(mailbox: Mailbox, **more: str) -> dict[str, str]:
    return delivery_env(EMAIL_URL=mailbox.url, MWP_NOTIFY_DEADLINE_LEAD_S="600", **more)


def about(messages: list[EmailMessage], words: str) -> list[EmailMessage]:
    return [m for m in messages if words in str(m["Subject"])]


def text_of(message: EmailMessage) -> str:
    return message.get_body(preferencelist=("plain",)).get_content()


def test_mission_owners_are_emailed_reminded_and_can_unsubscribe(
    start_celery: Callable[..., object], hints_to: Callable, tmp_path: Path
) -> None:
    """A gated WorkItem is accepted (R10.2-06): the worker emails both mission owners the
    approval screen's absolute link with a one-click unsubscribe; the beat reminds them that
    its start-by deadline (R11.3-02) is within the lead time; omar unsubscribes from the link
    and the next approval is emailed to olga only, while omar still sees it in the app."""
    with smtp_server(tmp_path / "mail") as mailbox:
        story = cast()
        with start_celery(extra_env=worker_env(mailbox)) as processes:
            hints_to(processes)
            gated_item_accepted(story, "wi-1", start_within_s=300)
            olga, omar = email_of(story.world.olga), email_of(story.omar)

            def asked(address: str, item: str) -> list[EmailMessage]:
                return [
                    m for m in about(mailbox.to(address), "Approve the execution")
                    if item in str(m["Subject"])
                ]  # fmt: skip

            assert settle(lambda: asked(olga, "wi-1") and asked(omar, "wi-1")), processes.log()
            message = asked(omar, "wi-1")[0]
            text = text_of(message)
            assert f"{PUBLIC_URL}/groups/{story.group}/work-items/wi-1/approval/" in text
            assert "accepted this work" in text
            html = message.get_body(preferencelist=("html",)).get_content()
            assert "approval/" in html
            assert message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
            unsubscribe = str(message["List-Unsubscribe"]).strip("<>")
            assert unsubscribe.startswith(f"{PUBLIC_URL}/notifications/unsubscribe/")

            # the beat's reminder: the start-by deadline is 5 min away, inside the 10 min lead
            reminded = lambda: about(mailbox.to(omar), "must start within")  # noqa: E731
            assert settle(
                lambda: bool(reminded()) and bool(about(mailbox.to(olga), "must start"))
            ), processes.log()
            assert "waits for execution approval" in text_of(reminded()[0])

            # one click (RFC 8058: a POST to the link, no session, no CSRF token)
            path = urlsplit(unsubscribe).path
            confirm = Client().get(path)
            assert confirm.status_code == 200
            assert b"Stop" in confirm.content
            assert (
                preferences.effective(_user("omar"), Kind.APPROVAL_NEEDED).email
                == EmailMode.IMMEDIATE
            )  # a GET changes nothing
            assert Client(enforce_csrf_checks=True).post(path).status_code == 200
            assert preferences.effective(_user("omar"), Kind.APPROVAL_NEEDED).email == EmailMode.OFF

            gated_item_accepted(story, "wi-2")
            assert settle(lambda: bool(asked(olga, "wi-2"))), processes.log()
            assert settle(
                lambda: Notification.objects.filter(
                    user__username="omar", kind=Kind.APPROVAL_NEEDED, subject_id="wi-2"
                ).exists()
            )
            time.sleep(2.0)  # what would have been sent by now has been
            assert asked(omar, "wi-2") == []
            row = Notification.objects.get(
                user__username="omar", subject_id="wi-2", kind="approval_needed"
            )
            assert (row.in_app, row.email_mode, row.deliveries.count()) == (True, "off", 0)
            # wi-2 must start within an hour, beyond the 10 min lead: the beat, which has
            # swept every half second meanwhile, reminds nobody of it
            assert not Notification.objects.filter(
                kind=Kind.DEADLINE_NEAR, subject_id="wi-2"
            ).exists()
            assert not [
                m for m in about(mailbox.messages(), "must start") if "wi-2" in str(m["Subject"])
            ]
            reminded_of_wi_1 = Notification.objects.filter(
                kind=Kind.DEADLINE_NEAR, subject_id="wi-1"
            )
            assert sorted(reminded_of_wi_1.values_list("user__username", flat=True)) == [
                "olga",
                "omar",
            ]  # once each, though the beat swept again and again

        # every email delivery was sent once, at the first attempt, and only once
        sent = Delivery.objects.filter(channel="email")
        assert set(sent.values_list("status", "attempts")) == {("sent", 1)}
        assert len(mailbox.messages()) == sent.count()


def _user(username: str) -> AbstractBaseUser:
    return get_user_model().objects.get(username=username)


def test_a_refusing_mail_server_is_retried_with_backoff_and_mail_sent_once(
    start_celery: Callable[..., object], hints_to: Callable, tmp_path: Path
) -> None:
    """The SMTP server answers 451 to the first two messages: the worker retries with
    backoff (Celery's autoretry), counts every attempt and keeps the error on the delivery,
    and in the end each email arrives exactly once."""
    with smtp_server(tmp_path / "mail", refuse_first=2) as mailbox:
        story = cast()  # three memberships of people: three emails
        env = worker_env(mailbox, MWP_NOTIFY_EMAIL_BACKOFF_S="1")
        with start_celery(extra_env=env) as processes:
            hints_to(processes)
            deliveries = Delivery.objects.filter(channel="email")

            def done() -> bool:
                return deliveries.count() == 3 and not deliveries.exclude(status="sent").exists()

            assert settle(done), processes.log()
        assert mailbox.refused() == 2
        messages = mailbox.messages()
        assert sorted(str(m["To"]) for m in messages) == sorted(
            email_of(p) for p in (story.world.olga, story.omar, story.rita)
        )
        assert sum(deliveries.values_list("attempts", flat=True)) == 3 + 2
        retried = deliveries.filter(attempts__gt=1)
        assert retried.exists()
        assert all("451" in d.last_error or d.last_error == "" for d in deliveries)
