"""The Timeline page (``/groups/<g>/timeline/``; issue 37 §2): a group's log one line per
event, in words, filtered and paged both ways, every event on the page verified.

Members only: a group the person is no active member of is 404, as on every page
(``access.access_membership``). A filter the page cannot read is said next to its field and
the page still answers (200), never a 500 (docs/dashboard.md "Timeline").
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import URLPattern, path
from django.views.decorators.http import require_safe

from . import event_words, names, timeline_reads
from .access import access_membership


@require_safe
@login_required
def timeline(request: HttpRequest, group: str) -> HttpResponse:
    membership = access_membership(request, group)
    filters = timeline_reads.read_filters(group, request.GET)
    page = None
    if not filters.errors:
        page = timeline_reads.timeline_page(group, filters)
    actors = timeline_reads.actor_choices(group)
    names.prime(actors)
    return render(
        request,
        "dashboard/timeline/page.html",
        {
            "group": membership.group,
            "membership": membership,
            "filters": filters,
            "page": page,
            "actors": actors,
            "kinds": event_words.filter_choices(),
            "scan_limit": timeline_reads.SCAN_LIMIT,
            # the filters, kept by the pager's links (which add their own cursor)
            "query": urlencode(
                {k: v for k, v in filters.values.items() if v and k not in ("before", "after")}
            ),
        },
    )


urlpatterns: list[URLPattern] = [
    path("groups/<str:group>/timeline/", timeline, name="timeline"),
]
