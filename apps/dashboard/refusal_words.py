"""A refusal as a person reads it (issue 34 §6): what happened and what to do, in words.

The write path refuses with a wire.md §8 error — a code, the protocol's own message, the rule's
R-ID, details — which the API and the logs keep as they are. A person reads a sentence
instead; the code, the rule and the protocol's message go in the page's collapsed technical
details (``partials/flash.html``, ``refused.html``). Every dashboard refusal passes through
:func:`plain_refusal`, so no screen shows ``MALFORMED … (wire§1)``.

Limits are said as limits ("22,000 characters; at most 10,000"), never as an "incomplete" form.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import forms

from missionweave.protocol.errors import ErrorCode, ProtocolError

from .names import display_name

#: the sentence for each code, when the error's details add nothing a person needs
_SENTENCES: Mapping[ErrorCode, str] = {
    ErrorCode.MALFORMED: "Nothing was sent: part of the form is not valid.",
    ErrorCode.TOO_LARGE: "Nothing was sent: it is larger than the server accepts.",
    ErrorCode.CONTRACT_INVALID: "The contract is not valid.",
    ErrorCode.UNAUTHENTICATED: "You are signed out: sign in again.",
    ErrorCode.NOT_A_MEMBER: "You are not a member of this group (any more).",
    ErrorCode.FORBIDDEN: "Your roles in this group do not allow this.",
    ErrorCode.STALE_MEMBERSHIP: "Your roles in this group changed while the page was open: "
    "reload it and try again.",
    ErrorCode.APPROVAL_REQUIRED: "It cannot start yet: it still needs an execution approval.",
    ErrorCode.SELF_APPROVAL: "You asked for this work, so another mission owner decides it.",
    ErrorCode.NOT_FOUND: "It no longer exists, or was never here.",
    ErrorCode.ILLEGAL_TRANSITION: "This is no longer possible: it changed while the page was "
    "open. The page shows it as it is now.",
    ErrorCode.STALE_LEASE: "The worker's hold on this work has ended.",
    ErrorCode.STALE_OWNERSHIP: "The work has moved to another worker.",
    ErrorCode.STALE_REVISION: "The contract changed while the page was open: read the new "
    "revision before you decide.",
    ErrorCode.OFFER_EXPIRED: "The offer has expired.",
    ErrorCode.OFFER_WITHDRAWN: "The offer was withdrawn.",
    ErrorCode.DUPLICATE_COMMAND_ID: "This form was already sent once with different contents: "
    "reload the page and send it again.",
    ErrorCode.DEPENDENCY_CYCLE: "That would make the work depend on itself.",
    ErrorCode.DEPENDENCY_UNMET: "It waits for work it depends on.",
    ErrorCode.BUDGET_EXCEEDED: "That would go over a budget.",
    ErrorCode.EVIDENCE_MISSING: "Give a verdict on every criterion first.",
    ErrorCode.ARTIFACT_CORRUPTED: "A stored file no longer matches what was recorded.",
    ErrorCode.DUPLICATE_APPROVAL: "This revision was already decided: nobody decides it twice.",
    ErrorCode.RATE_LIMITED: "Too many requests: wait a moment and try again.",
    ErrorCode.ALREADY_EXISTS: "That already exists.",
    ErrorCode.UNAVAILABLE: "The server is briefly unavailable: nothing was recorded; try again.",
    ErrorCode.STORAGE_FULL: "The server's storage is full: nothing was recorded.",
    ErrorCode.REVIEW_RESERVED: "Someone else is reviewing this now: only they can decide it.",
    ErrorCode.CHECKS_PENDING: "The authority is still checking the submission: it can be "
    "accepted once its checks have passed.",
    ErrorCode.CHECKS_FAILED: "The authority's check of the submission failed, so it cannot be "
    "accepted: send it back instead.",
}
_FALLBACK = "The server refused it; nothing was recorded."


def _refused_execution(details: Mapping[str, Any]) -> str | None:
    refusal = details.get("refusal")
    if not isinstance(refusal, Mapping):
        return None
    who = display_name(refusal.get("principal"))
    comment = str(refusal.get("comment") or "").strip()
    said = f": “{comment}”" if comment else ""
    return (
        f"Execution of this revision was refused by {who}{said}. It waits for a corrected "
        "contract or a cancel."
    )


def _reserved(details: Mapping[str, Any]) -> str | None:
    holder = details.get("reserved_by")
    if not isinstance(holder, str):
        return None
    return f"{display_name(holder)} is reviewing this now: only they can decide it."


def plain_refusal(error: ProtocolError) -> str:
    """``error`` as a sentence for the person who caused it; never its code or R-ID."""
    details = error.details or {}
    if error.code == ErrorCode.DUPLICATE_APPROVAL and (said := _refused_execution(details)):
        return said
    if error.code == ErrorCode.APPROVAL_REQUIRED and (said := _refused_execution(details)):
        return said
    if error.code == ErrorCode.REVIEW_RESERVED and (said := _reserved(details)):
        return said
    return _SENTENCES.get(error.code, _FALLBACK)


def count(value: int) -> str:
    """``22000`` -> ``22,000``: how a person reads a limit."""
    return f"{value:,}"


def _field_problem(label: str, error: forms.ValidationError) -> str:
    params = error.params or {}
    if error.code == "max_length" and "limit_value" in params:
        shown = params.get("show_value")
        have = f"{count(int(shown))} characters; " if shown is not None else ""
        return f"The {label} is {have}at most {count(int(params['limit_value']))}."
    if error.code == "required":
        said = " ".join(str(message) for message in error.messages)
        custom = said != str(forms.Field.default_error_messages["required"])
        return f"{said[:1].upper()}{said[1:]}." if custom else f"The {label} is required."
    text = " ".join(str(message) for message in error.messages)
    return f"The {label}: {text}"


def form_problems(form: forms.Form) -> str:
    """Why a form was not sent, field by field, in words ("Nothing was sent: The comment is
    22,000 characters; at most 10,000.")."""
    problems = []
    for name, errors in form.errors.as_data().items():
        field = form.fields.get(name)
        label = str(field.label or name.replace("_", " ")).lower() if field else "form"
        problems.extend(_field_problem(label, error) for error in errors)
    return "Nothing was sent. " + " ".join(problems)
