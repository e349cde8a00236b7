"""One-click unsubscribe (issue 36 §3, RFC 8058): the signed link names one person and one
kind; GET asks, POST turns that kind's email off; a forged or cut link changes nothing."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from apps.notifications import preferences
from apps.notifications.kinds import EmailMode, Kind
from apps.notifications.unsubscribe import make_token, read_token

pytestmark = pytest.mark.django_db


def test_the_link_turns_off_only_its_kind_and_a_forged_one_nothing() -> None:
    person = get_user_model().objects.create_user("omar", email="omar@example.test")
    token = make_token(person.pk, Kind.REVIEW_WAITING)
    assert read_token(token) == (person.pk, Kind.REVIEW_WAITING)
    client = Client(enforce_csrf_checks=True)
    assert client.get(f"/notifications/unsubscribe/{token}/").status_code == 200
    assert preferences.effective(person, Kind.REVIEW_WAITING).email == EmailMode.IMMEDIATE
    assert client.post(f"/notifications/unsubscribe/{token}/").status_code == 200
    found = preferences.effective_all(person)
    assert found[Kind.REVIEW_WAITING].email == EmailMode.OFF
    assert found[Kind.REVIEW_WAITING].in_app is True
    assert {k for k, p in found.items() if p.email == EmailMode.OFF} == {Kind.REVIEW_WAITING}
    forged = token[:-3] + ("aaa" if not token.endswith("aaa") else "bbb")
    assert client.post(f"/notifications/unsubscribe/{forged}/").status_code == 404


def test_the_settings_page_saves_each_kinds_choice() -> None:
    person = get_user_model().objects.create_user("olga", password="pw-olga-1234")
    client = Client()
    client.force_login(person)
    page = client.get("/notifications/settings/")
    assert page.status_code == 200
    assert "Execution approval needed" in page.content.decode()
    data = {f"{k.value}-email": "immediate" for k in Kind}
    data |= {f"{k.value}-in_app": "on" for k in Kind}
    data["sent_back-email"] = "daily_digest"
    del data["work_blocked-in_app"]
    data["work_blocked-email"] = "off"
    assert client.post("/notifications/settings/", data).status_code == 302
    found = preferences.effective_all(person)
    assert found[Kind.SENT_BACK].email == EmailMode.DAILY_DIGEST
    assert found[Kind.WORK_BLOCKED].off
    assert found[Kind.APPROVAL_NEEDED].email == EmailMode.IMMEDIATE
