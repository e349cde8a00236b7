"""The inbox at ``/``: what waits for the signed-in person across all their groups, and the
same sections alone for the page to swap in when an event in one of those groups arrives.

Thin function views over ``inbox.inbox_of``; the group list lives at ``/groups/``
(``views.group_list``). The triage controls (issue 37 §5) are GET parameters read by
``triage.triage_from``: a value that cannot be read is shown beside its field with the page
answered 400, never a 500. Snoozes (``snooze_views``) and the bulk final approval
(``bulk_approval_views``) have their own POST views.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import URLPattern, path

from apps.ledger.write_path import Caller
from apps.registry.models import Membership

from . import bulk_approval_views, inbox, names, snooze_views
from .actions import new_command_id
from .snooze import SnoozeFor, snoozed_keys
from .triage import KINDS, SORTS, triage_from


def _groups(caller: Caller) -> dict[str, str]:
    return dict(
        Membership.objects.filter(principal=caller.principal, active=True)
        .order_by("group__name", "group_id")
        .values_list("group_id", "group__name")
    )


def _context(request: HttpRequest) -> dict[str, object]:
    caller = Caller.for_user(request.user)
    now = inbox._now()
    groups = _groups(caller)
    triage = triage_from(request.GET, groups)
    found = inbox.inbox_of(caller, now=now, triage=triage, snoozed=snoozed_keys(request.user, now))
    names.prime(found.principals)
    return {
        "inbox": found,
        "triage": triage,
        "triage_query": triage.query(),
        "kinds": KINDS,
        "sorts": SORTS,
        "group_names": groups,
        "snooze_choices": SnoozeFor.choices,
        "batch": new_command_id(),
        "stream": {
            # Each group's head as read with the sections: later events reach the page over
            # the group's stream (GroupStream), which refreshes them.
            "groups": [
                {"group": group.id, "head_sequence": group.head_sequence} for group in found.groups
            ],
            "families": inbox.LIVE_FAMILIES,
        },
    }


def _status(context: dict[str, object]) -> int:
    triage = context["triage"]
    return 400 if getattr(triage, "errors", None) else 200


@login_required
def inbox_page(request: HttpRequest) -> HttpResponse:
    context = _context(request)
    return render(request, "dashboard/inbox.html", context, status=_status(context))


@login_required
def inbox_section(request: HttpRequest) -> HttpResponse:
    """The inbox's sections alone (wire§7: the page re-fetches them when events arrive)."""
    context = _context(request)
    return render(request, "dashboard/inbox-sections.html", context, status=_status(context))


urlpatterns: list[URLPattern] = [
    path("", inbox_page, name="inbox"),
    path("inbox/section/", inbox_section, name="inbox-section"),
    path("inbox/snooze/", snooze_views.inbox_snooze, name="inbox-snooze"),
    path(
        "inbox/approve-missions/",
        bulk_approval_views.inbox_approve_missions,
        name="inbox-approve-missions",
    ),
]
