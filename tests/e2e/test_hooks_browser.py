"""The hooks page in Chromium against the real server with a Celery worker (issue 36 §2): a
group admin who is not staff opens "Chat and webhooks" from the group page, adds a webhook
pointing at a real HTTP server process, copies its signing secret (shown once), sends a test
message, and the receiver gets it signed with that secret; the hook's deliveries page shows
it delivered. Every screen is shot under ``var/screenshots/hooks-*``, checked with axe-core,
at 390 px and for Content-Security-Policy violations.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from playwright.sync_api import Page, expect

from apps.notifications import hook_signing
from tests.celery_processes import run_celery
from tests.e2e.screens import check_screen
from tests.e2e.test_dashboard_browser import log_in, with_password
from tests.factories import World, build_world, grant, human
from tests.live_server import LiveServer, session_server
from tests.notifications.hook_receiver import Receiver, receiver

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def stack(
    django_db_setup: None, tmp_path_factory: pytest.TempPathFactory, worker_id: str
) -> Iterator[LiveServer]:
    """uvicorn and one Celery worker, sharing the queue the server's hints use."""
    queue = f"mwp-test-{worker_id}-{uuid.uuid4().hex[:8]}"
    env = {"MWP_CELERY_QUEUE": queue, "MWP_PUBLIC_URL": "http://mw.example.test"}
    database_name = connection.settings_dict["NAME"]
    state_dir = tmp_path_factory.mktemp("celery")
    with (
        run_celery(database_name=database_name, queue=queue, state_dir=state_dir, extra_env=env),
        session_server(worker_id, server="uvicorn", extra_env=env) as server,
    ):
        yield server


@pytest.fixture
def world(transactional_db: None) -> World:
    """Committed before the browser starts: adam is the group's admin, not staff."""
    world = build_world()
    adam = with_password(human("adam"))
    grant(world.alice, world.group, adam, "admin")
    get_user_model().objects.filter(username="adam").update(first_name="Adam", last_name="Admin")
    return world


@pytest.fixture
def webhook(tmp_path: Path) -> Iterator[Receiver]:
    with receiver(tmp_path / "received") as running:
        yield running


def test_a_group_admin_adds_a_webhook_and_its_test_message_arrives_signed(
    world: World, stack: LiveServer, webhook: Receiver, page: Page
) -> None:
    server = stack
    log_in(page, server, "adam")
    page.goto(f"{server.url}/groups/{world.group}/")
    page.get_by_role("link", name="Chat and webhooks").click()
    expect(page.get_by_role("heading", name=f"Chat and webhooks of {world.group}")).to_be_visible()
    check_screen(page, "hooks-01-empty")

    form = page.locator(".hooks-add")
    form.get_by_label("Name", exact=True).fill("Ops receiver")
    form.get_by_label("Webhook (a signed JSON POST to your URL)").check()
    form.get_by_label("URL", exact=True).fill("ftp://not-a-webhook.example.org/")
    form.get_by_role("button", name="Add the hook").click()
    expect(form.locator(".field-error")).to_contain_text("starts with https://")
    expect(form.get_by_label("Name", exact=True)).to_have_value("Ops receiver")  # kept
    check_screen(page, "hooks-02-refused")

    form.get_by_label("URL", exact=True).fill(webhook.url)
    form.get_by_role("button", name="Add the hook").click()
    expect(page.locator("#flash")).to_contain_text("Added the hook “Ops receiver”.")
    row = page.locator('li[data-hook="Ops receiver"]')
    expect(row).to_contain_text("Webhook (http://127.0.0.1:")
    expect(row).to_contain_text("shown only now")
    secret = row.get_by_label("Signing secret of Ops receiver").input_value()
    assert secret.startswith("mwhook_")
    check_screen(page, "hooks-03-added")

    row.get_by_role("button", name="Send a test message to Ops receiver").click()
    expect(page.get_by_role("heading", name="Deliveries of Ops receiver")).to_be_visible()
    expect(page.locator("#flash")).to_contain_text("A test message is on its way")

    (request,) = webhook.wait_for(1, timeout=30)
    assert hook_signing.verify(
        secret,
        request.header("X-MissionWeave-Timestamp"),
        request.body,
        request.header("X-MissionWeave-Signature"),
    )
    assert request.header("X-MissionWeave-Event") == "test"
    assert request.json()["title"] == "Test message for “Ops receiver”"
    assert "Adam Admin sent this test" in request.json()["body"]

    for _ in range(50):  # the worker marks it delivered just after the receiver's 200
        page.reload()
        if page.locator('.deliveries__row[data-status="sent"]').count():
            break
        page.wait_for_timeout(200)
    delivered = page.locator('.deliveries__row[data-status="sent"]')
    expect(delivered).to_contain_text("Delivered")
    expect(delivered).to_contain_text("1 attempt")
    expect(delivered).to_contain_text("accepted after")
    check_screen(page, "hooks-04-delivered")

    page.goto(f"{server.url}/groups/{world.group}/hooks/")
    expect(page.locator('li[data-hook="Ops receiver"]')).not_to_contain_text("shown only now")
    expect(page.locator("body")).not_to_contain_text(secret)
    expect(page.locator('li[data-hook="Ops receiver"]')).to_contain_text("Last delivered")
