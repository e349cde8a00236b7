"""Artifact pages in a real browser against a real server (issue 12 §3): every kind of preview
is screenshot, checked with axe-core and at 400 px, and the image preview really loads from
the raw route (an attachment under its closed CSP, which an ``<img>`` still shows).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

import pytest
from playwright.sync_api import Page, expect

from tests.dashboard.artifact_world import PNG, damage, workshop
from tests.e2e.screens import check_screen
from tests.e2e.test_dashboard_browser import log_in, with_password
from tests.factories import World, build_world, grant, human
from tests.live_server import LiveServer

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@dataclass
class Gallery:
    world: World
    #: screen name -> digest
    artifacts: dict[str, str]


def _markdown(tag: str) -> bytes:
    long_line = "a-very-long-unbroken-identifier-" * 12
    return (
        f"# Summary {tag}\n\nThree incidents in November; two are closed.\n\n"
        "| incident | state | owner |\n|---|---|---|\n| INC-1 | closed | ops |\n"
        "| INC-2 | closed | db |\n| INC-3 | open | net |\n\n"
        f"```\n{long_line}\n```\n\n[runbook](https://example.org/runbook) "
        "<script>alert(1)</script>\n"
    ).encode()


@pytest.fixture
def gallery(transactional_db: None) -> Gallery:
    """Committed before the browser starts, so the server process sees it. Unique bytes per
    run: the store is content-addressed and shared with the server."""
    world = build_world()
    maria = with_password(human("maria"))
    grant(world.alice, world.group, maria, "observer")
    shop = workshop(world)
    tag = secrets.token_hex(4)
    draft = shop.publish(f"# Summary {tag}\n\nThree incidents.\n".encode(), "text/markdown")
    wide = ",".join(f"column {n}" for n in range(14))
    rows = "".join(",".join(f"=cell {r}.{c}" for c in range(14)) + "\n" for r in range(230))
    corrupted = shop.publish(f"soon corrupted {tag}\n".encode())
    damage(corrupted)
    return Gallery(
        world,
        {
            "markdown-diff": shop.publish(_markdown(tag), "text/markdown", sources=(draft,)),
            "csv": shop.publish(f"{wide}\n{rows}".encode(), "text/csv"),
            "json": shop.publish(
                f'{{"run": "{tag}", "checks": [{{"id": "c1", "ok": true}}]}}'.encode(),
                "application/json",
            ),
            "image": shop.publish(PNG + tag.encode(), "image/png"),
            "binary": shop.publish(bytes(range(256)) + tag.encode(), "application/pdf"),
            "corrupted": corrupted,
        },
    )


def test_every_artifact_screen_is_accessible_and_fits_400px(
    gallery: Gallery, live_asgi_server: LiveServer, page: Page
) -> None:
    """issue 12: no serious or critical axe violation, no sideways scroll at 400 px; the
    diff opens from the keyboard; the image is drawn from the verified raw route."""
    server = live_asgi_server
    log_in(page, server, "maria")
    group = gallery.world.group
    for name, digest in gallery.artifacts.items():
        page.goto(f"{server.url}/groups/{group}/artifacts/{digest}/")
        expect(page.get_by_role("heading", level=1)).to_contain_text("Artifact")
        if name == "markdown-diff":
            summary = page.locator("details.preview-diff summary")
            summary.focus()
            page.keyboard.press("Enter")
            expect(page.locator('tr[data-change="added"]').first).to_be_visible()
        if name == "image":
            image = page.locator("img.preview-image")
            expect(image).to_be_visible()
            assert image.evaluate("i => i.complete && i.naturalWidth") == 1
        if name == "corrupted":
            expect(page.locator('[data-badge="corrupted"]')).to_be_visible()
        check_screen(page, f"artifact-{name}")
