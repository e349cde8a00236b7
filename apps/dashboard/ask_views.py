""" "Ask for approval from…" and "Ask for a review from…": one form, one command (issue 36 §4).

The approval and review pages show the form (``partials/ask-form.html``) with the people the
protocol core says may act now; it posts here and goes through the one write path as
``work.ask`` (R10.2-06, R13.2-03), which decides — a person who may no longer act, a revision
that changed, an approval already complete. Once sent, the page again (post/redirect/get) with
"Asked Omar Ortiz for approval."; otherwise the page rendered with the refusal in words, the
note in its form and the people still ticked, so nothing typed is lost with scripts off.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import URLPattern, path, reverse
from django.views.decorators.http import require_POST

from apps.ledger.write_path import Outcome
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.identifiers import ID_PATTERN
from missionweave.protocol.work import asks

from .approval_views import approval_page_response
from .asking import ASK_FORM, FOR_WORDS, REVIEW, ask_body
from .decision_forms import NotSent, decide, membership_or_none, not_a_member, not_sent_page
from .item_names import item_named
from .names import display_name
from .refusal_words import plain_refusal
from .review_views import review_page_response


class AskForm(forms.Form):
    """``work.ask``: what for, the revision or submission the page showed, a short note, and
    the people chosen (the repeated ``asked`` field: checkboxes), at least one."""

    wanted = forms.ChoiceField(choices=[(w, w) for w in asks.ASKS_FOR], widget=forms.HiddenInput)
    contract_revision = forms.IntegerField(min_value=1, required=False, widget=forms.HiddenInput)
    submission = forms.IntegerField(min_value=1, required=False, widget=forms.HiddenInput)
    command_id = forms.RegexField(regex=ID_PATTERN, required=False, widget=forms.HiddenInput)
    note = forms.CharField(required=False, max_length=asks.NOTE_LIMIT, label="note")
    asked = forms.Field(required=False, widget=forms.MultipleHiddenInput)

    def clean_asked(self) -> list[str]:
        return ticked(self.data)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if not cleaned.get("asked"):
            raise forms.ValidationError(NOBODY_TICKED)
        return cleaned


NOBODY_TICKED = "Nothing was sent: choose whom to ask."


def ticked(data: Any) -> list[str]:
    """The people ticked in the posted form."""
    return [principal for principal in data.getlist("asked") if principal]


#: what a person cannot be asked for, by the code their own command would get
_WHY_NOT_ASKED = {
    "NOT_A_MEMBER": "they are not a member of this group",
    "FORBIDDEN": "they hold no role that may do it",
    "SELF_APPROVAL": "they asked for this WorkItem or own it",
    "DUPLICATE_APPROVAL": "they have already decided this revision",
}


def ask_words(error: ProtocolError) -> str:
    """A refused ask in a sentence: the person named, and why they cannot be asked."""
    details = error.details or {}
    principal = details.get("principal")
    if error.code == ErrorCode.FORBIDDEN and isinstance(principal, str):
        why = _WHY_NOT_ASKED.get(str(details.get("reason")), "they cannot act on it now")
        return f"{display_name(principal)} cannot be asked: {why}. Nothing was sent."
    if error.code in (ErrorCode.ILLEGAL_TRANSITION, ErrorCode.STALE_REVISION):
        return "It no longer waits for what you asked (the page was out of date): nothing was sent."
    if error.code == ErrorCode.MALFORMED and details.get("path", "").startswith("$.asked"):
        return "Ask someone other than yourself, each person once. Nothing was sent."
    return plain_refusal(error)


def _asked_text(group: str, body: dict[str, Any], outcome: Outcome) -> str:
    people = ", ".join(display_name(p) for p in body["asked"])
    return f"Asked {people} for {FOR_WORDS[body['for']]} of {item_named(group, body['work_item'])}."


def _again(
    request: HttpRequest, group: str, work_item: str, wanted: str
) -> Callable[[NotSent, int], HttpResponse]:
    """The page the form was on (approval or review), the reason in words and the note back
    in the ask form, or beside the reason once that form is gone (issue 34 §3)."""

    def again(not_sent: NotSent, status: int) -> HttpResponse:
        membership = membership_or_none(request, group)
        if membership is None:
            return not_a_member(request, not_sent.typed)
        page = review_page_response if wanted == REVIEW else approval_page_response
        try:
            return page(request, membership, work_item, not_sent=not_sent, status=status)
        except Http404:  # the item or its submission is gone: the note on a page of its own
            return not_sent_page(request, not_sent, status)

    return again


@login_required
@require_POST
def work_item_ask(request: HttpRequest, group: str, work_item: str) -> HttpResponse:
    """Submit ``work.ask`` as the person, for the people they ticked.

    Whatever is not sent (nobody ticked, a person who may no longer act, a revision that
    changed) is answered with the page again, the note in its form and the people still
    ticked (``decision_forms.decide``): never a redirect that drops the note."""
    return decide(
        request,
        group,
        form=AskForm(request.POST),
        labels={"note": "note"},
        type_=asks.ASK,
        body=lambda data: ask_body(work_item, data["wanted"], data),
        confirm=_asked_text,
        words=ask_words,
        again=_again(request, group, work_item, request.POST.get("wanted", "")),
        back=reverse("dashboard:work-item", args=[group, work_item]),
        form_name=ASK_FORM,
        kept={"asked": ticked(request.POST)},
    )


urlpatterns: list[URLPattern] = [
    path(
        "groups/<str:group>/work-items/<str:work_item>/ask/",
        work_item_ask,
        name="work-item-ask",
    ),
]
