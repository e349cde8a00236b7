"""End-to-end fixtures: the real server (``tests/live_server.py``) and Chromium.

Playwright's sync API runs an event loop in the test's thread, so Django refuses ORM calls
there (TOOLCHAIN.md gotcha 3). Rather than relax that check, database work happens before
the browser starts (request data fixtures before ``page``) or in a plain thread
(``tests.live_server.in_plain_thread``): with ``DJANGO_ALLOW_ASYNC_UNSAFE`` the ORM opened a
second connection under Playwright's context that nothing closed, the write path's
after-commit hint could not be sent, and the test database could not be dropped.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from tests.e2e.screens import SCREENSHOTS, csp_violations, watch_csp
from tests.live_server import LiveServer, in_plain_thread, live_asgi_server

__all__ = ["LiveServer", "browser", "in_plain_thread", "live_asgi_server", "page"]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


@pytest.fixture
def browser() -> Iterator[Browser]:
    """Headless Chromium for one test: a session-wide Playwright would keep its event loop
    running under every later test of this worker, e2e or not."""
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> object:
    """Remember each phase's report on the item, so ``page`` knows whether the test failed."""
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@pytest.fixture
def page(browser: Browser, request: pytest.FixtureRequest) -> Iterator[Page]:
    """A fresh browser context; a failed test leaves ``var/screenshots/failed-<test>.png``.
    A test that passed fails here still if the browser refused anything under a page's
    Content-Security-Policy at any time, also after its last checked screen."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(10_000)
    watch_csp(context)
    tab = context.new_page()
    violations: list[str] = []
    try:
        yield tab
        # taken before the context closes; asserted after, when the test itself passed
        violations = list(csp_violations(tab))
    finally:
        report = getattr(request.node, "report_call", None)
        if report is not None and report.failed:
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            tab.screenshot(path=SCREENSHOTS / f"failed-{request.node.name}.png", full_page=True)
        context.close()
    assert not violations, "Content-Security-Policy violations:\n" + "\n".join(violations)
