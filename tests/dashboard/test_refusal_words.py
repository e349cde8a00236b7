"""Refusals as a person reads them (``apps/dashboard/refusal_words.py``, issue 34 §6): a
sentence, never the code or the rule; a limit said as a limit."""

from __future__ import annotations

import pytest
from django import forms

from apps.dashboard.refusal_words import form_problems, plain_refusal
from missionweave.protocol.errors import ErrorCode, ProtocolError
from tests.dashboard.plain_words import JARGON


class _Comment(forms.Form):
    comment = forms.CharField(max_length=10_000)
    reason = forms.CharField()


@pytest.mark.parametrize("code", list(ErrorCode))
def test_every_code_reads_as_a_sentence_without_protocol_words(code: ErrorCode) -> None:
    said = plain_refusal(ProtocolError(code, f"{code.value}: user:x (wire§1) R10.2-06"))
    assert said.endswith((".", "!"))
    for pattern in JARGON.values():
        assert not pattern.search(said), (code, said)


def test_a_long_comment_is_told_its_limit_not_called_incomplete() -> None:
    form = _Comment({"comment": "x" * 22_000, "reason": ""})
    assert not form.is_valid()
    said = form_problems(form)
    assert "The comment is 22,000 characters; at most 10,000." in said
    assert "The reason is required." in said
    assert "incomplete" not in said


def test_a_refused_execution_names_who_refused_and_why(db: None) -> None:
    error = ProtocolError(
        ErrorCode.DUPLICATE_APPROVAL,
        "revision 1 of wi-1 was refused by user:olga: too broad",
        details={"refusal": {"principal": "user:olga", "comment": "too broad"}},
    )
    assert plain_refusal(error) == (
        "Execution of this revision was refused by olga: “too broad”. It waits for a "
        "corrected contract or a cancel."
    )


def test_a_reservation_names_its_holder(db: None) -> None:
    error = ProtocolError(
        ErrorCode.REVIEW_RESERVED, "reserved", details={"reserved_by": "user:rita"}
    )
    assert plain_refusal(error) == "rita is reviewing this now: only they can decide it."
