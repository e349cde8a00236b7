"""What every e2e test does with a screen it visits: keep a full-page screenshot under
``var/screenshots/`` for anyone reviewing a change to look at, check it with axe-core, and
check it at a phone's width.

Accessibility (issue 12): no axe-core violation of impact ``serious`` or ``critical`` on any
screen; ``moderate``/``minor`` ones are reported in the failure message of a serious one but
do not fail on their own. Narrow screens: at 390 px the body must not scroll sideways — wide
content (tables, graphs, previews) scrolls inside its own box.
"""

from __future__ import annotations

import re
from pathlib import Path

from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Page

SCREENSHOTS = Path(__file__).resolve().parents[2] / "var" / "screenshots"
#: the impacts that fail a screen
BLOCKING_IMPACTS = frozenset({"serious", "critical"})
NARROW_WIDTH = 390

_axe = Axe()


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


def check_screen(page: Page, name: str) -> None:
    """The three checks every visited screen gets: a screenshot, axe-core, 390 px."""
    snap(page, name)
    assert_accessible(page)
    check_narrow(page, name)
