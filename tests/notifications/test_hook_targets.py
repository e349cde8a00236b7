"""Hooks reach public addresses only (issue 36 §2; server-side request forgery): a group
admin cannot make the server post to its own network, when saving a hook or at a later send
(a name may resolve elsewhere by then), unless an operator allows it."""

from __future__ import annotations

import pytest
from django.test import override_settings

from apps.notifications import hook_delivery, hook_targets
from apps.notifications.hook_models import GroupHook, HookKind


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:6379/",
        "https://localhost/hook",
        "http://10.1.2.3/x",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]:8000/",
        "http://192.168.0.10/",
    ],
)
def test_a_webhook_to_the_servers_own_network_is_refused_in_words(url: str) -> None:
    with (
        override_settings(MWP_HOOK_ALLOW_PRIVATE=False),
        pytest.raises(hook_targets.BadTarget, match="private network"),
    ):
        hook_targets.check(HookKind.WEBHOOK, url)


def test_an_apprise_generic_post_to_a_private_host_is_refused_too() -> None:
    with (
        override_settings(MWP_HOOK_ALLOW_PRIVATE=False),
        pytest.raises(hook_targets.BadTarget, match="private network"),
    ):
        hook_targets.check(HookKind.CHAT, "json://127.0.0.1:9999/path")


def test_public_addresses_and_service_urls_pass() -> None:
    with override_settings(MWP_HOOK_ALLOW_PRIVATE=False):
        assert hook_targets.check(HookKind.WEBHOOK, "https://93.184.216.34/hook")
        slack = "slack://T1JJ3T3L2/A1BRTD4JD/TIiajkdnlazkcOXrIdevi7FQ"
        assert hook_targets.check(HookKind.CHAT, slack) == slack


def test_an_operator_may_allow_private_receivers() -> None:
    with override_settings(MWP_HOOK_ALLOW_PRIVATE=True):
        assert hook_targets.check(HookKind.WEBHOOK, "http://127.0.0.1:6379/")


def test_each_send_checks_the_address_again() -> None:
    """A hook saved while allowed (or whose name now resolves privately) is not posted to."""
    hook = GroupHook(kind=HookKind.WEBHOOK, url="http://127.0.0.1:1/hook", secret="s")
    with override_settings(MWP_HOOK_ALLOW_PRIVATE=False):
        outcome = hook_delivery.send(hook, message=None)  # type: ignore[arg-type]
    assert not outcome.ok
    assert "private network" in (outcome.error or "")
