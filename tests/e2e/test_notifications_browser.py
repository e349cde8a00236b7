"""Nobody waits unseen, in Chromium against real parts (issue 36 "Must hold"; R10.2-06):
uvicorn serves the product, a real Celery worker with beat produces the notifications and
sends their email to a real SMTP server process (aiosmtpd, ``tests/notifications/smtp_sink``).

- Olivia approves one of two in her browser; Omar, whose inbox is not open, is emailed and
  told in the app within 5 s: the bell of the page he has open on another screen counts up
  without a reload, and the notification's link opens the approval page (and marks it read).
- Olga turned "Execution approval needed" off on her notification settings page, in her
  browser: she gets nothing of it, neither a row nor an email.
- Olivia's "Ask for approval from… Omar" reaches Omar first: his bell, the top of his
  notifications page, and the first section of his inbox; his own approval then reads what
  asked him for it.

The beat's catch-up runs every 30 s here, so what arrives within 5 s came by the hints after
commit. Every screen is shot under ``var/screenshots/notifications-*``, checked with axe-core,
at 390 px and for Content-Security-Policy violations.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection
from django.utils import timezone
from playwright.sync_api import Browser, BrowserContext, Locator, Page, expect

from apps.ledger.models import GroupLog
from apps.notifications.kinds import Kind
from apps.notifications.models import Notification, NotificationCursor
from missionweave.celery import app
from tests.artifacts.servers import server_env
from tests.celery_processes import CeleryProcesses, run_celery
from tests.dashboard import workflows as wf
from tests.e2e.screens import check_screen, watch_csp
from tests.factories import HumanPersona, World, build_world, grant, human, now_text
from tests.live_server import LiveServer, in_plain_thread, session_server
from tests.notifications.mailbox import Mailbox, smtp_server

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct horse battery staple"
#: issue 36 "Must hold": the email and the in-app notification within 5 s
TOLD_WITHIN_S = 5.0
#: the beat's catch-up; slower than TOLD_WITHIN_S, so only the hints can meet it
CATCH_UP_S = "30"


@dataclass
class Stack:
    server: LiveServer
    mailbox: Mailbox
    celery: CeleryProcesses


@dataclass
class Owners:
    world: World
    olivia: HumanPersona
    omar: HumanPersona
    mission: str


def email_of(username: str) -> str:
    return f"{username}@example.test"


def _name(username: str, first: str, last: str) -> None:
    user = get_user_model().objects.get(username=username)
    user.set_password(PASSWORD)
    user.first_name, user.last_name, user.email = first, last, email_of(username)
    user.save(update_fields=["password", "first_name", "last_name", "email"])


@pytest.fixture(scope="module")
def stack(
    django_db_setup: None, tmp_path_factory: pytest.TempPathFactory, worker_id: str
) -> Iterator[Stack]:
    """uvicorn, a Celery worker with beat on the queue the server's hints use and on the
    server's channel prefix (so its bell hints reach the server's sockets), and the SMTP
    server the worker sends to. One set for the module (starting them takes ~20 s)."""
    queue = f"mwp-test-{worker_id}-{uuid.uuid4().hex[:8]}"
    env = {**server_env(Path(settings.MWP_ARTIFACT_DIR)), "MWP_CELERY_QUEUE": queue}
    database_name = connection.settings_dict["NAME"]
    with (
        smtp_server(tmp_path_factory.mktemp("mail")) as mailbox,
        session_server(worker_id, server="uvicorn", extra_env=env) as server,
        run_celery(
            database_name=database_name,
            queue=queue,
            state_dir=tmp_path_factory.mktemp("celery"),
            channel_prefix=server.channel_prefix,
            extra_env={
                "EMAIL_URL": mailbox.url,
                "MWP_PUBLIC_URL": server.url,
                "MWP_NOTIFY_INTERVAL_S": CATCH_UP_S,
            },
        ) as celery,
    ):
        yield Stack(server, mailbox, celery)


@pytest.fixture
def hints_to_the_worker(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hints this test process sends after commit go to the stack's worker."""
    monkeypatch.setitem(app.conf, "task_default_queue", stack.celery.queue)


def caught_up(group: str, timeout: float = 40.0) -> None:
    """Wait until the producer has examined the group's log to its head."""
    deadline = time.monotonic() + timeout
    while True:
        head = GroupLog.objects.get(group_id=group).head_sequence
        cursor = NotificationCursor.objects.filter(group_id=group).first()
        if cursor is not None and cursor.sequence >= head:
            return
        assert time.monotonic() < deadline, f"the producer is behind in {group}"
        time.sleep(0.1)


@pytest.fixture
def owners(transactional_db: None, stack: Stack, hints_to_the_worker: None) -> Owners:
    """Committed before the browsers start: olga (of the world), Olivia and Omar are the
    group's mission owners, each with an email address; a mission by the coordinator agent.
    What their memberships told them is produced and then read, so each bell starts at 0."""
    world = build_world()
    olivia = human("olivia")
    omar = human("omar")
    for persona in (olivia, omar):
        grant(world.alice, world.group, persona, "mission_owner")
    _name("olga", "Olga", "Ortiz")
    _name("olivia", "Olivia", "Ortega")
    _name("omar", "Omar", "Okafor")
    mission = wf.mission(world)
    caught_up(world.group)
    Notification.objects.update(read_at=timezone.now())
    return Owners(world, olivia, omar, mission)


@pytest.fixture
def contexts(browser: Browser) -> Iterator[list[BrowserContext]]:
    opened: list[BrowserContext] = []
    yield opened
    for context in opened:
        context.close()


def signed_in(
    browser: Browser, contexts: list[BrowserContext], server: LiveServer, username: str
) -> Page:
    """A person's own browser (a context of their own, so their own session)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(10_000)
    watch_csp(context)
    contexts.append(context)
    page = context.new_page()
    page.goto(f"{server.url}/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(f"{server.url}/")
    return page


def gated_item(owners: Owners, goal: str) -> str:
    """A WorkItem needing two mission owners' approval, authorised by the coordinator agent
    and accepted by w2 (committed from a plain thread, so its hints go out as in production)."""
    contract = wf.gated_contract(2, goal=goal, deadline=now_text(86_400))
    return in_plain_thread(wf.queued, owners.world, owners.mission, contract=contract)


def emailed(mailbox: Mailbox, username: str, subject: str, *, timeout: float) -> list[EmailMessage]:
    """The emails to ``username`` whose subject holds ``subject``, once one has arrived (or
    none, after ``timeout`` seconds)."""
    wanted = "".join(subject.split())  # a long subject is folded: compare without spaces
    deadline = time.monotonic() + timeout
    while True:
        mails = mailbox.to(email_of(username))
        found = [m for m in mails if wanted in "".join(str(m["Subject"]).split())]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def bell(page: Page) -> Locator:
    return page.locator("[data-bell]")


def expect_bell(page: Page, count: int, *, timeout: float = 10_000) -> None:
    label = f"{count} unread notification{'' if count == 1 else 's'}"
    expect(bell(page)).to_have_attribute("aria-label", label, timeout=timeout)
    expect(bell(page).locator("[data-bell-count]")).to_have_text(str(count))


def test_omar_is_told_within_seconds_and_olga_who_opted_out_gets_nothing(
    owners: Owners, stack: Stack, browser: Browser, contexts: list[BrowserContext]
) -> None:
    """R10.2-06, issue 36 §1-§3: Olga turns "Execution approval needed" off in her browser;
    the gated item is accepted and Omar's bell, on his account page, counts 1 live; Olivia
    approves one of two; within 5 s Omar is emailed (a real SMTP server) and his bell counts
    2 without a reload; its newest notification opens the approval page and is read after;
    Olga has no row and no email of that kind."""
    server, mailbox, world = stack.server, stack.mailbox, owners.world
    goal = f"Summarise the board minutes {uuid.uuid4().hex[:6]}"

    olga = signed_in(browser, contexts, server, "olga")
    olga.goto(f"{server.url}/notifications/settings/")
    email = olga.get_by_role("group", name="Execution approval needed: email")
    email.get_by_label("Off").check()
    olga.get_by_label("Execution approval needed: Show").uncheck()
    olga.get_by_role("button", name="Save").click()
    expect(olga.locator("#flash")).to_contain_text("Your notification settings are saved.")
    check_screen(olga, "notifications-01-olga-opts-out")

    omar = signed_in(browser, contexts, server, "omar")
    omar.goto(f"{server.url}/account/")  # another screen than his inbox
    expect(bell(omar)).to_have_attribute("aria-label", "Notifications: none unread")
    expect(bell(omar).locator("[data-bell-count]")).to_be_hidden()
    expect(bell(omar)).to_have_attribute("data-live", "true")

    item = gated_item(owners, goal)
    expect_bell(omar, 1)  # "Approve the execution of …", live
    approval = f"{server.url}/groups/{world.group}/work-items/{item}/approval/"

    olivia = signed_in(browser, contexts, server, "olivia")
    olivia.goto(approval)
    olivia.get_by_label("Comment on approving (optional)").fill("Fine by me.")
    approved_at = time.monotonic()  # the 5 s count from her click
    olivia.get_by_role("button", name="Approve revision 1").click()
    expect(olivia.locator('[data-field="quorum"]')).to_contain_text("1 of 2")

    def left_ms() -> float:
        return max(100.0, (TOLD_WITHIN_S - (time.monotonic() - approved_at)) * 1000)

    expect_bell(omar, 2, timeout=left_ms())
    bell_in = time.monotonic() - approved_at
    still = f"Olivia Ortega approved “{goal}”: it still needs you"
    mails = emailed(mailbox, "omar", still, timeout=left_ms() / 1000)
    told_in = time.monotonic() - approved_at
    assert mails, f"no email to omar within {TOLD_WITHIN_S} s:\n{stack.celery.log()}"
    assert bell_in <= TOLD_WITHIN_S, (bell_in, told_in)
    assert told_in <= TOLD_WITHIN_S, (bell_in, told_in)
    message = mails[0]
    assert str(message["Subject"]) == f"[MissionWeave] {still}"
    text = message.get_body(preferencelist=("plain",)).get_content()
    assert approval in text
    check_screen(omar, "notifications-02-omar-bell-counts-live")

    # the email's link opens the approval page too (in a tab of his own browser)
    from_email = omar.context.new_page()
    from_email.goto(next(w for w in text.split() if w.startswith(approval)))
    expect(from_email).to_have_url(approval)
    expect(from_email.locator('[data-field="quorum"]')).to_contain_text("1 of 2")
    from_email.close()

    bell(omar).click()
    expect(omar).to_have_url(f"{server.url}/notifications/")
    newest = omar.locator("li.notification").first
    expect(newest).to_contain_text(still)
    expect(newest).to_contain_text("1 of 2 approvals given")
    expect(newest).to_have_class("notification notification--unread")
    expect(omar.locator("li.notification--unread")).to_have_count(2)
    check_screen(omar, "notifications-03-omar-notifications-page")

    newest.get_by_role("link", name=still).click()
    expect(omar).to_have_url(approval)
    expect(omar.locator('[data-field="quorum"]')).to_contain_text("1 of 2")
    expect_bell(omar, 1)
    check_screen(omar, "notifications-04-omar-opens-the-approval-page")

    # Olga opted out of the kind: no row, no email, though she may approve it.
    assert not in_plain_thread(
        Notification.objects.filter(user__username="olga", kind=Kind.APPROVAL_NEEDED).exists
    )
    time.sleep(1.0)  # anything still on its way to her would land by now
    to_olga = mailbox.to(email_of("olga"))
    assert not [m for m in to_olga if goal in str(m["Subject"])], [m["Subject"] for m in to_olga]
    olga.goto(f"{server.url}/notifications/")
    expect(olga.locator("li.notification", has_text=goal)).to_have_count(0)
    expect(bell(olga)).to_have_attribute("aria-label", "Notifications: none unread")

    # Mark all as read, from the page; the bell of his other tab follows.
    omar.goto(f"{server.url}/notifications/")
    other_tab = omar.context.new_page()
    other_tab.goto(f"{server.url}/groups/")
    expect_bell(other_tab, 1)
    omar.get_by_role("button", name="Mark all as read").click()
    expect(omar.locator("#flash")).to_contain_text("Marked 1 notification as read.")
    expect(omar.locator("li.notification--unread")).to_have_count(0)
    expect(bell(other_tab)).to_have_attribute("aria-label", "Notifications: none unread")
    check_screen(omar, "notifications-05-all-read")


def test_asking_omar_for_approval_reaches_him_first(
    owners: Owners, stack: Stack, browser: Browser, contexts: list[BrowserContext]
) -> None:
    """Issue 36 §4: Olivia asks Omar for approval by name on the approval page; Omar's bell
    counts it live, it is first on his notifications page and first in his inbox ("Asked of
    you"), and he is emailed. Once he approves, the request he never opened is read too:
    his bell shows none unread, live."""
    server, mailbox, world = stack.server, stack.mailbox, owners.world
    goal = f"Check the supplier contracts {uuid.uuid4().hex[:6]}"
    omar = signed_in(browser, contexts, server, "omar")
    omar.goto(f"{server.url}/groups/")
    item = gated_item(owners, goal)
    expect_bell(omar, 1)  # asked to approve, as every mission owner is

    olivia = signed_in(browser, contexts, server, "olivia")
    olivia.goto(f"{server.url}/groups/{world.group}/work-items/{item}/approval/")
    form = olivia.locator("form.ask-form")
    form.get_by_label("Omar Okafor").check()
    form.get_by_label("A short note (optional)").fill("The board meets at noon.")
    form.get_by_role("button", name="Ask").click()
    expect(olivia.locator("#flash")).to_contain_text("Asked Omar Okafor for approval")
    asked_at = time.monotonic()

    expect_bell(omar, 2, timeout=TOLD_WITHIN_S * 1000)
    asks = f"Olivia Ortega asks you for execution approval of “{goal}”"
    left = max(0.1, TOLD_WITHIN_S - (time.monotonic() - asked_at))
    assert emailed(mailbox, "omar", asks, timeout=left), stack.celery.log()

    omar.goto(f"{server.url}/notifications/")
    first = omar.locator("li.notification").first
    expect(first).to_contain_text(asks)
    expect(first).to_contain_text("The board meets at noon.")
    check_screen(omar, "notifications-06-asked-first")

    omar.goto(f"{server.url}/")
    expect(omar.locator("section.inbox-section").first).to_have_attribute("data-section", "asked")
    expect(omar.locator(f"#inbox-asked li.inbox-entry[data-work-item='{item}']")).to_be_visible()

    omar.goto(f"{server.url}/notifications/")
    omar.locator("li.notification").first.get_by_role("link", name=asks).click()
    expect(omar).to_have_url(f"{server.url}/groups/{world.group}/work-items/{item}/approval/")
    expect_bell(omar, 1)

    # He approves: what he did himself is read (``answered``), so the first request, never
    # opened, leaves his bell too, live.
    omar.get_by_role("button", name="Approve revision 1").click()
    expect(omar.locator('[data-field="quorum"]')).to_contain_text("1 of 2")
    expect(bell(omar)).to_have_attribute(
        "aria-label", "Notifications: none unread", timeout=TOLD_WITHIN_S * 1000
    )
    check_screen(omar, "notifications-07-his-own-approval-is-read")
