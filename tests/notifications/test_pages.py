"""The notifications page and the bell (issue 36 §2): a person sees only their own
notifications, newest first, unread ones marked; opening one marks it read and goes to its
screen, only ever within this site; "Mark all as read" marks only theirs; the bell in every
page's header says the unread count, in its badge and its accessible name."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from apps.notifications import bell
from apps.notifications.models import Notification
from tests.notifications.inbox_rows import group, person, told

pytestmark = pytest.mark.django_db


def signed_in(user: object) -> Client:
    client = Client()
    client.force_login(user)  # type: ignore[arg-type]
    return client


def test_the_page_lists_only_the_persons_own_notifications_newest_first() -> None:
    omar, olga = person("omar"), person("olga")
    group(name="Research desk")
    first = told(omar, "Approve the execution of “first”")
    second = told(omar, "Approve the execution of “second”")
    told(olga, "Olga's own news")
    told(omar, "Emailed only", in_app=False)
    Notification.objects.filter(pk=first.pk).update(read_at=first.created_at)

    page = signed_in(omar).get("/notifications/")

    assert page.status_code == 200
    assert page["Cache-Control"].startswith("max-age=0")
    html = page.content.decode()
    assert "Olga's own news" not in html
    assert "Emailed only" not in html
    assert html.index("“second”") < html.index("“first”")
    items = re.findall(r'<li class="(notification[^"]*)" data-notification="(\d+)"', html)
    assert items == [
        ("notification notification--unread", str(second.pk)),
        ("notification", str(first.pk)),
    ]
    assert html.count(">Unread</span>") == 1
    assert "In Research desk" in html
    assert f'href="/notifications/{second.pk}/open/"' in html
    assert 'href="/notifications/settings/"' in html
    assert "1 unread notification." in html
    assert "Mark all as read" in html


def test_the_page_is_paged() -> None:
    omar = person("omar")
    for number in range(25):
        told(omar, f"News number {number:02d}")
    client = signed_in(omar)
    first = client.get("/notifications/").content.decode()
    assert "News number 24" in first
    assert "News number 04" not in first
    assert "Page 1 of 2" in first
    second = client.get("/notifications/?page=2").content.decode()
    assert "News number 04" in second
    assert "News number 24" not in second


def test_opening_marks_read_and_goes_to_the_screen_of_the_site_only() -> None:
    omar, olga = person("omar"), person("olga")
    mine = told(omar, "Mine")
    client = signed_in(omar)

    opened = client.get(f"/notifications/{mine.pk}/open/")

    assert opened.status_code == 302
    assert opened["Location"] == "/groups/g-pages/work-items/w-1/approval/"
    mine.refresh_from_db()
    assert mine.read_at is not None
    read_at = mine.read_at
    assert client.post(f"/notifications/{mine.pk}/open/").status_code == 302
    mine.refresh_from_db()
    assert mine.read_at == read_at  # read once, when first opened

    theirs = told(olga, "Theirs")
    assert client.get(f"/notifications/{theirs.pk}/open/").status_code == 404
    theirs.refresh_from_db()
    assert theirs.read_at is None

    for outside in ("https://evil.example/", "//evil.example/x", "/\\evil.example", "javascript:x"):
        stray = told(omar, f"Stray {outside}", link=outside)
        answer = client.get(f"/notifications/{stray.pk}/open/")
        assert answer["Location"] == "/notifications/", outside


def test_mark_all_marks_only_the_persons_own_and_needs_a_post() -> None:
    omar, olga = person("omar"), person("olga")
    told(omar, "One")
    told(omar, "Two")
    theirs = told(olga, "Theirs")
    client = signed_in(omar)

    assert client.get("/notifications/read-all/").status_code == 405
    answer = client.post("/notifications/read-all/", follow=True)

    assert answer.redirect_chain == [("/notifications/", 302)]
    assert "Marked 2 notifications as read." in answer.content.decode()
    assert bell.unread_count(omar.pk) == 0
    assert bell.unread_count(olga.pk) == 1
    theirs.refresh_from_db()
    assert theirs.read_at is None
    again = client.post("/notifications/read-all/", follow=True).content.decode()
    assert "Nothing was unread." in again


def test_the_bell_in_the_header_says_the_unread_count() -> None:
    omar = person("omar")
    client = signed_in(omar)
    empty = client.get("/notifications/").content.decode()
    assert 'aria-label="Notifications: none unread"' in empty
    assert re.search(r"data-bell-count hidden>0<", empty)

    for number in range(3):
        told(omar, f"News {number}")
    told(omar, "Email only", in_app=False)
    page = client.get("/account/").content.decode()
    assert 'aria-label="3 unread notifications"' in page
    assert 'href="/notifications/"' in page
    assert re.search(r"data-bell-count>3<", page)
    assert "dashboard/bell.js" in page
    assert 'href="/notifications/settings/"' in page  # the account page links the settings


def test_the_bell_counts_and_labels() -> None:
    assert bell.label(0) == "Notifications: none unread"
    assert bell.label(1) == "1 unread notification"
    assert bell.label(7) == "7 unread notifications"
    assert bell.shown(99) == "99"
    assert bell.shown(100) == "99+"


def test_signed_out_the_page_asks_to_sign_in() -> None:
    answer = Client().get("/notifications/")
    assert answer.status_code == 302
    assert answer["Location"].startswith("/login/")
