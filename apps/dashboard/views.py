"""Dashboard pages: the groups a person belongs to (``/groups/``; the inbox at ``/`` is
``inbox_views``) and a group's verified, live timeline (with its live work section, from
``work_views``).

Thin function views: reads come from ``selectors``, checking the chain from ``timeline``.
A group the person is not an active member of is 404 whether or not it exists
(``access.access_membership``).
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import render

from apps.ledger.write_path import Caller
from apps.registry.models import Organization
from missionweave.protocol.identifiers import AUTHORITY

from . import listings, membership_views, names, selectors, work
from .access import access_membership
from .work_views import work_context


@login_required
def group_list(request: HttpRequest) -> HttpResponse:
    """The groups where the person holds an active membership, with their roles and heads;
    staff see every group (they administer memberships) and may create one here (a POST,
    ``membership_views.create_group``)."""
    if request.method == "POST":
        return membership_views.create_group(request)
    caller = Caller.for_user(request.user)
    groups = (
        selectors.all_groups(caller.principal)
        if caller.is_staff
        else selectors.member_groups(caller.principal)
    )
    context = {"principal": caller.principal, "groups": groups, "is_staff": caller.is_staff}
    if caller.is_staff:
        context["organizations"] = Organization.objects.order_by("name", "id")
    return render(request, "dashboard/group-list.html", context)


@login_required
def group_detail(request: HttpRequest, group: str) -> HttpResponse:
    membership = access_membership(request, group)
    try:
        before = selectors.before_parameter(request.GET.get("before"))
    except ValueError:
        return HttpResponseBadRequest("before is a positive integer")
    try:
        # ``?at=N``: the page that starts with event N (the timeline's "go to event")
        at = selectors.before_parameter(request.GET.get("at"))
    except ValueError:
        return HttpResponseBadRequest("at (go to event #) is a positive integer")
    if at is not None:
        before = at + 1
    page = selectors.timeline_page(group, before=before)
    context = work_context(request, membership)
    # every member's name, once: the log names them, and so do events that arrive live
    named = names.book(
        [*context["members"], AUTHORITY, *(event.actor for event in page.checked.events)]
    )
    return render(
        request,
        "dashboard/group-detail.html",
        {
            # Read after the timeline: the projections are at least as new as its head, and
            # every later event reaches the page over the stream, which refreshes them.
            **context,
            "group": membership.group,
            "membership": membership,
            "page": page,
            "at": at,
            "stream": {
                "group": group,
                "principal": Caller.for_user(request.user).principal,
                "page_size": page.page_size,
                "missions_shown": listings.GROUP_PAGE_MISSIONS,
                "live": page.is_newest,
                "head_sequence": page.head_sequence,
                "anchor_sequence": page.checked.anchor_sequence,
                "anchor_hash": page.checked.anchor_hash,
                "documents": page.documents_oldest_first,
                "queue_families": work.LIVE_FAMILIES,
                "names": named,
            },
        },
    )
