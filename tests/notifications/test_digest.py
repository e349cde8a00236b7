"""The daily digest (issue 36 §3): a person who chose it gets one email gathering several
notifications, sent through a real SMTP server process, and never the same one twice."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from apps.notifications import digests, preferences, producing, sending
from apps.notifications.kinds import EmailMode, Kind
from apps.notifications.models import Delivery, Notification
from tests.dashboard import workflows as wf
from tests.notifications.mailbox import smtp_server
from tests.notifications.story import cast, email_of, gated_item_accepted

pytestmark = pytest.mark.django_db


def test_a_digest_gathers_several_notifications_into_one_email(
    settings: Any, tmp_path: Path
) -> None:
    """olga chose the daily digest for every kind: nothing is emailed to her at once; the
    digest run makes one delivery holding her approvals and sends one email naming each of
    them with its link; a second run finds nothing left to gather."""
    with smtp_server(tmp_path / "mail") as mailbox:
        settings.MAILERS = {
            "default": {
                "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
                "OPTIONS": {"host": "127.0.0.1", "port": mailbox.port, "timeout": 10},
            }
        }
        settings.MWP_PUBLIC_URL = "http://mw.example.test"
        story = cast()
        olga = get_user_model().objects.get(username="olga")
        for kind in Kind:
            preferences.set_preference(olga, kind, email=EmailMode.DAILY_DIGEST)
        gated_item_accepted(story, "wi-1")
        gated_item_accepted(story, "wi-2")
        while producing.produce(story.group).more:
            pass
        # before the digest is made, omar and olga approve wi-2: it says so, wi-1 does not
        for persona in (story.world.olga, story.omar):
            assert wf.approve(persona, story.group, "wi-2").status == 201
        mine = Notification.objects.filter(user=olga)
        assert mine.filter(kind=Kind.APPROVAL_NEEDED).count() == 2
        assert not Delivery.objects.filter(notification__user=olga).exists()

        made = digests.gather()
        digest = Delivery.objects.get(pk__in=made, user=olga)
        assert set(digest.digested.values_list("pk", flat=True)) == set(
            mine.values_list("pk", flat=True)
        )
        assert sending.send(digest.pk) is True
        assert sending.send(digest.pk) is False  # sent already: never twice

        received = mailbox.wait_for(1, address=email_of(story.world.olga))
        assert len(received) == 1
        text = received[0].get_body(preferencelist=("plain",)).get_content()
        assert "daily digest" in str(received[0]["Subject"])
        for item in ("wi-1", "wi-2"):
            assert f"Summarise {item}" in text
            assert (
                f"http://mw.example.test/groups/{story.group}/work-items/{item}/approval/" in text
            )
        assert "You were added to" in text
        wi_1, wi_2 = text.index("Summarise wi-1"), text.index("Summarise wi-2")
        assert "Settled since: you approved it; it may start." in text[wi_2:]
        assert "Settled since" not in text[wi_1:wi_2]
        assert received[0]["List-Unsubscribe"]
        assert digests.gather() == []
