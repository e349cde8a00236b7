"""Error pages in the dashboard's look (issue 13 §6), while ``/api/`` keeps wire.md §8."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from tests.dashboard.conftest import Dashboard, logged_in

pytestmark = pytest.mark.django_db


def _styled(body: bytes, title: str) -> None:
    html = body.decode()
    assert "<!doctype html>" in html
    assert f'<h1 id="error-title">{title}</h1>' in html
    assert "favicon.svg" in html  # the site's own frame, navigation and icon


def test_a_get_to_a_forms_address_is_a_styled_405_with_its_allow_header(dash: Dashboard) -> None:
    world = dash.world
    response = logged_in(world.olga).get(f"/groups/{world.group}/missions/m-1/approve/")
    assert response.status_code == 405
    assert response["Allow"] == "POST"
    _styled(response.content, "Not this way")
    assert "it answers POST" in response.content.decode()


def test_a_malformed_query_is_a_styled_400_that_says_what_was_wrong(dash: Dashboard) -> None:
    world = dash.world
    response = logged_in(world.olga).get(f"/groups/{world.group}/?before=-3")
    assert response.status_code == 400
    _styled(response.content, "Bad request")
    assert "before is a positive integer" in response.content.decode()


def test_a_form_without_its_csrf_token_is_a_styled_403_that_says_what_to_do(
    dash: Dashboard,
) -> None:
    world = dash.world
    client = Client(enforce_csrf_checks=True)
    client.force_login(get_user_model().objects.get(username=world.olga.username))
    response = client.post(f"/groups/{world.group}/missions/m-1/approve/", {"comment": "x"})
    assert response.status_code == 403
    _styled(response.content, "The form had expired")
    assert "reload the page" in response.content.decode()


def test_an_unknown_page_is_the_styled_404(dash: Dashboard) -> None:
    response = logged_in(dash.world.olga).get("/no-such-page/")
    assert response.status_code == 404
    _styled(response.content, "Not found")


def test_api_errors_keep_the_wire_shape(dash: Dashboard) -> None:
    """wire§8: under /api/ an error is JSON, never a page."""
    response = Client().get("/api/v1/nowhere")
    assert response["Content-Type"].startswith("application/json")
    assert response.json()["error"]["code"] == "NOT_FOUND"


def test_the_favicon_is_served(dash: Dashboard) -> None:
    response = Client().get("/static/dashboard/favicon.svg")
    assert response.status_code == 200
