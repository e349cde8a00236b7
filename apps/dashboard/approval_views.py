"""The execution-approval screen of one WorkItem (R10.2-06): the contract revision in full,
the decisions already given, the start-by deadline, and the Approve and Refuse forms.

Thin function views: reads from ``approvals``; Approve and Refuse post here and go through
``decision_forms.decide`` and the one write path. A decision the server does not take (a
stale revision, someone else's refusal first, a comment over its limit, a role taken away)
is answered with this page again — the reason in words, the comment kept (issue 34 §3). A
group the person is not an active member of is 404, as everywhere.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import URLPattern, path, reverse
from django.views.decorators.http import require_POST

from apps.ledger.write_path import Caller, Outcome
from apps.registry.models import Membership
from missionweave.protocol.errors import ProtocolError

from . import approvals, names, selectors, work
from .access import access_membership
from .asking import APPROVAL, ASK_FORM, AskPanel, ask_panel
from .decision_forms import NotSent, decide, membership_or_none, not_a_member
from .forms import GrantExecutionForm, RefuseExecutionForm, revision_decision
from .item_names import item_named

APPROVE_LABELS = {"comment": "comment on approving"}
REFUSE_LABELS = {"comment": "reason for refusing"}


def _context(request: HttpRequest, membership: Membership, work_item: str) -> dict[str, Any]:
    group = membership.group_id
    screen = approvals.approval_screen(Caller.for_user(request.user), membership, work_item)
    if screen is None:
        raise Http404("no such WorkItem")
    item = screen.item
    asking = ask_panel(Caller.for_user(request.user), membership.to_state(), group, item, APPROVAL)
    names.prime(
        [
            *asking.principals,
            item.owner,
            item.authorized_by,
            item.proposed_by,
            *(d.principal for d in screen.decisions),
            *(a.producer for a in screen.inputs),
            screen.reassigned.offered_to if screen.reassigned else None,
            screen.reassigned.from_owner if screen.reassigned else None,
        ]
    )
    return {
        "group": membership.group,
        "membership": membership,
        "screen": screen,
        "item": item,
        "asking": asking,
        "return_to": reverse("dashboard:approval", args=[group, work_item]),
    }


def approval_page_response(
    request: HttpRequest,
    membership: Membership,
    work_item: str,
    *,
    not_sent: NotSent | None = None,
    status: int = 200,
) -> HttpResponse:
    group = membership.group_id
    head = selectors.timeline_head(group)  # before the projections: see views.group_detail
    context = _context(request, membership, work_item)
    context["stream"] = {
        "group": group,
        "head_sequence": head,
        "work_item": work_item,
        "families": work.ITEM_LIVE_FAMILIES,
    }
    context["not_sent"] = not_sent
    screen: approvals.ApprovalScreen = context["screen"]
    # the text goes back into its form while that form can still succeed; otherwise it is
    # shown beside the reason, to copy (issue 34 §3)
    context["typed"] = {not_sent.form: not_sent.text("comment")} if not_sent else {}
    asking: AskPanel = context["asking"]
    asked = not_sent is not None and not_sent.form == ASK_FORM
    form_shown = asking.offers_form if asked else screen.may_decide
    context["not_sent_typed_here"] = not_sent is not None and not form_shown
    return render(request, "dashboard/approval/page.html", context, status=status)


@login_required
def approval_page(request: HttpRequest, group: str, work_item: str) -> HttpResponse:
    return approval_page_response(request, access_membership(request, group), work_item)


@login_required
def approval_section(request: HttpRequest, group: str, work_item: str) -> HttpResponse:
    """The screen's body alone, for the page to swap in when an event about the item arrives."""
    context = _context(request, access_membership(request, group), work_item)
    context["typed"] = {}
    return render(request, "dashboard/approval/body.html", context)


def _approved(group: str, body: dict[str, Any], outcome: Outcome) -> str:
    result = outcome.body.get("result") or {}
    named = item_named(group, body["work_item"])
    return (
        f"Approved revision {body['contract_revision']} of {named}: "
        f"{result.get('approvals', '?')} of {result.get('approvals_required', '?')} approvals."
    )


def _refused(group: str, body: dict[str, Any], outcome: Outcome) -> str:
    named = item_named(group, body["work_item"])
    return (
        f"Refused revision {body['contract_revision']} of {named}: it may not start on this "
        "revision."
    )


def decide_execution(
    request: HttpRequest, group: str, work_item: str, *, refuse: bool
) -> HttpResponse:
    """Grant or refuse execution (R10.2-06) as the person, through the one write path.

    The write path decides: FORBIDDEN for a role that may not, SELF_APPROVAL for the item's
    requester or owner, DUPLICATE_APPROVAL for a second decision, STALE_REVISION for a stale
    page, ILLEGAL_TRANSITION once the revision was refused or the item moved on. Whatever it
    refuses comes back as this page, in words, with the comment kept; once taken, the person
    goes back to the form's ``next`` (the WorkItem page and the group's queue post here too)."""

    def words(error: ProtocolError) -> str:
        membership = membership_or_none(request, group)
        if membership is None:
            return "You are no longer a member of this group."
        screen = approvals.approval_screen(Caller.for_user(request.user), membership, work_item)
        if screen is None:
            return "This WorkItem does not exist in this group."
        return approvals.why_not(
            error,
            item=screen.item,
            roles=screen.roles,
            principal=screen.principal,
            screen=screen,
        )

    def again(not_sent: NotSent, status: int) -> HttpResponse:
        membership = membership_or_none(request, group)
        if membership is None:
            return not_a_member(request, not_sent.typed)
        return approval_page_response(
            request, membership, work_item, not_sent=not_sent, status=status
        )

    form_class = RefuseExecutionForm if refuse else GrantExecutionForm
    return decide(
        request,
        group,
        form=form_class(request.POST),
        labels=REFUSE_LABELS if refuse else APPROVE_LABELS,
        type_=approvals.REFUSE_EXECUTION if refuse else work.GRANT_EXECUTION,
        body=revision_decision(work_item),
        confirm=_refused if refuse else _approved,
        words=words,
        again=again,
        back=reverse("dashboard:approval", args=[group, work_item]),
        form_name="refuse" if refuse else "approve",
    )


@login_required
@require_POST
def approval_approve(request: HttpRequest, group: str, work_item: str) -> HttpResponse:
    """Approve execution of the revision the page showed, with the person's comment."""
    return decide_execution(request, group, work_item, refuse=False)


@login_required
@require_POST
def approval_refuse(request: HttpRequest, group: str, work_item: str) -> HttpResponse:
    """Refuse execution of the revision the page showed; the reason is required."""
    return decide_execution(request, group, work_item, refuse=True)


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
        "groups/<str:group>/work-items/<str:work_item>/approval/approve/",
        approval_approve,
        name="approval-approve",
    ),
    path(
        "groups/<str:group>/work-items/<str:work_item>/approval/refuse/",
        approval_refuse,
        name="approval-refuse",
    ),
]
