"""The dashboard's Content-Security-Policy (``settings.SECURE_CSP``; docs/deploy.md,
"Headers"): every page, fragment and error page is sent with it, and nothing on them needs
more than it allows — no inline script, event handler, style element or attribute, or
``javascript:`` address, in what the pages render or in any template.

That the browser then refuses nothing is the e2e suite's: every screen it visits is checked
for violations (``tests.e2e.screens.check_screen``), with ``tests/e2e/test_headers_browser.py``
as the control that a violation is seen.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.test import Client
from django.urls import reverse
from django.utils.csp import build_policy

from apps.api.views.public import DOCS_CSP
from tests.dashboard.artifact_world import workshop

from .conftest import Dashboard, logged_in

DASHBOARD_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; "
    "form-action 'self'"
)
TEMPLATES = Path(django_settings.BASE_DIR) / "templates"
#: the attribute values a browser would follow or run
_URL_ATTRIBUTES = frozenset({"href", "src", "action", "formaction", "xlink:href"})
_DATA_TYPES = frozenset({"application/json"})


class _InlineParts(HTMLParser):
    """Every part of a page that a policy without ``'unsafe-inline'`` would refuse."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        # a data block (json_script's application/json) is never run, so no policy governs it
        if tag == "script" and not named.get("src") and named.get("type") not in _DATA_TYPES:
            self.found.append("an inline <script>")
        if tag == "style":
            self.found.append("a <style> element")
        for name, value in attrs:
            if name.startswith("on"):
                self.found.append(f"<{tag} {name}=…>")
            if name == "style":
                self.found.append(f"<{tag} style=…>")
            if name in _URL_ATTRIBUTES and re.match(r"\s*javascript:", value or "", re.I):
                self.found.append(f"<{tag} {name}=javascript:…>")

    handle_startendtag = handle_starttag


def inline_parts(html: str) -> list[str]:
    parser = _InlineParts()
    parser.feed(html)
    return parser.found


@pytest.fixture(autouse=True)
def own_store(settings: Any, tmp_path: Path) -> None:
    settings.MWP_ARTIFACT_STORAGE = "filesystem"
    settings.MWP_ARTIFACT_DIR = tmp_path / "artifacts"


def screens(dash: Dashboard) -> dict[str, str]:
    """Each kind of dashboard page, with the data it needs: maria observes a group with a
    mission, a started WorkItem and an artifact published in it."""
    shop = workshop(dash.world)
    digest = shop.publish(b"# Findings\n\nTwo incidents.\n", "text/markdown")
    group, mission, item = shop.group, shop.mission, shop.item
    return {
        "inbox": reverse("dashboard:inbox"),
        "inbox section": reverse("dashboard:inbox-section"),
        "groups": reverse("dashboard:groups"),
        "group": reverse("dashboard:group", args=[group]),
        "missions": reverse("dashboard:missions", args=[group]),
        "work items": reverse("dashboard:work-items", args=[group]),
        "mission": reverse("dashboard:mission", args=[group, mission]),
        "mission section": reverse("dashboard:mission-section", args=[group, mission]),
        "mission graph": reverse("dashboard:mission-graph", args=[group, mission]),
        "work item": reverse("dashboard:work-item", args=[group, item]),
        "work item section": reverse("dashboard:work-item-section", args=[group, item]),
        "approval queue": reverse("dashboard:approval-queue", args=[group]),
        "artifact": reverse("dashboard:artifact", args=[group, digest]),
        "reviews": reverse("dashboard:reviews"),
        "account": reverse("dashboard:account"),
    }


def test_the_policy_is_the_documented_one() -> None:
    """settings.SECURE_CSP, as sent when no template asked for a nonce."""
    assert build_policy(django_settings.SECURE_CSP) == DASHBOARD_CSP


def test_every_dashboard_page_is_sent_with_the_policy_and_needs_nothing_inline(
    dash: Dashboard,
) -> None:
    pages = screens(dash)
    maria, alice = logged_in(dash.maria), logged_in(dash.world.alice)
    # the members screen is its administrator's
    pages["members"] = reverse("dashboard:members", args=[dash.world.group])
    for name, url in pages.items():
        response = (alice if name == "members" else maria).get(url)
        assert response.status_code == 200, (name, response.status_code)
        assert response["Content-Security-Policy"] == DASHBOARD_CSP, name
        assert inline_parts(response.content.decode()) == [], name


@pytest.mark.parametrize("signed_in", [False, True], ids=["signed-out", "signed-in"])
def test_the_login_and_error_pages_are_sent_with_the_policy(
    dash: Dashboard, signed_in: bool
) -> None:
    client = logged_in(dash.maria) if signed_in else Client()
    pages = {"not found": ("/no-such-page/", 404)}
    if not signed_in:
        pages["login"] = (reverse("dashboard:login"), 200)
    for name, (url, status) in pages.items():
        response = client.get(url)
        assert response.status_code == status, name
        assert response["Content-Security-Policy"] == DASHBOARD_CSP, name
        assert inline_parts(response.content.decode()) == [], name


def test_no_template_has_an_inline_script_handler_or_style() -> None:
    """The source of every page: what a view renders tomorrow is held to the policy today."""
    found = {
        str(path.relative_to(TEMPLATES)): parts
        for path in sorted(TEMPLATES.rglob("*.html"))
        if (parts := inline_parts(path.read_text()))
    }
    # base.html's <style> is only ever filled by the header limit's 400 page, answered
    # ahead of Django (apps/api/header_limit.py), where no policy applies
    assert found == {"base.html": ["a <style> element"]}


def test_the_api_docs_page_has_its_own_narrow_exception(db: None) -> None:
    """Swagger UI styles itself inline; its script is a file (``?script``), not inline."""
    response = Client().get("/api/v1/docs")
    assert response.status_code == 200
    assert response["Content-Security-Policy"] == build_policy(DOCS_CSP)
    assert "script-src 'self';" in response["Content-Security-Policy"]
    assert [part for part in inline_parts(response.content.decode()) if "script" in part] == []
