"""The account screen (issue 13 §3): password change keeping the session, API tokens listed,
created once-visible and revoked, and the person's sessions with "sign out other sessions".
Real PostgreSQL; another person's token is a 404, and every change needs CSRF.
"""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.sessions.models import Session
from django.test import Client

from apps.registry.models import ApiToken, token_digest
from apps.registry.services import api_token_create, authenticate_bearer
from missionweave.protocol.errors import ProtocolError
from tests.dashboard.conftest import PASSWORD, Dashboard, logged_in, password_login
from tests.dashboard.html import element, text

pytestmark = pytest.mark.django_db

NEW_PASSWORD = "a much longer passphrase 42"


def _user(username: str) -> object:
    return get_user_model().objects.get(username=username)


def test_account_page_lists_only_the_persons_tokens_and_needs_login(dash: Dashboard) -> None:
    api_token_create(username=dash.maria.username, label="maria laptop")
    api_token_create(username=dash.nina.username, label="nina secret box")
    assert Client().get("/account/").status_code == 302
    response = logged_in(dash.maria).get("/account/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "maria laptop" in html
    assert "nina secret box" not in html
    assert 'href="/account/"' in html  # the top bar's Account link


def test_a_new_token_is_shown_once_and_only_its_hash_is_stored(dash: Dashboard) -> None:
    """Post/redirect/get (issue 34 §7): the POST mints and redirects; the page it lands on
    shows the secret once; a reload shows it no more and mints nothing."""
    client = logged_in(dash.maria)
    before = ApiToken.objects.filter(user=_user(dash.maria.username)).count()
    created = client.post("/account/tokens/", {"label": "CI deploy"})
    assert created.status_code == 302
    assert created["Location"] == "/account/#new-token"
    response = client.get("/account/")
    assert response.status_code == 200
    html = response.content.decode()
    token = html.split("data-token", 1)[0].rsplit('value="', 1)[1].split('"', 1)[0]
    assert token.startswith("mwt_")
    stored = ApiToken.objects.get(user=_user(dash.maria.username), label="CI deploy")
    assert stored.label == "CI deploy"
    assert stored.token_hash == token_digest(token)
    assert token not in stored.token_hash
    # the secret authenticates as the person, and it is never shown again
    assert authenticate_bearer(token).caller.principal == f"user:{dash.maria.username}"
    reloaded = client.get("/account/")
    assert token not in reloaded.content.decode()
    assert 'id="new-token"' not in reloaded.content.decode()
    assert ApiToken.objects.filter(user=_user(dash.maria.username)).count() == before + 1
    assert "no-store" in response["Cache-Control"]


def test_a_token_needs_a_label(dash: Dashboard) -> None:
    before = ApiToken.objects.count()
    response = logged_in(dash.maria).post("/account/tokens/", {"label": ""})
    assert response.status_code == 400
    assert ApiToken.objects.count() == before


def test_revoking_a_token_stops_it_and_another_persons_token_is_404(dash: Dashboard) -> None:
    mine = api_token_create(username=dash.maria.username, label="mine")
    theirs = api_token_create(username=dash.nina.username, label="theirs")
    client = logged_in(dash.maria)
    their_row = ApiToken.objects.get(token_hash=token_digest(theirs))
    assert client.post(f"/account/tokens/{their_row.pk}/revoke/").status_code == 404
    assert client.get(f"/account/tokens/{their_row.pk}/revoke/").status_code == 404
    assert ApiToken.objects.filter(pk=their_row.pk).exists()
    my_row = ApiToken.objects.get(token_hash=token_digest(mine))
    # asked first, on a page of its own: neither opening it nor a POST without confirm revokes
    asked = client.get(f"/account/tokens/{my_row.pk}/revoke/")
    assert asked.status_code == 200
    assert "Revoke the token “mine”?" in asked.content.decode()
    assert client.post(f"/account/tokens/{my_row.pk}/revoke/").status_code == 200
    assert ApiToken.objects.filter(pk=my_row.pk).exists()
    response = client.post(f"/account/tokens/{my_row.pk}/revoke/", {"confirm": "on"}, follow=True)
    assert response.status_code == 200
    assert "was revoked" in response.content.decode()
    assert not ApiToken.objects.filter(pk=my_row.pk).exists()
    with pytest.raises(ProtocolError):
        authenticate_bearer(mine)


def test_changes_need_the_csrf_token(dash: Dashboard) -> None:
    api_token_create(username=dash.maria.username, label="mine")
    client = Client(enforce_csrf_checks=True)
    client.force_login(_user(dash.maria.username))
    row = ApiToken.objects.get(label="mine")
    before = ApiToken.objects.count()
    assert client.post("/account/tokens/", {"label": "x"}).status_code == 403
    assert client.post(f"/account/tokens/{row.pk}/revoke/").status_code == 403
    assert client.post("/account/sessions/end-others/").status_code == 403
    assert client.post("/account/password/", {}).status_code == 403
    assert ApiToken.objects.count() == before


def test_password_change_keeps_this_session_and_ends_the_others(dash: Dashboard) -> None:
    here, elsewhere = Client(), Client()
    assert password_login(here, dash.maria.username, PASSWORD)
    assert password_login(elsewhere, dash.maria.username, PASSWORD)
    wrong = here.post(
        "/account/password/",
        {"old_password": "nope", "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD},
    )
    assert wrong.status_code == 400
    assert "alert" in wrong.content.decode()
    response = here.post(
        "/account/password/",
        {"old_password": PASSWORD, "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD},
        follow=True,
    )
    assert response.status_code == 200
    assert "Your password was changed" in response.content.decode()
    assert here.get("/account/").status_code == 200
    assert elsewhere.get("/account/").status_code == 302  # the old hash no longer matches
    assert password_login(Client(), dash.maria.username, NEW_PASSWORD)


def test_sessions_listed_with_the_current_one_marked_and_others_signed_out(
    dash: Dashboard,
) -> None:
    here, elsewhere, nina = Client(), Client(), Client()
    assert password_login(here, dash.maria.username, PASSWORD)
    assert password_login(elsewhere, dash.maria.username, PASSWORD)
    assert password_login(nina, dash.nina.username, PASSWORD)
    html = here.get("/account/").content.decode()
    sessions = text(element(html, "id", "sessions"))
    assert "this browser" in sessions
    assert sessions.count("expires 20") == 2  # maria's two, not nina's
    response = here.post("/account/sessions/end-others/", follow=True)
    assert "Signed out 1 other session." in response.content.decode()
    assert elsewhere.get("/account/").status_code == 302
    assert here.get("/account/").status_code == 200
    assert nina.get("/account/").status_code == 200  # another person's session is untouched
    assert Session.objects.count() == 2
