"""The OpenAPI document, browsable (issue 16 §6): ``/api/v1/docs`` renders Swagger UI in
Chromium from assets the app serves itself — no request leaves the server's origin.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, Request, expect

from tests.e2e.screens import snap
from tests.live_server import LiveServer

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_the_api_docs_render_the_openapi_document_from_the_apps_own_assets(
    live_asgi_server: LiveServer, page: Page
) -> None:
    origin = urlsplit(live_asgi_server.url).netloc
    elsewhere: list[str] = []

    def note(request: Request) -> None:
        if urlsplit(request.url).netloc not in {origin, ""}:
            elsewhere.append(request.url)

    page.on("request", note)
    page.goto(f"{live_asgi_server.url}/api/v1/docs")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text(
        "MissionWeave Group Authority API"
    )
    commands = page.locator(".opblock-summary-path", has_text="/api/v1/groups/{group}/commands")
    expect(commands.first).to_be_visible()
    commands.first.click()  # an operation opens with its parameters and responses
    expect(page.locator(".opblock-body").first).to_be_visible()
    snap(page, "api-docs")
    assert elsewhere == [], f"the docs fetched from other origins: {elsewhere}"
