"""The WorkItem page's own forms: a message in its conversation (a note, or a reply to a
question) and the "Escalate" form (issue 35 §4, §5). They only shape what a person typed; the
write path decides the rest (``work.message``, ``work.reprioritize``)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from django import forms

from missionweave.protocol.contracts import URGENCIES
from missionweave.protocol.identifiers import ID_PATTERN
from missionweave.protocol.timefmt import format_timestamp

#: what a ``datetime-local`` field sends: the minute, no zone (the form says it is UTC)
_LOCAL_MINUTE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}\Z")


class MessageForm(forms.Form):
    """``work.message`` (R10.1-02): a note, or — with ``in_reply_to`` — a reply to a
    question; whether the reply settles the question is the write path's to say."""

    command_id = forms.RegexField(regex=ID_PATTERN, required=False, widget=forms.HiddenInput)
    in_reply_to = forms.RegexField(regex=ID_PATTERN, required=False, widget=forms.HiddenInput)
    text = forms.CharField(max_length=10_000, widget=forms.Textarea(attrs={"rows": 2}))


class EscalateForm(forms.Form):
    """``work.reprioritize`` (R0-12, R11.1-07): a new urgency, a new deadline (UTC, to the
    minute) or both, and why (required: it is kept with the change)."""

    command_id = forms.RegexField(regex=ID_PATTERN, required=False, widget=forms.HiddenInput)
    urgency = forms.ChoiceField(
        required=False, choices=[("", "keep it as it is"), *((u, u) for u in URGENCIES)]
    )
    deadline = forms.RegexField(regex=_LOCAL_MINUTE, required=False)
    reason = forms.CharField(max_length=10_000, widget=forms.Textarea(attrs={"rows": 2}))

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if not cleaned.get("urgency") and not cleaned.get("deadline") and not self.errors:
            raise forms.ValidationError(
                "Choose a new urgency or a new deadline (or both), then send it again.",
                code="nothing_to_change",
            )
        return cleaned


def escalation_body(work_item: str) -> Any:
    """The ``work.reprioritize`` body the form asks for: only the fields the person set."""

    def body(data: dict[str, Any]) -> dict[str, Any]:
        built: dict[str, Any] = {"work_item": work_item, "reason": data["reason"]}
        if data.get("urgency"):
            built["urgency"] = data["urgency"]
        if data.get("deadline"):
            minute = datetime.strptime(data["deadline"], "%Y-%m-%dT%H:%M").replace(tzinfo=UTC)
            built["deadline"] = format_timestamp(minute)
        return built

    return body


def message_body(work_item: str) -> Any:
    def body(data: dict[str, Any]) -> dict[str, Any]:
        built: dict[str, Any] = {"work_item": work_item, "text": data["text"]}
        if data.get("in_reply_to"):
            built["in_reply_to"] = data["in_reply_to"]
        return built

    return body
