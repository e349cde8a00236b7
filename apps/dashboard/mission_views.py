"""Mission actions: approve (R10.2-16, the final approval) and cancel (R10.2-18) a mission.

Thin function views: ``decision_forms.decide`` checks the form and hands the command to the
one write path as the person; every decision (role, human-only, unfinished WorkItems,
idempotency) is the write path's. What it does not take is answered with the page again —
the final-approval screen for an approval, the mission page for a cancel — with the reason
in words and the typed comment or reason kept; a person whose membership is gone gets their
text back on a page that says nothing of the group (issue 34 §3).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.views.decorators.http import require_POST

from apps.ledger.write_path import Outcome
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.memberships import Membership as MembershipState
from missionweave.wording import counted

from .decision_forms import NotSent, decide, membership_or_none, not_a_member
from .forms import MissionApproveForm, MissionCancelForm
from .item_names import mission_named
from .mission_pages import final_approval_response, mission_page_response
from .mission_reviews import refusal_sentence
from .missions import who_may
from .refusal_words import plain_refusal

APPROVE_LABELS = {"comment": "comment on the approval"}
CANCEL_LABELS = {"reason": "reason for cancelling"}


def _state(request: HttpRequest, group: str) -> MembershipState | None:
    membership = membership_or_none(request, group)
    return membership.to_state() if membership is not None else None


def _event_types(outcome: Outcome) -> list[str]:
    return [event["type"] for event in outcome.body.get("events", ())]


def _approved(group: str, body: dict[str, Any], outcome: Outcome) -> str:
    told = "mission.child_approved" in _event_types(outcome)
    parent = " Its parent WorkItem is verified." if told else ""
    return f"Approved the mission {mission_named(group, body['mission'])}.{parent}"


def _cancelled(group: str, body: dict[str, Any], outcome: Outcome) -> str:
    count = _event_types(outcome).count("work.cancelled")
    named = mission_named(group, body["mission"])
    return f"Cancelled the mission {named}: {counted(count, 'unfinished WorkItem')} cancelled."


def _cancel_words(error: ProtocolError, membership: MembershipState | None) -> str:
    if error.code == ErrorCode.ILLEGAL_TRANSITION:
        return "This mission has already ended: there is nothing left to cancel."
    if error.code == ErrorCode.FORBIDDEN:
        return who_may("mission.cancel", "cancel", membership)
    return plain_refusal(error)


@login_required
@require_POST
def mission_approve(request: HttpRequest, group: str, mission: str) -> HttpResponse:
    """``mission.approve`` as the person (R10.2-16, R10.2-22, wire§9).

    Only a human mission_owner may (FORBIDDEN otherwise); a mission with unfinished WorkItems
    is ILLEGAL_TRANSITION and nothing is appended. A child mission's approval verifies the
    parent WorkItem it unblocks (R10.2-16), in the same command when both share the group.
    """

    def words(error: ProtocolError) -> str:
        return refusal_sentence(error, _state(request, group), group)

    def again(not_sent: NotSent, status: int) -> HttpResponse:
        membership = membership_or_none(request, group)
        if membership is None:
            return not_a_member(request, not_sent.typed)
        return final_approval_response(
            request, membership, mission, not_sent=not_sent, status=status
        )

    return decide(
        request,
        group,
        form=MissionApproveForm(request.POST),
        labels=APPROVE_LABELS,
        type_="mission.approve",
        body=lambda data: {"mission": mission, "comment": data["comment"]},
        confirm=_approved,
        words=words,
        again=again,
        back=reverse("dashboard:mission-final-approval", args=[group, mission]),
        form_name="mission-approve",
    )


@login_required
@require_POST
def mission_cancel(request: HttpRequest, group: str, mission: str) -> HttpResponse:
    """``mission.cancel`` as the person, with the reason given (R10.2-18, wire§9).

    mission_owners and coordinators may; the write path cancels every unfinished WorkItem of
    the mission in the same command (``work.cancelled``), and refuses an ended mission with
    ILLEGAL_TRANSITION (R10.2-22).
    """

    def again(not_sent: NotSent, status: int) -> HttpResponse:
        membership = membership_or_none(request, group)
        if membership is None:
            return not_a_member(request, not_sent.typed)
        return mission_page_response(request, membership, mission, not_sent=not_sent, status=status)

    return decide(
        request,
        group,
        form=MissionCancelForm(request.POST),
        labels=CANCEL_LABELS,
        type_="mission.cancel",
        body=lambda data: {"mission": mission, "reason": data["reason"]},
        confirm=_cancelled,
        words=lambda error: _cancel_words(error, _state(request, group)),
        again=again,
        back=reverse("dashboard:mission", args=[group, mission]),
        form_name="mission-cancel",
    )
