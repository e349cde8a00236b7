"""The inbox at ``/``: what waits for the signed-in person across all their groups, and the
same sections alone for the page to swap in when an event in one of those groups arrives.

Thin function views over ``inbox.inbox_of``; the group list lives at ``/groups/``
(``views.group_list``).
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import URLPattern, path

from apps.ledger.write_path import Caller

from . import inbox, names


def _context(request: HttpRequest) -> dict[str, object]:
    # ``?show=<section>`` lists that section in full; the others show their first entries
    show = request.GET.get("show", "")
    found = inbox.inbox_of(Caller.for_user(request.user), show=show)
    names.prime(found.principals)
    return {
        "inbox": found,
        "stream": {
            # Each group's head as read with the sections: later events reach the page over
            # the group's stream (GroupStream), which refreshes them.
            "groups": [
                {"group": group.id, "head_sequence": group.head_sequence} for group in found.groups
            ],
            "families": inbox.LIVE_FAMILIES,
        },
    }


@login_required
def inbox_page(request: HttpRequest) -> HttpResponse:
    return render(request, "dashboard/inbox.html", _context(request))


@login_required
def inbox_section(request: HttpRequest) -> HttpResponse:
    """The inbox's sections alone (wire§7: the page re-fetches them when events arrive)."""
    return render(request, "dashboard/inbox-sections.html", _context(request))


urlpatterns: list[URLPattern] = [
    path("", inbox_page, name="inbox"),
    path("inbox/section/", inbox_section, name="inbox-section"),
]
