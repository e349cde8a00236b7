"""The mission and WorkItem lists of a group (issue 13 §4), and the rows a live page asks for
when events touch them (§5).

Thin function views: filters from ``list_forms``, reads from ``listings``. As everywhere, a
group the person is not an active member of is 404.

Live updates re-render rows, never lists: a page that receives events for some WorkItems or
missions asks ``…/live/mission-rows/`` or ``…/live/work-item-rows/`` for exactly those rows
(at most ``listings.MAX_LIVE_IDS`` of each), so what a live update costs depends on what
changed, not on how many missions the group holds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import URLPattern, path, reverse
from django.views.decorators.http import require_GET

from apps.ledger.write_path import Caller
from apps.registry.models import Membership

from . import listings, selectors, work
from .access import access_membership
from .list_forms import MissionFilterForm, WorkItemFilterForm


def _viewer(request: HttpRequest, membership: Membership) -> work.Viewer:
    return work.viewer_of(Caller.for_user(request.user), membership.to_state())


def _query_without_page(request: HttpRequest) -> str:
    """The filters as a query string, for the pager's links."""
    query = request.GET.copy()
    query.pop("page", None)
    return query.urlencode()


def member_principals(group_id: str) -> list[str]:
    """Who may own work in the group: the owner filters' suggestions."""
    return sorted(
        Membership.objects.filter(group_id=group_id, active=True).values_list(
            "principal", flat=True
        )
    )


@dataclass(frozen=True)
class ListScreen:
    """What differs between the mission list and the WorkItem list."""

    kind: str  # "missions" or "work-items": element ids, the list's route name
    title: str
    noun: str
    form: type[MissionFilterForm] | type[WorkItemFilterForm]
    listing: Callable[..., listings.Listing]
    row_template: str
    rows_route: str


MISSIONS = ListScreen(
    "missions",
    "Missions",
    "missions",
    MissionFilterForm,
    listings.mission_listing,
    "dashboard/lists/mission-row.html",
    "dashboard:live-mission-rows",
)
WORK_ITEMS = ListScreen(
    "work-items",
    "WorkItems",
    "WorkItems",
    WorkItemFilterForm,
    listings.work_item_listing,
    "dashboard/lists/work-item-row.html",
    "dashboard:live-work-item-rows",
)


def _list_page(request: HttpRequest, group: str, screen: ListScreen) -> HttpResponse:
    membership = access_membership(request, group)
    head = selectors.timeline_head(group)  # before the projections: see views.group_detail
    form = screen.form(request.GET or None)
    listing = screen.listing(
        group,
        form.filters(),
        viewer=_viewer(request, membership),
        membership=membership,
        page=request.GET.get("page") or 1,
    )
    return render(
        request,
        "dashboard/lists/page.html",
        {
            "group": membership.group,
            "membership": membership,
            "screen": screen,
            "kind": screen.kind,
            "noun": screen.noun,
            "action": reverse(f"dashboard:{screen.kind}", args=[group]),
            "rows_url": reverse(screen.rows_route, args=[group]),
            "form": form,
            "listing": listing,
            "query": _query_without_page(request),
            "members": member_principals(group),
            "return_to": request.get_full_path(),
            "stream": {
                "group": group,
                "head_sequence": head,
                "principal": Caller.for_user(request.user).principal,
                "live_inserts": listing.live_inserts,
                "per_page": listing.page.paginator.per_page,
            },
        },
    )


@login_required
@require_GET
def mission_list(request: HttpRequest, group: str) -> HttpResponse:
    """Every mission of the group, newest first, a page at a time, filtered and searched."""
    return _list_page(request, group, MISSIONS)


@login_required
@require_GET
def work_item_list(request: HttpRequest, group: str) -> HttpResponse:
    """Every WorkItem of the group, newest first, a page at a time, filtered and searched."""
    return _list_page(request, group, WORK_ITEMS)


def _ids(request: HttpRequest, name: str) -> list[str]:
    return [value for value in request.GET.getlist(name) if value][: listings.MAX_LIVE_IDS]


@login_required
@require_GET
def live_mission_rows(request: HttpRequest, group: str) -> HttpResponse:
    """The rows of the missions named, or holding a WorkItem named, as the viewer sees them now."""
    membership = access_membership(request, group)
    ids = listings.missions_touched(group, _ids(request, "mission"), _ids(request, "work_item"))
    rows = listings.mission_rows_by_id(group, ids, _viewer(request, membership))
    return render(
        request,
        "dashboard/lists/mission-rows.html",
        {
            "group": membership.group,
            "rows": rows,
            "return_to": request.GET.get("next") or "",
        },
    )


@login_required
@require_GET
def live_work_item_rows(request: HttpRequest, group: str) -> HttpResponse:
    membership = access_membership(request, group)
    rows = listings.work_item_rows_by_id(group, _ids(request, "work_item"))
    return render(
        request, "dashboard/lists/work-item-rows.html", {"group": membership.group, "rows": rows}
    )


urlpatterns: list[URLPattern] = [
    path("groups/<str:group>/missions/", mission_list, name="missions"),
    path("groups/<str:group>/work-items/", work_item_list, name="work-items"),
    path("groups/<str:group>/live/mission-rows/", live_mission_rows, name="live-mission-rows"),
    path(
        "groups/<str:group>/live/work-item-rows/",
        live_work_item_rows,
        name="live-work-item-rows",
    ),
]
