"""Mission actions from the group page: approve (R10.2-16) and cancel (R10.2-18) a mission.

Thin function views, like the execution-approval form next door: ``actions.submit_form``
checks the form and hands the command to the one write path as the person; every decision
(role, human-only, unfinished WorkItems, idempotency) is the write path's.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_POST

from apps.ledger.write_path import Outcome

from .actions import submit_form
from .forms import MissionApproveForm, MissionCancelForm


def _event_types(outcome: Outcome) -> list[str]:
    return [event["type"] for event in outcome.body.get("events", ())]


def _approved(body: dict[str, Any], outcome: Outcome) -> str:
    told = "mission.child_approved" in _event_types(outcome)
    parent = " Its parent WorkItem is verified." if told else ""
    return f"Approved mission {body['mission']}.{parent}"


def _cancelled(body: dict[str, Any], outcome: Outcome) -> str:
    count = _event_types(outcome).count("work.cancelled")
    return f"Cancelled mission {body['mission']}: {count} unfinished WorkItem(s) cancelled."


@login_required
@require_POST
def mission_approve(request: HttpRequest, group: str, mission: str) -> HttpResponse:
    """``mission.approve`` as the person (R10.2-16, R10.2-22, wire§9).

    Only a human mission_owner may (FORBIDDEN otherwise); a mission with unfinished WorkItems
    is ILLEGAL_TRANSITION and nothing is appended. A child mission's approval verifies the
    parent WorkItem it unblocks (R10.2-16), in the same command when both share the group.
    """
    return submit_form(
        request,
        group,
        form=MissionApproveForm(request.POST),
        what="mission approval",
        type_="mission.approve",
        body=lambda data: {"mission": mission, "comment": data["comment"]},
        confirm=_approved,
    )


@login_required
@require_POST
def mission_cancel(request: HttpRequest, group: str, mission: str) -> HttpResponse:
    """``mission.cancel`` as the person, with the reason given (R10.2-18, wire§9).

    mission_owners and coordinators may; the write path cancels every unfinished WorkItem of
    the mission in the same command (``work.cancelled``), and refuses an ended mission with
    ILLEGAL_TRANSITION (R10.2-22).
    """
    return submit_form(
        request,
        group,
        form=MissionCancelForm(request.POST),
        what="mission cancellation",
        type_="mission.cancel",
        body=lambda data: {"mission": mission, "reason": data["reason"]},
        confirm=_cancelled,
    )
