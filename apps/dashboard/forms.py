"""Dashboard forms: they only shape what a person typed; the write path decides the rest."""

from __future__ import annotations

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
