"""The execution-approval screen of one WorkItem (R10.2-06): the contract revision in full,
the decisions already given, the start-by deadline, and the Approve and Refuse forms.

Thin function views: reads from ``approvals``; Approve posts to the grant view next door
(``work_views.work_item_approve``), Refuse here, both through ``actions.submit_form`` and the
one write path. A group the person is not an active member of is 404, as everywhere.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import URLPattern, path, reverse
from django.views.decorators.http import require_POST

from apps.ledger.write_path import Caller, Outcome

from . import approvals, selectors, work
from .access import access_membership
from .actions import submit_form
from .forms import RefuseExecutionForm, revision_decision


def _context(request: HttpRequest, group: str, work_item: str) -> dict[str, Any]:
    membership = access_membership(request, group)
    screen = approvals.approval_screen(Caller.for_user(request.user), membership, work_item)
    if screen is None:
        raise Http404("no such WorkItem")
    return {
        "group": membership.group,
        "membership": membership,
        "screen": screen,
        "item": screen.item,
        "return_to": reverse("dashboard:approval", args=[group, work_item]),
    }


@login_required
def approval_page(request: HttpRequest, group: str, work_item: str) -> HttpResponse:
    access_membership(request, group)
    head = selectors.timeline_head(group)  # before the projections: see views.group_detail
    context = _context(request, group, work_item)
    context["stream"] = {
        "group": group,
        "head_sequence": head,
        "work_item": work_item,
        "families": work.ITEM_LIVE_FAMILIES,
    }
    return render(request, "dashboard/approval/page.html", context)


@login_required
def approval_section(request: HttpRequest, group: str, work_item: str) -> HttpResponse:
    """The screen's body alone, for the page to swap in when an event about the item arrives."""
    return render(request, "dashboard/approval/body.html", _context(request, group, work_item))


def _refused(body: dict[str, Any], outcome: Outcome) -> str:
    return (
        f"Refused revision {body['contract_revision']} of {body['work_item']}: it may not "
        "start on this revision."
    )


@login_required
@require_POST
def approval_refuse(request: HttpRequest, group: str, work_item: str) -> HttpResponse:
    """Refuse execution (R10.2-06) as the person, with the reason, through the one write path.

    The form refuses an empty reason before anything is sent (MALFORMED); the write path
    decides the rest: FORBIDDEN for a role that may not, SELF_APPROVAL for the item's
    requester or owner, DUPLICATE_APPROVAL for a second decision, STALE_REVISION for a stale
    page.
    """
    return submit_form(
        request,
        group,
        form=RefuseExecutionForm(request.POST),
        what="refusal",
        type_=approvals.REFUSE_EXECUTION,
        body=revision_decision(work_item),
        confirm=_refused,
    )


urlpatterns: list[URLPattern] = [
    path(
        "groups/<str:group>/work-items/<str:work_item>/approval/",
        approval_page,
        name="approval",
    ),
    path(
        "groups/<str:group>/work-items/<str:work_item>/approval/section/",
        approval_section,
        name="approval-section",
    ),
    path(
        "groups/<str:group>/work-items/<str:work_item>/approval/refuse/",
        approval_refuse,
        name="approval-refuse",
    ),
]
