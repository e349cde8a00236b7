"""The security headers as Chromium obeys them (docs/deploy.md, "Headers").

- Raw artifact bytes opened in the browser are saved, never rendered as a page of ours: an
  HTML artifact with a script becomes a download named from its digest.
- The dashboard's Content-Security-Policy is enforced, and the watcher every e2e test relies
  on (``tests.e2e.screens.watch_csp``) sees what it refuses: a script or an image the page
  did not get from its own origin is refused and reported.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

import pytest
from django.conf import settings
from playwright.sync_api import Browser, Page, expect
from playwright.sync_api import Error as PlaywrightError

from tests.dashboard.artifact_world import workshop
from tests.e2e.screens import csp_violations, watch_csp
from tests.e2e.test_dashboard_browser import log_in, with_password
from tests.factories import build_world, grant, human
from tests.live_server import LiveServer

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@dataclass
class Hostile:
    group: str
    digest: str


@pytest.fixture
def hostile(transactional_db: None) -> Hostile:
    """An HTML artifact that would run a script if it were ever rendered on our origin;
    committed before the browser starts, so the server process sees it."""
    world = build_world()
    maria = with_password(human("maria"))
    grant(world.alice, world.group, maria, "observer")
    tag = secrets.token_hex(4)
    page = f"<!doctype html><title>{tag}</title><script>document.title = 'ran'</script>"
    digest = workshop(world).publish(page.encode(), "text/html")
    return Hostile(world.group, digest)


def test_opening_raw_bytes_saves_them_and_renders_nothing(
    hostile: Hostile, live_asgi_server: LiveServer, page: Page
) -> None:
    server = live_asgi_server
    log_in(page, server, "maria")
    artifact_page = f"{server.url}/groups/{hostile.group}/artifacts/{hostile.digest}/"
    page.goto(artifact_page)
    with (
        page.expect_download() as download,
        # a navigation that becomes a download ends no page load
        pytest.raises(PlaywrightError, match="Download is starting"),
    ):
        page.goto(f"{artifact_page}raw/")
    assert download.value.suggested_filename == (
        hostile.digest.removeprefix("sha256:")[:16] + ".html"
    )
    assert page.url == artifact_page  # the page stayed; nothing of the artifact ran here
    assert page.title() != "ran"


def test_the_policy_refuses_a_foreign_image_and_an_inserted_script_and_says_so(
    hostile: Hostile, live_asgi_server: LiveServer, page: Page
) -> None:
    """The control for every screen's "no violation" check: what the policy stops, the
    watcher reports."""
    server = live_asgi_server
    log_in(page, server, "maria")
    page.goto(f"{server.url}/groups/{hostile.group}/")
    expect(page.get_by_role("heading", level=1)).to_be_visible()
    violations = csp_violations(page)
    assert violations == []
    page.evaluate(
        """() => {
          const image = document.createElement("img");
          image.src = "http://example.invalid/pixel.png";
          document.body.append(image);
          const script = document.createElement("script");
          script.textContent = "window.inserted = true";
          document.body.append(script);
        }"""
    )
    refused = ""
    for _ in range(50):  # the reports arrive as events: wait up to 5 s for both
        refused = "\n".join(violations)
        if "img-src" in refused and "script-src" in refused:
            break
        page.wait_for_timeout(100)
    assert "img-src" in refused
    assert "script-src" in refused
    assert page.evaluate("() => window.inserted === undefined")
    violations.clear()  # seen on purpose: the page fixture must not fail the test for them


def test_the_bad_request_page_answered_ahead_of_django_keeps_its_styles_under_its_policy(
    live_asgi_server: LiveServer, browser: Browser
) -> None:
    """A browser whose headers pass the limit gets the styled "Bad request" page from
    ``apps/api/header_limit.py``, which sends the policy itself: its inline stylesheet,
    allowed by hash, applies, and nothing is refused."""
    context = browser.new_context(
        extra_http_headers={f"X-Field-{n}": "v" for n in range(settings.MWP_MAX_HEADER_FIELDS)}
    )
    violations = watch_csp(context)
    try:
        page = context.new_page()
        response = page.goto(f"{live_asgi_server.url}/")
        assert response is not None
        assert response.status == 400
        assert "default-src 'self'" in response.headers["content-security-policy"]
        expect(page.get_by_text("Bad request").first).to_be_visible()
        # the inline sheet applied (one the policy refused would be no sheet at all)
        assert page.evaluate("() => document.styleSheets.length") == 1
        page.wait_for_timeout(200)
        assert violations == []
    finally:
        context.close()
