"""The pure parts of the group hooks (issue 36 §2): the webhook signature a receiver checks,
what a hook URL may be and what of it a page shows, the delivery keys and the backoff."""

from __future__ import annotations

import hashlib
import hmac
import time
from pathlib import Path

import pytest
from django.test import override_settings

from apps.notifications import hook_signing, hook_targets
from apps.notifications.hook_delivery import chat_text
from apps.notifications.hook_models import HookKind
from apps.notifications.hook_outbox import HOOK_KINDS, KEY_LENGTH, delivery_key
from apps.notifications.hook_tasks import backoff_s
from apps.notifications.kinds import Kind

SECRET = "mwhook_test-secret"


def test_the_signature_is_the_hmac_of_timestamp_dot_body() -> None:
    body = hook_signing.body_bytes({"b": 1, "a": "é"})
    assert body == '{"a":"é","b":1}'.encode()  # compact, keys sorted: the bytes sent
    expected = hmac.new(SECRET.encode(), b"1796611200." + body, hashlib.sha256).hexdigest()
    assert hook_signing.signature(SECRET, "1796611200", body) == f"sha256={expected}"


def test_a_receiver_verifies_and_refuses_what_was_changed() -> None:
    body = hook_signing.body_bytes({"kind": "approval_needed"})
    headers = hook_signing.headers(
        secret=SECRET, timestamp="1796611200", body=body, delivery="7", event="approval_needed"
    )
    signed = headers["X-MissionWeave-Signature"]
    assert headers["X-MissionWeave-Timestamp"] == "1796611200"
    assert headers["X-MissionWeave-Delivery"] == "7"
    assert headers["X-MissionWeave-Event"] == "approval_needed"
    assert headers["Content-Type"] == "application/json"
    assert hook_signing.verify(SECRET, "1796611200", body, signed)
    assert not hook_signing.verify(SECRET, "1796611201", body, signed)  # another time
    assert not hook_signing.verify(SECRET, "1796611200", body + b" ", signed)  # another body
    assert not hook_signing.verify("another secret", "1796611200", body, signed)


def test_each_webhook_secret_is_new_and_long() -> None:
    secrets = {hook_signing.new_secret() for _ in range(20)}
    assert len(secrets) == 20
    assert all(s.startswith("mwhook_") and len(s) >= 40 for s in secrets)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (
            "https://hooks.example.org/mw/secret-path?token=abc",
            "Webhook (https://hooks.example.org/…)",
        ),
        ("http://127.0.0.1:8123/hook", "Webhook (http://127.0.0.1:8123/…)"),
    ],
)
def test_a_webhook_url_is_shown_by_scheme_and_host_only(url: str, shown: str) -> None:
    assert hook_targets.check(HookKind.WEBHOOK, f"  {url} ") == url
    assert hook_targets.summary(HookKind.WEBHOOK, url) == shown


@pytest.mark.parametrize(
    ("url", "service", "hidden"),
    [
        ("slack://T1JJ3T3L2/A1BRTD4JD/TIiajkdnlazkcOXrIdevi7FQ/#general", "Slack", "TIiajkdnl"),
        ("json://user:pw@hooks.example.org/path", "JSON", "pw"),
        ("matrix://bot:hunter22@matrix.example.org/#room", "Matrix", "hunter22"),
    ],
)
def test_a_chat_url_is_recognised_by_apprise_and_its_secrets_never_shown(
    url: str, service: str, hidden: str
) -> None:
    assert hook_targets.check(HookKind.CHAT, url) == url
    shown = hook_targets.summary(HookKind.CHAT, url)
    assert service in shown
    assert hidden not in shown
    assert "T1JJ3T3L2" not in shown  # a token in the host's place is not a host


@pytest.mark.parametrize(
    ("kind", "url", "words"),
    [
        (HookKind.CHAT, "nonsense://what", "Apprise does not recognise"),
        (HookKind.CHAT, "", "Enter the URL"),
        (HookKind.WEBHOOK, "ftp://example.org/x", "starts with https://"),
        (HookKind.WEBHOOK, "https:///nohost", "names a host"),
    ],
)
def test_an_unusable_url_is_refused_in_words(kind: str, url: str, words: str) -> None:
    with pytest.raises(hook_targets.BadTarget, match=words):
        hook_targets.check(kind, url)


def test_delivery_keys_are_per_hook_kind_and_news_and_fit_the_column() -> None:
    assert delivery_key(3, "approval_needed", "ev-1") == "hook:3:approval_needed:ev-1"
    assert delivery_key(3, "approval_needed", "ev-1") != delivery_key(4, "approval_needed", "ev-1")
    long = delivery_key(3, "deadline_near", "w" * 300)
    assert len(long) <= KEY_LENGTH
    assert long != delivery_key(3, "deadline_near", "w" * 299)


def test_a_hook_is_never_told_that_a_hook_was_disabled() -> None:
    assert Kind.HOOK_DISABLED not in HOOK_KINDS
    assert set(HOOK_KINDS) == set(Kind) - {Kind.HOOK_DISABLED}


@override_settings(MWP_HOOK_BACKOFF_S=5.0)
def test_backoff_doubles_up_to_ten_minutes() -> None:
    assert [backoff_s(n) for n in range(4)] == [5.0, 10.0, 20.0, 40.0]
    assert backoff_s(20) == 600.0


def test_a_chat_message_is_plain_words_with_the_link() -> None:
    title, body = chat_text(
        {
            "group": "g-x",
            "group_name": "Research",
            "title": "Approve the execution of “Summarise”",
            "body": "Olga accepted this work.",
            "link": "https://mw.example.org/groups/g-x/work-items/w/approval/",
        }
    )
    assert title == "Research: Approve the execution of “Summarise”"
    assert body == (
        "Olga accepted this work.\n\nOpen: https://mw.example.org/groups/g-x/work-items/w/approval/"
    )


def test_the_receiver_snippet_in_the_deploy_guide_verifies_a_real_signature() -> None:
    """docs/deploy.md "Chat and webhooks": the Python a receiver copies accepts what we sign,
    and refuses a changed body or an old timestamp."""
    guide = (Path(__file__).resolve().parents[2] / "docs" / "deploy.md").read_text()
    section = guide.split("### Chat and webhooks", 1)[1]
    snippet = section.split("```python\n", 1)[1].split("```", 1)[0]
    scope: dict = {}
    exec(compile(snippet, "deploy.md", "exec"), scope)
    verified = scope["verified"]
    body = hook_signing.body_bytes({"kind": "test"})
    now = str(int(time.time()))
    headers = hook_signing.headers(
        secret=SECRET, timestamp=now, body=body, delivery="1", event="test"
    )
    assert verified(SECRET, headers, body)
    assert not verified(SECRET, headers, body + b"x")
    old = str(int(time.time()) - 3600)
    stale = hook_signing.headers(
        secret=SECRET, timestamp=old, body=body, delivery="1", event="test"
    )
    assert not verified(SECRET, stale, body)
