"""Login throttling (issue 16 §5): django-axes counts failed logins per username and per
address; the failure that reaches the limit locks the username, or the address, for the
cool-off, however right the password after it, with a styled 429 page. Real PostgreSQL, the
real login form.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.test import Client
from django.utils import timezone

from tests.dashboard.conftest import PASSWORD, Dashboard, password_login

pytestmark = pytest.mark.django_db

LIMIT = settings.AXES_FAILURE_LIMIT


def _from(address: str) -> Client:
    return Client(REMOTE_ADDR=address)


def _fail(client: Client, username: str) -> int:
    return client.post("/login/", {"username": username, "password": "wrong"}).status_code


def test_the_limit_is_configured_and_a_failure_below_it_is_an_ordinary_form_error(
    dash: Dashboard,
) -> None:
    assert LIMIT == 5
    assert settings.AXES_COOLOFF_TIME.total_seconds() == 15 * 60
    response = _from("10.0.0.1").post("/login/", {"username": "maria", "password": "wrong"})
    assert response.status_code == 200
    assert 'class="alert"' in response.content.decode()


def test_failures_for_one_username_from_many_addresses_lock_that_username_everywhere(
    dash: Dashboard,
) -> None:
    """Per user: a password guessed from many addresses still runs out, and the right
    password is refused too while the lock holds; another person is not affected."""
    for index in range(LIMIT - 1):
        assert _fail(_from(f"10.0.1.{index}"), dash.maria.username) == 200
    assert _fail(_from("10.0.1.100"), dash.maria.username) == 429  # the limit-th locks
    locked = _from("10.0.1.200").post(
        "/login/", {"username": dash.maria.username, "password": PASSWORD}
    )
    assert locked.status_code == 429
    html = locked.content.decode()
    assert "Too many failed logins" in html
    assert "15 minutes" in html
    assert dash.maria.username in html
    assert 'data-code="RATE_LIMITED"' in html
    assert "_auth_user_id" not in locked.client.session
    assert password_login(_from("10.0.1.201"), dash.nina.username, PASSWORD)


def test_failures_from_one_address_lock_that_address_for_every_username(
    dash: Dashboard,
) -> None:
    """Per address: one address trying many usernames runs out; elsewhere people log in."""
    attacker = _from("10.0.2.1")
    for index in range(LIMIT - 1):
        assert _fail(attacker, f"guess-{index}") == 200
    assert _fail(attacker, "guess-last") == 429
    refused = attacker.post("/login/", {"username": dash.nina.username, "password": PASSWORD})
    assert refused.status_code == 429
    assert password_login(_from("10.0.2.2"), dash.nina.username, PASSWORD)


def test_a_success_before_the_limit_resets_the_count(dash: Dashboard) -> None:
    browser = _from("10.0.3.1")
    for _ in range(LIMIT - 1):
        assert _fail(browser, dash.maria.username) == 200
    assert password_login(browser, dash.maria.username, PASSWORD)
    browser.logout()
    for _ in range(LIMIT - 1):
        assert _fail(browser, dash.maria.username) == 200
    assert password_login(browser, dash.maria.username, PASSWORD)


def test_the_lock_lifts_after_the_cool_off(dash: Dashboard) -> None:
    browser = _from("10.0.4.1")
    for _ in range(LIMIT):
        _fail(browser, dash.maria.username)
    assert not password_login(browser, dash.maria.username, PASSWORD)
    # the cool-off is counted from the last failure: move every failure back past it
    AccessAttempt.objects.update(
        attempt_time=timezone.now() - settings.AXES_COOLOFF_TIME - timedelta(seconds=1)
    )
    assert password_login(browser, dash.maria.username, PASSWORD)


def test_the_admin_login_is_throttled_too(dash: Dashboard) -> None:
    """The admin site authenticates through the same backends, so it has the same limit."""
    browser = _from("10.0.5.1")
    for _ in range(LIMIT):
        browser.post("/admin/login/", {"username": "root", "password": "wrong"})
    response = browser.post("/admin/login/", {"username": "root", "password": "wrong"})
    assert response.status_code == 429
