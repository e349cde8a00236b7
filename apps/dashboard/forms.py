"""Dashboard forms: they only shape what a person typed; the write path decides the rest."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms

from missionweave.protocol.identifiers import ID_PATTERN


class GrantExecutionForm(forms.Form):
    """``approval.grant_execution`` (R10.2-06) from the page that showed the WorkItem.

    ``contract_revision`` is the revision the page showed, not the current one: a person who
    approves what they saw on a stale page gets STALE_REVISION (R10.1-05), never an approval
    of a contract they have not read.
    """

    contract_revision = forms.IntegerField(min_value=1, widget=forms.HiddenInput)
    command_id = forms.RegexField(regex=ID_PATTERN, required=False, widget=forms.HiddenInput)
    comment = forms.CharField(
        required=False,
        max_length=10_000,
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "Why this may run (optional)"}),
    )


class MissionApproveForm(forms.Form):
    """``mission.approve`` (R10.2-16, R10.2-22): a human mission_owner's optional comment.

    The write path refuses a mission with unfinished WorkItems (ILLEGAL_TRANSITION); the form
    does not pre-judge that, the page shows the refusal.
    """

    command_id = forms.RegexField(regex=ID_PATTERN, required=False, widget=forms.HiddenInput)
    comment = forms.CharField(
        required=False,
        max_length=10_000,
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "Comment (optional)"}),
    )


class MissionCancelForm(forms.Form):
    """``mission.cancel`` (R10.2-18): the reason is required, it travels to every unfinished
    WorkItem's ``work.cancelled`` event."""

    command_id = forms.RegexField(regex=ID_PATTERN, required=False, widget=forms.HiddenInput)
    reason = forms.CharField(
        max_length=10_000,
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "Why the mission stops"}),
    )


class RefuseExecutionForm(forms.Form):
    """``approval.refuse_execution`` (R10.2-06) from the execution-approval screen.

    Like the grant, it carries the revision the page showed (STALE_REVISION on a stale page,
    R10.1-05) and the page's command id. Unlike the grant, the comment is required: a refusal
    tells the coordinator what to change. The form says so before anything is sent, and the
    write path refuses an empty one again (MALFORMED).
    """

    contract_revision = forms.IntegerField(min_value=1, widget=forms.HiddenInput)
    command_id = forms.RegexField(regex=ID_PATTERN, required=False, widget=forms.HiddenInput)
    comment = forms.CharField(
        max_length=10_000,
        error_messages={"required": "a refusal says why: write what must change"},
        widget=forms.Textarea(attrs={"rows": 3, "placeholder": "Why it must not run (required)"}),
    )


def revision_decision(work_item: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The body of a decision on the revision a page showed — a grant or a refusal of
    execution (R10.2-06): the WorkItem, that revision, and the person's comment."""
    return lambda data: {
        "work_item": work_item,
        "contract_revision": data["contract_revision"],
        "comment": data["comment"],
    }
