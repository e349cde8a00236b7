"""What every e2e test does with a screen it visits: keep a full-page screenshot under
``var/screenshots/`` for anyone reviewing a change to look at, check it with axe-core, check
it at a phone's width, and check that the browser refused nothing under the page's
Content-Security-Policy.

Accessibility (issue 12): no axe-core violation of impact ``serious`` or ``critical`` on any
screen; ``moderate``/``minor`` ones are reported in the failure message of a serious one but
do not fail on their own. Narrow screens: at 390 px the body must not scroll sideways — wide
content (tables, graphs, previews) scrolls inside its own box.

Content-Security-Policy (docs/deploy.md, "Headers"): a violation is a script, style, image,
fetch or websocket the policy stopped, so a part of the screen that silently does not work.
Every browser context the tests open is watched (:func:`watch_csp`): the document's
``securitypolicyviolation`` events and Chromium's "Content Security Policy" console messages
are collected, and a screen with any fails.
"""

from __future__ import annotations

import re
from pathlib import Path
from weakref import WeakKeyDictionary

from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import BrowserContext, ConsoleMessage, Page

SCREENSHOTS = Path(__file__).resolve().parents[2] / "var" / "screenshots"
#: the impacts that fail a screen
BLOCKING_IMPACTS = frozenset({"serious", "critical"})
NARROW_WIDTH = 390

_axe = Axe()

#: what each watched browser context's pages reported, in order
_CSP_VIOLATIONS: WeakKeyDictionary[BrowserContext, list[str]] = WeakKeyDictionary()
#: run by Playwright in every document before the page's own scripts (so never itself
#: subject to the page's policy); reports each violation through the binding below
_REPORT_VIOLATIONS = """
document.addEventListener("securitypolicyviolation", (event) => {
  window.__mwpCspViolation(
    `${event.effectiveDirective} refused ${event.blockedURI || "an inline part"}` +
      ` on ${event.documentURI} (${event.sourceFile || "the document"}:${event.lineNumber})`
  );
});
"""


def snap(page: Page, name: str) -> Path:
    """A full-page screenshot of what ``page`` shows now, as ``var/screenshots/<name>.png``."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{re.sub(r'[^A-Za-z0-9_.-]+', '-', name)}.png"
    page.screenshot(path=path, full_page=True)
    return path


def accessibility_violations(page: Page) -> list[dict[str, object]]:
    """axe-core's serious and critical violations on the page as it is now."""
    results = _axe.run(page)
    return [
        violation
        for violation in results.response.get("violations", [])
        if violation.get("impact") in BLOCKING_IMPACTS
    ]


def _describe(violations: list[dict[str, object]]) -> str:
    lines = []
    for violation in violations:
        nodes = violation.get("nodes") or []
        targets = [str(node.get("target")) for node in nodes[:3]]  # type: ignore[union-attr]
        lines.append(
            f"{violation.get('impact')}: {violation.get('id')} — {violation.get('help')} "
            f"({len(nodes)} node(s), e.g. {', '.join(targets)})"
        )
    return "\n".join(lines)


def assert_accessible(page: Page) -> None:
    """No serious or critical axe-core violation on the screen (issue 12)."""
    violations = accessibility_violations(page)
    assert not violations, "axe-core found:\n" + _describe(violations)


def horizontal_overflow(page: Page) -> int:
    """How many CSS pixels the document is wider than the viewport (0: no sideways scroll)."""
    return int(
        page.evaluate(
            "Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)"
            " - document.documentElement.clientWidth"
        )
    )


def cut_off_controls(page: Page) -> list[str]:
    """Visible buttons, inputs and selects that do not fit inside the viewport's width (a
    button half off the screen is as bad as a page that scrolls sideways)."""
    return list(
        page.evaluate(
            """() => {
              const width = document.documentElement.clientWidth;
              const cut = [];
              for (const el of document.querySelectorAll("button, input, select, textarea")) {
                const box = el.getBoundingClientRect();
                if (!box.width || !box.height || el.type === "hidden") continue;
                if (box.left < -1 || box.right > width + 1) cut.push(el.outerHTML.slice(0, 120));
              }
              return cut;
            }"""
        )
    )


def check_narrow(page: Page, name: str) -> None:
    """At ``NARROW_WIDTH`` px the screen fits without sideways scrolling, and is shot so."""
    size = page.viewport_size or {"width": 1280, "height": 900}
    page.set_viewport_size({"width": NARROW_WIDTH, "height": size["height"]})
    try:
        page.wait_for_timeout(50)
        overflow = horizontal_overflow(page)
        snap(page, f"{name}-{NARROW_WIDTH}px")
        assert overflow <= 1, f"{name} scrolls sideways by {overflow} px at {NARROW_WIDTH} px"
        cut = cut_off_controls(page)
        assert not cut, f"{name} cuts off controls at {NARROW_WIDTH} px: {cut}"
    finally:
        page.set_viewport_size(size)


def watch_csp(context: BrowserContext) -> list[str]:
    """Collect every Content-Security-Policy violation in ``context``'s pages, from now on;
    the list it returns fills as they happen."""
    violations: list[str] = []

    def on_console(message: ConsoleMessage) -> None:
        if "Content Security Policy" in message.text:
            violations.append(message.text)

    context.expose_binding("__mwpCspViolation", lambda _source, text: violations.append(text))
    context.add_init_script(_REPORT_VIOLATIONS)
    context.on("console", on_console)
    _CSP_VIOLATIONS[context] = violations
    return violations


def csp_violations(page: Page) -> list[str]:
    """The violations ``page``'s context has reported so far."""
    violations = _CSP_VIOLATIONS.get(page.context)
    assert violations is not None, "the browser context is not watched: call watch_csp()"
    return violations


def assert_no_csp_violation(page: Page, name: str) -> None:
    """The browser refused nothing on ``page`` (nor before it, in the same context)."""
    violations = csp_violations(page)
    assert not violations, f"{name}: Content-Security-Policy violations:\n" + "\n".join(violations)


def check_screen(page: Page, name: str) -> None:
    """The four checks every visited screen gets: a screenshot, axe-core, 390 px, and no
    Content-Security-Policy violation."""
    snap(page, name)
    assert_accessible(page)
    check_narrow(page, name)
    assert_no_csp_violation(page, name)
