"""The People screens of a group (issue 37 §3): every person of the group as a card — roles,
what waits on them now, their last decision — and one person's page with what waits on them
and the decisions they took, paged through the log.

Members only, like every group page (``access.access_membership``: 404 otherwise); a person
who is not an active member of this group is 404 under their URL, and so is an agent (its
page is the Agents screen). Read-only: nothing here writes. The cards follow the group's log
(``static/dashboard/people-page.js``: a WorkItem, approval, review, mission or membership event
re-fetches the cards' section).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import URLPattern, path, reverse

from apps.registry.models import Membership
from missionweave.protocol.identifiers import USERNAME_PATTERN

from . import card_pages, names, people, selectors, timeline_reads
from .access import access_membership


def _shown(cards: list[people.PersonCardView]) -> None:
    """Name every principal the cards show, one query per kind."""
    names.prime(
        [card.principal for card in cards]
        + [wait.asked_by for card in cards for wait in card.waiting if wait.asked_by]
    )


def _stream(membership: Membership, head: int) -> dict[str, Any]:
    return card_pages.live_stream(membership, head, people.LIVE_FAMILIES)


def _people_context(membership: Membership) -> dict[str, Any]:
    cards = people.cards(membership.group_id)
    _shown(cards)
    refresh_url = reverse("dashboard:people-section", args=[membership.group_id])
    return card_pages.cards_context(membership, cards, refresh_url)


@login_required
def people_page(request: HttpRequest, group: str) -> HttpResponse:
    """Every person of the group, as a card."""
    membership = access_membership(request, group)
    head = selectors.timeline_head(group)  # before the projections: see views.group_detail
    context = _people_context(membership)
    context["stream"] = _stream(membership, head)
    return render(request, "dashboard/people/page.html", context)


@login_required
def people_section(request: HttpRequest, group: str) -> HttpResponse:
    """The cards alone, for the page to swap in when events arrive."""
    membership = access_membership(request, group)
    return render(request, "dashboard/people/cards.html", _people_context(membership))


def _card_context(request: HttpRequest, group: str, person: str) -> dict[str, Any]:
    membership = access_membership(request, group)
    if not USERNAME_PATTERN.match(person):
        raise Http404("no such person")
    cards = people.cards(group, only=f"user:{person}")
    if not cards:
        raise Http404("no such person in this group")
    _shown(cards)
    refresh_url = reverse("dashboard:person-section", args=[group, person])
    return card_pages.cards_context(membership, cards, refresh_url, single=True)


@login_required
def person_page(request: HttpRequest, group: str, person: str) -> HttpResponse:
    """One person: what waits on them now, and the decisions they took, newest first."""
    head = selectors.timeline_head(group)
    context = _card_context(request, group, person)
    card: people.PersonCardView = context["card"]
    filters = people.read_paging(group, card.principal, request.GET)
    page = None
    decided: list[people.Decided] = []
    if not (filters.errors.get("before") or filters.errors.get("after")):
        page, decided = people.decided_by(group, filters)
    context.update(
        page=page,
        decided=decided,
        paging_error=filters.errors.get("before") or filters.errors.get("after") or "",
        scan_limit=timeline_reads.SCAN_LIMIT,
        timeline_url=reverse("dashboard:timeline", args=[group])
        + "?"
        + urlencode({"who": card.principal}),
        stream=_stream(context["membership"], head),
    )
    return render(request, "dashboard/people/person.html", context)


@login_required
def person_section(request: HttpRequest, group: str, person: str) -> HttpResponse:
    """One person's card alone, for live refreshes."""
    return render(request, "dashboard/people/cards.html", _card_context(request, group, person))


urlpatterns: list[URLPattern] = [
    path("groups/<str:group>/people/", people_page, name="people"),
    path("groups/<str:group>/live/people/", people_section, name="people-section"),
    path("groups/<str:group>/people/<str:person>/", person_page, name="person"),
    path("groups/<str:group>/live/people/<str:person>/", person_section, name="person-section"),
]
