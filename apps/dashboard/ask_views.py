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
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import URLPattern, path, reverse
from django.views.decorators.http import require_POST

from apps.ledger.write_path import Outcome
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.identifiers import ID_PATTERN
from missionweave.protocol.work import asks

from .actions import return_to, submit_form_command
from .approval_views import approval_page_response
from .asking import ASK_FORM, FOR_WORDS, REVIEW, ask_body
from .decision_forms import (
    NotSent,
    membership_or_none,
    not_a_member,
    not_sent_page,
    typed_from,
)
from .names import display_name
from .refusal_words import form_problems, plain_refusal
from .review_views import review_page_response


class AskForm(forms.Form):
    """``work.ask``: what for, the revision or submission the page showed, a short note. The
    people chosen come as the repeated ``asked`` field (checkboxes)."""

    wanted = forms.ChoiceField(choices=[(w, w) for w in asks.ASKS_FOR], widget=forms.HiddenInput)
    contract_revision = forms.IntegerField(min_value=1, required=False, widget=forms.HiddenInput)
    submission = forms.IntegerField(min_value=1, required=False, widget=forms.HiddenInput)
    command_id = forms.RegexField(regex=ID_PATTERN, required=False, widget=forms.HiddenInput)
    note = forms.CharField(required=False, max_length=asks.NOTE_LIMIT, label="note")


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


def _asked_text(body: dict[str, Any], outcome: Outcome) -> str:
    people = ", ".join(display_name(p) for p in body["asked"])
    return f"Asked {people} for {FOR_WORDS[body['for']]} of {body['work_item']}."


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
    changed) is answered with the page again: never a redirect that drops the note."""
    typed = typed_from(request.POST, [("note", "note")])
    if membership_or_none(request, group) is None:
        return not_a_member(request, typed)
    form = AskForm(request.POST)
    wanted = request.POST.get("wanted", "")
    again = _again(request, group, work_item, wanted)
    chosen = [p for p in request.POST.getlist("asked") if p]
    ticked = {"asked": chosen}
    if not form.is_valid() or not chosen:
        words = form_problems(form) if form.errors else "Nothing was sent: choose whom to ask."
        return again(NotSent(words, typed, None, ASK_FORM, ticked), 400)
    data = {**form.cleaned_data, "asked": chosen}
    body = ask_body(work_item, form.cleaned_data["wanted"], data)
    try:
        outcome = submit_form_command(request, group, asks.ASK, body, form.cleaned_data)
    except ProtocolError as error:
        if error.status == 404:
            raise Http404(error.message) from error
        return again(NotSent(ask_words(error), typed, error, ASK_FORM, ticked), error.status)
    messages.success(request, _asked_text(body, outcome))
    default = reverse("dashboard:work-item", args=[group, work_item])
    return HttpResponseRedirect(return_to(request, default))


urlpatterns: list[URLPattern] = [
    path(
        "groups/<str:group>/work-items/<str:work_item>/ask/",
        work_item_ask,
        name="work-item-ask",
    ),
]
