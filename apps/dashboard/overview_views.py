"""The group page as an overview (issue 37 §1): live counts by state, what needs attention
now, the approval queue and the newest missions. Every event, in words, is on the Timeline
(``timeline_views``); the log's old addresses (``?at=N``, ``?before=N``) lead there.

Thin function views: reads from ``overview`` and ``work_views.work_context``. A group the
person is not an active member of is 404 whether or not it exists (``access``).
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseRedirect
from django.shortcuts import render
from django.urls import URLPattern, path, reverse
from django.views.decorators.http import require_safe

from apps.ledger.write_path import Caller
from apps.registry.models import Membership

from . import listings, names, overview, selectors, work
from .access import access_membership
from .work_views import work_context

#: the event families that may change the counts or the attention list
LIVE_FAMILIES = ("work", "mission", "approval", "lease", "ext")


def _timeline_redirect(request: HttpRequest, group: str) -> HttpResponse | None:
    """``?at=N`` and ``?before=N`` were pages of the log on this page: they are the
    Timeline's now, with the same parameter (``None`` when neither is asked)."""
    wanted = {key: request.GET.get(key) for key in ("at", "before") if request.GET.get(key)}
    if not wanted:
        return None
    for key, raw in wanted.items():
        try:
            selectors.before_parameter(raw)
        except ValueError:
            what = "at (go to event #)" if key == "at" else "before"
            return HttpResponseBadRequest(f"{what} is a positive integer")
    url = reverse("dashboard:timeline", args=[group]) + "?" + urlencode(wanted)
    return HttpResponseRedirect(url)


def _section_context(membership: Membership) -> dict[str, object]:
    found = overview.group_overview(membership.group_id, viewer=membership.principal)
    names.prime(found.principals)
    return {"group": membership.group, "overview": found}


def overview_page(request: HttpRequest, group: str) -> HttpResponse:
    membership = access_membership(request, group)
    redirect = _timeline_redirect(request, group)
    if redirect is not None:
        return redirect
    # The head first: the projections read after it are at least as new, and every later
    # event reaches the page over the stream, which refreshes them.
    head = selectors.timeline_head(group)
    context = work_context(request, membership)
    caller = Caller.for_user(request.user)
    return render(
        request,
        "dashboard/group-detail.html",
        {
            **context,
            **_section_context(membership),
            "membership": membership,
            "head_sequence": head,
            "stream": {
                "group": group,
                "principal": caller.principal,
                "head_sequence": head,
                "missions_shown": listings.GROUP_PAGE_MISSIONS,
                "queue_families": work.LIVE_FAMILIES,
                "overview_families": LIVE_FAMILIES,
            },
        },
    )


@require_safe
@login_required
def overview_section(request: HttpRequest, group: str) -> HttpResponse:
    """The counts and the attention list alone, for the page to swap in when events arrive:
    bounded whatever the group's size (``overview``)."""
    membership = access_membership(request, group)
    return render(request, "dashboard/overview/live.html", _section_context(membership))


urlpatterns: list[URLPattern] = [
    path("groups/<str:group>/overview/section/", overview_section, name="overview-section"),
]
