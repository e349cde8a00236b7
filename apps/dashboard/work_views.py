"""WorkItem pages: the group's work section (a partial the group page refreshes live), one
WorkItem's page, and the execution-approval form.

Thin function views: reads from ``work``, the one write from ``commands.submit_as_user``.
As on every dashboard page, a group the person is not an active member of is 404.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from apps.registry.models import Membership
from missionweave.protocol.errors import ErrorCode, ProtocolError

from . import selectors, work
from .commands import submit_as_user
from .forms import GrantExecutionForm


def member_or_404(request: HttpRequest, group: str) -> Membership:
    """The person's active membership of ``group``; 404 whether or not the group exists."""
    membership = selectors.member_group(
        group, selectors.user_principal(request.user.get_username())
    )
    if membership is None:
        raise Http404("no such group")
    return membership


def viewer_of(membership: Membership) -> work.Viewer:
    return work.Viewer(principal=membership.principal, roles=tuple(membership.roles))


def work_context(membership: Membership) -> dict[str, object]:
    """What ``partials/work-items.html`` needs; approval forms return to the group page."""
    group = membership.group_id
    return {
        "group": membership.group,
        "work": work.group_work(group, viewer=viewer_of(membership)),
        "return_to": reverse("dashboard:group", args=[group]),
    }


@login_required
def group_work(request: HttpRequest, group: str) -> HttpResponse:
    """The group page's missions, WorkItems and approval queue, for the page to swap in live."""
    membership = member_or_404(request, group)
    return render(request, "dashboard/partials/work-items.html", work_context(membership))


def _item_context(request: HttpRequest, group: str, work_item: str) -> dict[str, object]:
    membership = member_or_404(request, group)
    page = work.work_item_page(group, work_item, viewer=viewer_of(membership))
    if page is None:
        raise Http404("no such WorkItem")
    return {
        "group": membership.group,
        "membership": membership,
        "page": page,
        "item": page.view,
        "return_to": reverse("dashboard:work-item", args=[group, work_item]),
    }


@login_required
def work_item_detail(request: HttpRequest, group: str, work_item: str) -> HttpResponse:
    member_or_404(request, group)
    head = selectors.timeline_head(group)  # before the projections: see views.group_detail
    context = _item_context(request, group, work_item)
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
    return render(request, "dashboard/work-item-detail.html", context)


@login_required
def work_item_section(request: HttpRequest, group: str, work_item: str) -> HttpResponse:
    """The WorkItem page's body alone, for the page to swap in when events arrive."""
    return render(
        request,
        "dashboard/partials/work-item-body.html",
        _item_context(request, group, work_item),
    )


def _return_to(request: HttpRequest, default: str) -> str:
    target = request.POST.get("next", "")
    if url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return default


def show_refusal(request: HttpRequest, error: ProtocolError) -> None:
    """A refusal as people read it: the wire.md §8 code (the message's tag), why, the rule."""
    messages.error(request, f"{error.message} ({error.requirement})", extra_tags=error.code.value)


@login_required
@require_POST
def work_item_approve(request: HttpRequest, group: str, work_item: str) -> HttpResponse:
    """Grant execution approval (R10.2-06) as ``user:<name>`` through the one write path.

    The write path decides: a non-mission_owner gets FORBIDDEN, the item's own requester
    SELF_APPROVAL, a second grant DUPLICATE_APPROVAL, a stale page STALE_REVISION.
    """
    member_or_404(request, group)
    back = HttpResponseRedirect(_return_to(request, reverse("dashboard:group", args=[group])))
    form = GrantExecutionForm(request.POST)
    if not form.is_valid():
        problems = "; ".join(f"{name}: {' '.join(errors)}" for name, errors in form.errors.items())
        show_refusal(
            request,
            ProtocolError(ErrorCode.MALFORMED, f"the approval form was incomplete: {problems}"),
        )
        return back
    body = {
        "work_item": work_item,
        "contract_revision": form.cleaned_data["contract_revision"],
        "comment": form.cleaned_data["comment"],
    }
    try:
        outcome = submit_as_user(
            user=request.user,
            group_id=group,
            type_="approval.grant_execution",
            body=body,
            command_id=form.cleaned_data["command_id"] or None,
        )
    except ProtocolError as error:
        show_refusal(request, error)
        return back
    result = outcome.body.get("result") or {}
    messages.success(
        request,
        f"Approved revision {body['contract_revision']} of {work_item}: "
        f"{result.get('approvals', '?')} of {result.get('approvals_required', '?')} approvals.",
    )
    return back
