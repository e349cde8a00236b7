"""The filter forms of the mission and WorkItem lists: they shape the query string into
:mod:`.listings` filters, and say plainly what they could not read (an unknown state, an
owner that is no principal) instead of silently showing everything."""

from __future__ import annotations

from typing import Any

from django import forms

from apps.work.models import MissionStatus
from missionweave.protocol import states as S
from missionweave.protocol.contracts import URGENCIES
from missionweave.protocol.identifiers import ID_PATTERN, is_principal

from .listings import MissionFilters, WorkItemFilters

ANY = ("", "any")


def _principal(value: str) -> None:
    """wire.md §2: an owner is ``agent:<id>`` or ``user:<username>``."""
    if value and not is_principal(value):
        raise forms.ValidationError("Choose an owner from the list.")


def _choices(values: tuple[str, ...]) -> list[tuple[str, str]]:
    return [ANY, *((value, value) for value in values)]


class _Filters(forms.Form):
    q = forms.CharField(
        required=False,
        max_length=200,
        strip=True,
        label="Search",
        widget=forms.TextInput(attrs={"type": "search", "placeholder": "id or title"}),
    )
    owner = forms.CharField(required=False, max_length=160, strip=True, validators=[_principal])
    urgency = forms.ChoiceField(choices=_choices(URGENCIES), required=False)
    waiting = forms.BooleanField(required=False, label="Waiting on me")

    def cleaned(self) -> dict[str, Any]:
        """The valid filters (an invalid field narrows nothing; its error is shown)."""
        data = dict(self.cleaned_data) if self.is_bound else {}
        for name in self.errors:
            data.pop(name, None)
        return data


class MissionFilterForm(_Filters):
    state = forms.ChoiceField(choices=_choices(tuple(MissionStatus.values)), required=False)
    ready = forms.BooleanField(required=False, label="Ready for final approval")

    field_order = ("q", "state", "owner", "urgency", "waiting", "ready")

    def filters(self) -> MissionFilters:
        self.is_valid()
        data = self.cleaned()
        return MissionFilters(
            q=data.get("q") or "",
            state=data.get("state") or "",
            owner=data.get("owner") or "",
            urgency=data.get("urgency") or "",
            waiting=bool(data.get("waiting")),
            ready=bool(data.get("ready")),
        )


class WorkItemFilterForm(_Filters):
    state = forms.ChoiceField(choices=_choices(S.STATES), required=False)
    mission = forms.RegexField(
        regex=ID_PATTERN,
        required=False,
        max_length=128,
        error_messages={"invalid": "A mission id, as on the mission's page."},
    )

    field_order = ("q", "state", "owner", "urgency", "mission", "waiting")

    def filters(self) -> WorkItemFilters:
        self.is_valid()
        data = self.cleaned()
        return WorkItemFilters(
            q=data.get("q") or "",
            state=data.get("state") or "",
            owner=data.get("owner") or "",
            urgency=data.get("urgency") or "",
            mission=data.get("mission") or "",
            waiting=bool(data.get("waiting")),
        )
