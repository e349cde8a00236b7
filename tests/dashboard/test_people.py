"""The shared people-facing helpers (``templatetags/people.py``): names, local times and the
collapsed technical details every screen uses (issue 34 §6)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.template import Context, Template
from django.test.utils import CaptureQueriesContext

from apps.dashboard import names
from apps.dashboard.names import _book
from tests.factories import World

pytestmark = pytest.mark.django_db


def render(source: str, **context: object) -> str:
    return Template("{% load people %}" + source).render(Context(context))


def test_a_person_is_shown_by_full_name_or_username(world: World) -> None:
    get_user_model().objects.filter(username="olga").update(first_name="Olga", last_name="Berg")
    assert render("{{ p|display_name }}", p="user:olga") == "Olga Berg"
    assert render("{{ p|display_name }}", p="user:alice") == "alice"


def test_an_agent_is_shown_by_its_cards_name_and_the_authority_in_words(world: World) -> None:
    assert render("{{ p|display_name }}", p=world.w1.principal) == "w1"  # the factory card's name
    assert render("{{ p|display_name }}", p="authority") == "the authority"
    assert render("{{ p|display_name }}", p="user:nobody-here") == "nobody-here"


def test_a_page_looks_names_up_once_per_kind_however_many_rows(world: World) -> None:
    principals = ["user:alice", "user:olga", world.w1.principal, world.w2.principal] * 25
    token = _book.set({})
    try:
        with CaptureQueriesContext(connection) as queries:
            names.prime(principals)
            shown = render("{% for p in ps %}{{ p|display_name }};{% endfor %}", ps=principals)
        assert len(queries) == 2  # the users, the agents' cards
        assert "user:" not in shown
        assert "agent:" not in shown
    finally:
        _book.reset(token)


def test_local_time_keeps_utc_on_hover_and_as_the_text_without_scripts() -> None:
    moment = datetime(2026, 11, 30, 12, 16, 28, 123456, tzinfo=UTC)
    html = render("{% local_time m %}", m=moment)
    assert html == (
        '<time datetime="2026-11-30T12:16:28.123456Z" title="2026-11-30 12:16:28 UTC"'
        ' data-local-time="datetime">2026-11-30 12:16 UTC</time>'
    )
    assert render("{% local_time m %}", m="2026-11-30T12:16:28.123456Z") == html
    assert render('{% local_time m "date" %}', m=moment).endswith(">2026-11-30</time>")
    assert render("{% local_time m %}", m=None) == ""


def test_technical_details_are_collapsed_and_absent_when_empty() -> None:
    html = Template(
        '{% include "dashboard/partials/technical-details.html" with code=c requirement=r %}'
    ).render(Context({"c": "CHECKS_PENDING", "r": "R13.2-03"}))
    assert '<details class="technical-details">' in html
    assert " open" not in html
    assert "CHECKS_PENDING" in html
    assert "R13.2-03" in html
    assert (
        Template('{% include "dashboard/partials/technical-details.html" %}')
        .render(Context({}))
        .strip()
        == ""
    )
