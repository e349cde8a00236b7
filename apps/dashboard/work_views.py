"""WorkItem pages: the group's work section (a partial the group page refreshes live), one
WorkItem's page, and the execution-approval form.

Thin function views: reads from ``work``; the approval form's one write goes through the
approval screen's ``decide_execution``.
As on every dashboard page, a group the person is not an active member of is 404.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_POST

from apps.ledger.write_path import Caller
from apps.registry.models import Membership

from . import item_talk, listings, names, selectors, work
from .access import access_membership
from .approval_views import decide_execution
from .decision_forms import NotSent
from .list_forms import MissionFilterForm
from .list_views import member_principals


def _viewer(request: HttpRequest, membership: Membership) -> work.Viewer:
    return work.viewer_of(Caller.for_user(request.user), membership.to_state())


def queue_context(request: HttpRequest, membership: Membership) -> dict[str, object]:
    """What ``partials/approval-queue.html`` needs; its forms return to the group page."""
    group = membership.group_id
    return {
        "group": membership.group,
        "queue": work.approval_queue(group, viewer=_viewer(request, membership)),
        "return_to": reverse("dashboard:group", args=[group]),
    }


def work_context(request: HttpRequest, membership: Membership) -> dict[str, object]:
    """What ``partials/work-items.html`` needs: the approval queue and the newest missions
    (the rest are on the mission list, ``list_views``)."""
    viewer = _viewer(request, membership)
    return {
        **queue_context(request, membership),
        "missions": listings.mission_listing(
            membership.group_id,
            listings.MissionFilters(),
            viewer=viewer,
            membership=membership,
            per_page=listings.GROUP_PAGE_MISSIONS,
        ),
        "mission_filters": MissionFilterForm(),
        "members": member_principals(membership.group_id),
    }


@login_required
def group_approval_queue(request: HttpRequest, group: str) -> HttpResponse:
    """The group page's approval queue alone, for the page to swap in when events arrive."""
    membership = access_membership(request, group)
    return render(
        request, "dashboard/partials/approval-queue.html", queue_context(request, membership)
    )


def _item_context(
    request: HttpRequest, group: str, work_item: str, membership: Membership | None = None
) -> dict[str, object]:
    membership = membership or access_membership(request, group)
    page = work.work_item_page(group, work_item, viewer=_viewer(request, membership))
    if page is None:
        raise Http404("no such WorkItem")
    # issue 35 §4, §5: its conversation and priority, and the forms this viewer gets there
    caller, state = Caller.for_user(request.user), membership.to_state()
    talk = item_talk.talk_of(page.item, page.messages, caller=caller, membership=state)
    priority = item_talk.priority_of(page.item, caller=caller, membership=state)
    names.prime(page.principals | talk.principals | priority.principals)
    return {
        "group": membership.group,
        "membership": membership,
        "page": page,
        "talk": talk,
        "priority": priority,
        "typed": {},
        "return_to": reverse("dashboard:work-item", args=[group, work_item]),
    }


def item_page_response(
    request: HttpRequest,
    membership: Membership,
    work_item: str,
    *,
    not_sent: NotSent | None = None,
    status: int = 200,
) -> HttpResponse:
    """The WorkItem page; with a form the server did not take, its reason and, in that form,
    the text the person typed (``item_views``, issue 34 §3)."""
    group = membership.group_id
    head = selectors.timeline_head(group)  # before the projections: see views.group_detail
    context = _item_context(request, group, work_item, membership)
    page: work.WorkItemPage = context["page"]  # type: ignore[assignment]
    related = {work_item, *page.item.depends_on, *(dep.work_item for dep in page.needed_by)}
    context["stream"] = {
        "group": group,
        "head_sequence": head,
        "families": work.ITEM_LIVE_FAMILIES,
        "related": sorted(related),
        "mission": page.item.mission,
        # a charge to a sibling item changes these missions' budgets on this page (R11.5-12)
        "missions": list(page.execution.missions),
    }
    if not_sent is not None:
        context["not_sent"] = not_sent
        context["typed"] = {not_sent.form: {t.name: t.text for t in not_sent.typed}}
        # the text is shown beside the page when its form is no longer on it
        context["not_sent_typed_here"] = not _form_shown(context, not_sent.form)
    return render(request, "dashboard/work-item-detail.html", context, status=status)


def _form_shown(context: dict[str, object], form: str) -> bool:
    talk: item_talk.Talk = context["talk"]  # type: ignore[assignment]
    priority: item_talk.Priority = context["priority"]  # type: ignore[assignment]
    if form == "escalate":
        return priority.may_escalate
    if form.startswith("reply-"):
        asked = form.removeprefix("reply-")
        return talk.may_post and any(said.message == asked for said in talk.open_questions)
    return talk.may_post


@login_required
def work_item_detail(request: HttpRequest, group: str, work_item: str) -> HttpResponse:
    return item_page_response(request, access_membership(request, group), work_item)


@login_required
def work_item_section(request: HttpRequest, group: str, work_item: str) -> HttpResponse:
    """The WorkItem page's body alone, for the page to swap in when events arrive."""
    return render(
        request,
        "dashboard/partials/work-item-body.html",
        _item_context(request, group, work_item),
    )


@login_required
@require_POST
def work_item_approve(request: HttpRequest, group: str, work_item: str) -> HttpResponse:
    """Grant execution approval (R10.2-06) from the WorkItem page or the group's queue.

    The same decision as the approval screen's: once taken, back to the page it came from;
    refused (FORBIDDEN, SELF_APPROVAL, DUPLICATE_APPROVAL, STALE_REVISION, a comment over its
    limit), the approval screen in its place, the reason in words and the comment kept
    (issue 34 §3), with scripts on or off.
    """
    return decide_execution(request, group, work_item, refuse=False)
