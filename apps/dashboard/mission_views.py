"""Mission actions from the group page: approve (R10.2-16) and cancel (R10.2-18) a mission.

Thin function views, like the execution-approval form next door: the form only shapes what
the person typed, :func:`commands.submit_as_user` hands it to the one write path as
``user:<name>``, and every decision (role, human-only, unfinished WorkItems, idempotency) is
the write path's. A refusal is shown with its wire.md §8 code and requirement; success
redirects back (post/redirect/get) with a confirmation.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from apps.ledger.write_path import Outcome
from missionweave.protocol.errors import ErrorCode, ProtocolError

from .commands import submit_as_user
from .forms import MissionApproveForm, MissionCancelForm
from .work_views import _return_to as return_to
from .work_views import member_or_404, show_refusal


def _submit(
    request: HttpRequest, group: str, form: forms.Form, type_: str, body: dict[str, str]
) -> Outcome | None:
    """Submit ``type_`` with the command id the page minted (wire§3 step 5: a resubmitted
    form is replayed, not repeated); ``None`` after showing a refusal."""
    try:
        return submit_as_user(
            user=request.user,
            group_id=group,
            type_=type_,
            body=body,
            command_id=form.cleaned_data["command_id"] or None,
        )
    except ProtocolError as error:
        show_refusal(request, error)
        return None


def _incomplete(request: HttpRequest, form: forms.Form, what: str) -> None:
    problems = "; ".join(f"{name}: {' '.join(errors)}" for name, errors in form.errors.items())
    show_refusal(
        request, ProtocolError(ErrorCode.MALFORMED, f"the {what} form was incomplete: {problems}")
    )


def _cancelled_items(outcome: Outcome) -> int:
    return sum(1 for event in outcome.body.get("events", ()) if event["type"] == "work.cancelled")


@login_required
@require_POST
def mission_approve(request: HttpRequest, group: str, mission: str) -> HttpResponse:
    """``mission.approve`` as ``user:<name>`` (R10.2-16, R10.2-22, wire§9).

    Only a human mission_owner may (FORBIDDEN otherwise); a mission with unfinished WorkItems
    is ILLEGAL_TRANSITION and nothing is appended. A child mission's approval verifies the
    parent WorkItem it unblocks (R10.2-16), in the same command when both share the group.
    """
    member_or_404(request, group)
    back = HttpResponseRedirect(return_to(request, reverse("dashboard:group", args=[group])))
    form = MissionApproveForm(request.POST)
    if not form.is_valid():
        _incomplete(request, form, "mission approval")
        return back
    body = {"mission": mission, "comment": form.cleaned_data["comment"]}
    outcome = _submit(request, group, form, "mission.approve", body)
    if outcome is not None:
        told = any(e["type"] == "mission.child_approved" for e in outcome.body.get("events", ()))
        parent = " Its parent WorkItem is verified." if told else ""
        messages.success(request, f"Approved mission {mission}.{parent}")
    return back


@login_required
@require_POST
def mission_cancel(request: HttpRequest, group: str, mission: str) -> HttpResponse:
    """``mission.cancel`` as ``user:<name>`` with the reason given (R10.2-18, wire§9).

    mission_owners and coordinators may; the write path cancels every unfinished WorkItem of
    the mission in the same command (``work.cancelled``), and refuses an ended mission with
    ILLEGAL_TRANSITION (R10.2-22).
    """
    member_or_404(request, group)
    back = HttpResponseRedirect(return_to(request, reverse("dashboard:group", args=[group])))
    form = MissionCancelForm(request.POST)
    if not form.is_valid():
        _incomplete(request, form, "mission cancellation")
        return back
    body = {"mission": mission, "reason": form.cleaned_data["reason"]}
    outcome = _submit(request, group, form, "mission.cancel", body)
    if outcome is not None:
        count = _cancelled_items(outcome)
        messages.success(
            request, f"Cancelled mission {mission}: {count} unfinished WorkItem(s) cancelled."
        )
    return back
