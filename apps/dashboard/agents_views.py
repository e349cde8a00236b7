"""The Agents screens of a group (issue 37 §3): every agent member as a card, and one agent's
page with the same card and its WorkItems across the group, paged.

Members only, like every group page (``access.access_membership``: 404 otherwise); an agent
that is not an active member of this group is 404 under its URL. Read-only: nothing here
writes. The cards follow the group's log (``static/dashboard/agents-page.js``: a WorkItem,
lease or membership event re-fetches the cards' section); Presence is soft state outside the
log (R11.1-11), so it is as fresh as the page's last refresh and says its own age.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import URLPattern, path, reverse

from apps.registry.models import Membership
from missionweave.protocol.identifiers import agent_principal, is_id

from . import agents, card_pages, names, selectors
from .access import access_membership

#: the event families that change a card (the page script asks again on these)
LIVE_FAMILIES = ("work", "lease", "membership", "mission")


def _shown(cards: list[agents.AgentCardView]) -> None:
    """Name every principal the cards show, one query per kind."""
    names.prime(
        [card.principal for card in cards]
        + [failure.actor for card in cards for failure in card.failures]
    )


def _stream(membership: Membership, head: int) -> dict[str, Any]:
    return card_pages.live_stream(membership, head, LIVE_FAMILIES)


def _agents_context(membership: Membership, head: int | None = None) -> dict[str, Any]:
    cards = agents.cards(membership.group_id, head=head)
    _shown(cards)
    refresh_url = reverse("dashboard:agents-section", args=[membership.group_id])
    return card_pages.cards_context(membership, cards, refresh_url)


@login_required
def agents_page(request: HttpRequest, group: str) -> HttpResponse:
    """Every agent of the group, as a card."""
    membership = access_membership(request, group)
    head = selectors.timeline_head(group)  # before the projections: see views.group_detail
    context = _agents_context(membership, head)
    context["stream"] = _stream(membership, head)
    return render(request, "dashboard/agents/page.html", context)


@login_required
def agents_section(request: HttpRequest, group: str) -> HttpResponse:
    """The cards alone, for the page to swap in when events arrive."""
    membership = access_membership(request, group)
    return render(request, "dashboard/agents/cards.html", _agents_context(membership))


def _card_context(
    request: HttpRequest, group: str, agent: str, head: int | None = None
) -> dict[str, Any]:
    membership = access_membership(request, group)
    if not is_id(agent):
        raise Http404("no such agent")
    cards = agents.cards(group, only=agent_principal(agent), head=head)
    if not cards:
        raise Http404("no such agent in this group")
    _shown(cards)
    refresh_url = reverse("dashboard:agent-section", args=[group, agent])
    return card_pages.cards_context(membership, cards, refresh_url, single=True)


@login_required
def agent_page(request: HttpRequest, group: str, agent: str) -> HttpResponse:
    """One agent: its card, and its WorkItems in the group, filtered and paged."""
    head = selectors.timeline_head(group)
    context = _card_context(request, group, agent, head)
    card: agents.AgentCardView = context["card"]
    filter_ = request.GET.get("show", "")
    listing = agents.items_of(group, card.principal, filter_=filter_, page=request.GET.get("page"))
    context.update(
        listing=listing,
        query=f"show={listing.filter}" if listing.filter else "",
        stream=_stream(context["membership"], head),
    )
    return render(request, "dashboard/agents/agent.html", context)


@login_required
def agent_section(request: HttpRequest, group: str, agent: str) -> HttpResponse:
    """One agent's card alone, for live refreshes."""
    return render(request, "dashboard/agents/cards.html", _card_context(request, group, agent))


urlpatterns: list[URLPattern] = [
    path("groups/<str:group>/agents/", agents_page, name="agents"),
    path("groups/<str:group>/live/agents/", agents_section, name="agents-section"),
    path("groups/<str:group>/agents/<str:agent>/", agent_page, name="agent"),
    path("groups/<str:group>/live/agents/<str:agent>/", agent_section, name="agent-section"),
]
