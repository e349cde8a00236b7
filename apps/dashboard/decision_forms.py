"""Decision forms that never lose what a person typed (issue 34 §3).

Approving an execution, refusing it, approving a mission and judging a submission are forms
a person may spend minutes on. When the server does not act on one — the text is over a
limit, someone else decided first, the contract changed, their membership was revoked — the
answer is the page again with the reason in words and the typed text kept: in the form when
it can still succeed, beside the page as "not sent" text when it cannot. Never a bare 404,
and never a redirect that drops the text. The write path decides every command; this module
only shapes the answer.

A person whose membership is gone gets a page of its own (status 404, as every page of a
group they may not see: wire.md §4): it says nothing of the group, only that nothing was
recorded, and gives their own text back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django import forms
from django.contrib import messages
from django.core.exceptions import NON_FIELD_ERRORS
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render

from apps.ledger.write_path import Outcome
from apps.registry.models import Membership
from missionweave.protocol.errors import ProtocolError

from .access import access_membership
from .actions import return_to, submit_form_command
from .refusal_words import count

#: the longest text a command carries (``validation.check_text``)
TEXT_LIMIT = 10_000


def too_long(what: str, length: int, limit: int = TEXT_LIMIT) -> str:
    """A limit stated as one: "Your comment is 22,000 characters; at most 10,000."."""
    return (
        f"{what} is {count(length)} characters; at most {count(limit)}. "
        "Shorten it and send it again."
    )


@dataclass(frozen=True)
class Typed:
    """One text field as the person typed it, with the label the page gives it."""

    name: str
    label: str
    text: str


@dataclass(frozen=True)
class NotSent:
    """A form the server did not act on: why, in words, and what the person typed."""

    reason: str
    typed: tuple[Typed, ...] = ()
    error: ProtocolError | None = None
    #: which form of the page it was (the page keeps its text in that form, if it shows)
    form: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def text(self, name: str) -> str:
        return next((t.text for t in self.typed if t.name == name), "")

    @property
    def any_text(self) -> bool:
        return any(t.text for t in self.typed)


def typed_from(data: Any, fields: Sequence[tuple[str, str]]) -> tuple[Typed, ...]:
    """The text fields ``(name, label)`` as posted."""
    return tuple(Typed(name, label, str(data.get(name, ""))) for name, label in fields)


def form_problem(form: forms.Form, labels: dict[str, str]) -> str:
    """Why a form was not sent, in words: a limit as a limit, a missing field by its label."""
    problems = []
    for name in form.errors:
        if name == NON_FIELD_ERRORS:  # the form's own sentence, written for a person
            problems.extend(str(message) for message in form.errors[name])
            continue
        value = str(form.data.get(name, ""))
        field_ = form.fields.get(name)
        limit = getattr(field_, "max_length", None)
        label = labels.get(name, name.replace("_", " "))
        if limit and len(value) > limit:
            problems.append(too_long(f"Your {label}", len(value), limit))
        elif name in labels and not value.strip():
            problems.append(f"Your {label} is empty: write it, then send it again.")
        else:
            problems.append("The page was out of date: reload it and try again.")
    return " ".join(dict.fromkeys(problems))


def membership_or_none(request: HttpRequest, group: str) -> Membership | None:
    try:
        return access_membership(request, group)
    except Http404:
        return None


def not_a_member(request: HttpRequest, typed: Sequence[Typed]) -> HttpResponse:
    """The answer to a form posted to a group the person is not (any more) a member of."""
    reason = "You are not a member of this group (any more), so nothing you sent was recorded."
    return not_sent_page(request, NotSent(reason, tuple(typed)), 404)


def not_sent_page(request: HttpRequest, not_sent: NotSent, status: int) -> HttpResponse:
    """A page of its own for a form whose page is gone: the reason and the text to copy."""
    return render(request, "dashboard/not-sent.html", {"not_sent": not_sent}, status=status)


def decide(
    request: HttpRequest,
    group: str,
    *,
    form: forms.Form,
    labels: dict[str, str],
    type_: str,
    body: Callable[[dict[str, Any]], dict[str, Any]],
    confirm: Callable[[str, dict[str, Any], Outcome], str],
    words: Callable[[ProtocolError], str],
    again: Callable[[NotSent, int], HttpResponse],
    back: str,
    form_name: str = "",
    kept: dict[str, Any] | None = None,
) -> HttpResponse:
    """Submit the form's command as the person; on success flash ``confirm(group, body,
    outcome)`` (which names the work by its goal) and go back
    (post/redirect/get); otherwise ``again(not_sent, status)``: the page, the reason from
    ``words`` and the typed text (``labels`` names the text fields; ``kept``, what else the
    page puts back, such as the people ticked)."""
    typed = typed_from(request.POST, list(labels.items()))
    extra = kept or {}
    if membership_or_none(request, group) is None:
        return not_a_member(request, typed)
    if not form.is_valid():
        return again(NotSent(form_problem(form, labels), typed, None, form_name, extra), 400)
    submitted = body(form.cleaned_data)
    try:
        outcome = submit_form_command(request, group, type_, submitted, form.cleaned_data)
    except ProtocolError as error:
        return again(NotSent(words(error), typed, error, form_name, extra), error.status)
    messages.success(request, confirm(group, submitted, outcome))
    return HttpResponseRedirect(return_to(request, back))
