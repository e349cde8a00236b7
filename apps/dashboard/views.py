"""Dashboard pages: the groups a person belongs to (``/groups/``; the inbox at ``/`` is
``inbox_views``) and a group's overview (``overview_views``; every event, in words, is on
the Timeline, ``timeline_views``).

Thin function views: reads come from ``selectors``. A group the person is not an active
member of is 404 whether or not it exists (``access.access_membership``).
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from apps.ledger.write_path import Caller
from apps.registry.models import Organization

from . import membership_views, overview_views, selectors


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
    """The group's overview (issue 37 §1, ``overview_views``); the log's old pages
    (``?at=N``, ``?before=N``) redirect to the Timeline."""
    return overview_views.overview_page(request, group)
