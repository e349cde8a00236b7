"""The account screen in a real browser (issue 13 §3): create an API token and see it once,
revoke it, change the password and log in again with the new one.
"""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

from apps.registry.models import ApiToken
from apps.registry.services import authenticate_bearer
from missionweave.protocol.errors import ProtocolError
from tests.e2e.screens import check_screen
from tests.factories import HumanPersona, human
from tests.live_server import LiveServer, in_plain_thread

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct horse battery staple"
NEW_PASSWORD = "a much longer passphrase 42"


@pytest.fixture
def maria(transactional_db: None) -> HumanPersona:
    """Committed before the browser starts, so the server process sees her."""
    persona = human("maria")
    user = get_user_model().objects.get(username=persona.username)
    user.set_password(PASSWORD)
    user.save(update_fields=["password"])
    return persona


def log_in(page: Page, server: LiveServer, username: str, password: str) -> None:
    page.goto(f"{server.url}/account/")
    expect(page).to_have_url(f"{server.url}/login/?next=/account/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(f"{server.url}/account/")


def test_a_person_creates_a_token_sees_it_once_revokes_it_and_changes_the_password(
    maria: HumanPersona, live_asgi_server: LiveServer, page: Page
) -> None:
    server = live_asgi_server
    log_in(page, server, maria.username, PASSWORD)
    expect(page.get_by_role("heading", name="Account", level=1)).to_be_visible()
    expect(page.get_by_text("this browser")).to_be_visible()
    check_screen(page, "account")

    page.get_by_label("Label", exact=True).fill("e2e laptop")
    page.get_by_role("button", name="Create token").click()
    expect(page.get_by_role("heading", name="Your new API token")).to_be_visible()
    expect(page).to_have_url(f"{server.url}/account/#new-token")  # post/redirect/get
    token = page.locator("#new-token-value").input_value()
    assert re.fullmatch(r"mwt_[A-Za-z0-9_-]+", token)
    check_screen(page, "account-new-token")
    assert in_plain_thread(lambda: authenticate_bearer(token).caller.principal) == "user:maria"

    page.reload()  # shown once, and a reload mints no second token
    expect(page.get_by_role("heading", name="Your new API token")).to_have_count(0)
    assert token not in page.content()
    row = page.locator("#tokens tr", has_text="e2e laptop")
    expect(row).to_have_count(1)
    assert in_plain_thread(lambda: ApiToken.objects.filter(label="e2e laptop").count()) == 1
    row.get_by_role("link", name="Revoke token e2e laptop…").click()
    expect(page.get_by_role("heading", name="Revoke the token “e2e laptop”?")).to_be_visible()
    check_screen(page, "account-confirm-revoke")
    page.get_by_role("button", name="Yes, revoke it").click()
    expect(page.get_by_role("status")).to_contain_text("was revoked")
    expect(page.locator("#tokens tr", has_text="e2e laptop")).to_have_count(0)
    assert not in_plain_thread(lambda: ApiToken.objects.filter(label="e2e laptop").exists())

    def refused() -> bool:
        try:
            authenticate_bearer(token)
        except ProtocolError:
            return True
        return False

    assert in_plain_thread(refused)

    page.get_by_label("Old password").fill(PASSWORD)
    page.get_by_label("New password", exact=True).fill(NEW_PASSWORD)
    page.get_by_label("New password confirmation").fill(NEW_PASSWORD)
    page.get_by_role("button", name="Change password").click()
    expect(page.get_by_role("status")).to_contain_text("Your password was changed")
    expect(page).to_have_url(f"{server.url}/account/")  # still signed in

    page.get_by_role("button", name="Log out").click()
    log_in(page, server, maria.username, NEW_PASSWORD)
    expect(page.get_by_role("heading", name="Account", level=1)).to_be_visible()
