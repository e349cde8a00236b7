"""Why a person may not judge a submission, in words (issue 34 §6).

The write path and the protocol core decide (``preview.refusal``; ``acceptance_refusal``
for what holds an acceptance, R13.2-03); this module only says their answer as a sentence a
person acts on, with what the review screen knows (which check, whose reservation); any other
refusal is said as everywhere on the dashboard (``refusal_words.plain_refusal``). Codes and
requirement ids stay out of the sentence: a page puts them in its collapsed technical
details. Pure: the screens pass what they know.
"""

from __future__ import annotations

from collections.abc import Sequence

from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.work.assessment import INTEGRITY

from .refusal_words import plain_refusal
from .role_words import holders, one_holder, words

#: refusals that only hold a decision for now: the button shows, disabled, with the reason
WAITING = frozenset({ErrorCode.REVIEW_RESERVED, ErrorCode.CHECKS_PENDING, ErrorCode.CHECKS_FAILED})

#: what each review action is, in a sentence ("Only coordinators … <verb>")
_VERBS = {
    "work.accept_result": "accept a result",
    "work.fail": "send a submission back",
    "evidence.record": "record verdicts",
    "review.reserve": "reserve a review",
}


def roles_text(roles: Sequence[str]) -> str:
    """ "a reviewer and an observer" (a role the table does not name is said as it is)."""
    named = [one_holder(role) for role in roles]
    return words(named) or "a member without a role"


def check_names(criteria: Sequence[str]) -> str:
    """The authority's checks as a person reads them: the integrity check is "the artifacts'
    integrity and output schemas", a criterion is "criterion c1"."""
    named = [
        "the artifacts' integrity and output schemas"
        if criterion == INTEGRITY
        else f"criterion {criterion}"
        for criterion in criteria
    ]
    return words(named)


def _listed(details: dict[str, object] | None, key: str) -> list[str]:
    value = (details or {}).get(key)
    return [str(v) for v in value] if isinstance(value, list) else []


def refusal_text(
    refusal: ProtocolError, *, command: str, roles: Sequence[str], state: str = ""
) -> str:
    """``refusal`` of the person's ``command`` on a submission, as a sentence.

    ``REVIEW_RESERVED`` is said by the page itself (it names the holder and the time with
    the page's own helpers); here it is only the fallback sentence."""
    code = refusal.code
    if code == ErrorCode.CHECKS_PENDING:
        pending = _listed(refusal.details, "pending")
        return (
            f"The authority is still checking {check_names(pending) or 'the submission'}. "
            "The result can be accepted once its checks have passed; this page updates when "
            "they land."
        )
    if code == ErrorCode.CHECKS_FAILED:
        failed = _listed(refusal.details, "failed")
        return (
            f"The authority's check of {check_names(failed) or 'the submission'} failed, so "
            "the result cannot be accepted: send it back instead."
        )
    if code == ErrorCode.REVIEW_RESERVED:
        return "Someone else is reviewing this submission now: only they can decide it."
    if code == ErrorCode.SELF_APPROVAL:
        return "You own this WorkItem: its owner never judges its own work."
    if code == ErrorCode.FORBIDDEN:
        allowed = _listed(refusal.details, "allowed_roles")
        if allowed:
            many = words([holders(role) for role in allowed])
            verb = _VERBS.get(command, "do this")
            return f"Only {many} {verb}; you are {roles_text(roles)} in this group."
        if "human_review" in refusal.message:
            return (
                "A criterion judged by a person (human review) is accepted only by a mission "
                "owner who is a person."
            )
        return "Only a person may do this."
    if code == ErrorCode.ILLEGAL_TRANSITION:
        if state and state != "submitted":
            return f"This submission is no longer waiting for review: the WorkItem is {state}."
        return "This is not possible on the submission as it is now: reload the page."
    return plain_refusal(refusal)
