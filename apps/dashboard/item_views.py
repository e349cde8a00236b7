"""The WorkItem page's conversation and "Escalate" forms (issue 35 §4, §5).

Thin function views: ``decision_forms.decide`` checks the form and hands the command to the
one write path as the person — ``work.message`` for a note or a reply to a question (R10.1-02;
whether a reply settles the question is the write path's verdict, R10.1-04), and
``work.reprioritize`` for a new urgency or deadline (R0-12, R11.1-07). What the server does not
take is answered with the WorkItem page again, the reason in words and the typed text kept in
its form (issue 34 §3); a person whose membership is gone gets their text back on a page that
says nothing of the group.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, path, reverse
from django.views.decorators.http import require_POST

from apps.ledger.write_path import Outcome
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.work.priorities import REPRIORITIZE

from .decision_forms import NotSent, decide, membership_or_none, not_a_member
from .item_forms import EscalateForm, MessageForm, escalation_body, message_body
from .item_names import item_named
from .refusal_words import plain_refusal
from .work_views import item_page_response

MESSAGE_LABELS = {"text": "message"}
ESCALATE_LABELS = {
    "reason": "reason for the change",
    "urgency": "new urgency",
    "deadline": "new deadline",
}


def _again(request: HttpRequest, group: str, work_item: str) -> Any:
    def again(not_sent: NotSent, status: int) -> HttpResponse:
        membership = membership_or_none(request, group)
        if membership is None:
            return not_a_member(request, not_sent.typed)
        return item_page_response(request, membership, work_item, not_sent=not_sent, status=status)

    return again


def message_form_name(in_reply_to: str | None) -> str:
    """Which of the page's message forms was sent: a question's reply form, or the note."""
    return f"reply-{in_reply_to}" if in_reply_to else "note"


def _posted(group: str, body: dict[str, Any], outcome: Outcome) -> str:
    result = outcome.body.get("result") or {}
    if result.get("resolves") is True:
        return "Your answer is recorded, and the question is settled."
    if result.get("resolves") is False:
        return (
            "Your reply is recorded. It does not settle the question: only the coordinator or "
            "a mission owner who did not ask it can."
        )
    return "Your message is recorded in the conversation."


def _message_words(error: ProtocolError) -> str:
    if error.code == ErrorCode.FORBIDDEN:
        return "Your roles in this group let you read the conversation, not post in it."
    return plain_refusal(error)


@login_required
@require_POST
def work_item_message(request: HttpRequest, group: str, work_item: str) -> HttpResponse:
    """``work.message`` as the person: a note, or a reply to a question (R10.1-02..04)."""
    form = MessageForm(request.POST)
    return decide(
        request,
        group,
        form=form,
        labels=MESSAGE_LABELS,
        type_="work.message",
        body=message_body(work_item),
        confirm=_posted,
        words=_message_words,
        again=_again(request, group, work_item),
        back=reverse("dashboard:work-item", args=[group, work_item]),
        form_name=message_form_name(request.POST.get("in_reply_to") or None),
    )


def _escalated(group: str, body: dict[str, Any], outcome: Outcome) -> str:
    result = outcome.body.get("result") or {}
    return (
        f"{item_named(group, body['work_item'])} now asks for urgency {result.get('urgency')}; "
        "its workers reorder their queues at once."
    )


def _escalate_words(error: ProtocolError) -> str:
    details = error.details or {}
    if error.code == ErrorCode.ILLEGAL_TRANSITION and "urgency" in details:
        return "It already has that urgency and deadline: nothing changed."
    if error.code == ErrorCode.ILLEGAL_TRANSITION:
        return "This work has ended, so its priority can no longer change."
    if error.code == ErrorCode.MALFORMED and details.get("path") == "$.deadline":
        return "The new deadline has already passed: choose a later one."
    if error.code == ErrorCode.FORBIDDEN:
        return "Only a coordinator or a mission owner changes the priority of work."
    return plain_refusal(error)


@login_required
@require_POST
def work_item_escalate(request: HttpRequest, group: str, work_item: str) -> HttpResponse:
    """``work.reprioritize`` as the person: a new urgency and/or deadline, with the reason
    (R0-12, R11.3-11, R11.1-07)."""
    return decide(
        request,
        group,
        form=EscalateForm(request.POST),
        labels=ESCALATE_LABELS,
        type_=REPRIORITIZE,
        body=escalation_body(work_item),
        confirm=_escalated,
        words=_escalate_words,
        again=_again(request, group, work_item),
        back=reverse("dashboard:work-item", args=[group, work_item]),
        form_name="escalate",
    )


urlpatterns: list[URLPattern] = [
    path(
        "groups/<str:group>/work-items/<str:work_item>/message/",
        work_item_message,
        name="work-item-message",
    ),
    path(
        "groups/<str:group>/work-items/<str:work_item>/escalate/",
        work_item_escalate,
        name="work-item-escalate",
    ),
]
