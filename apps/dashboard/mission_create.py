"""Create a mission from the dashboard (issue 36 §5; ``mission.create``, R10.2-01, wire.md §9).

A mission owner (or a coordinator: the command table's roles) writes the goal and the
budgets; each budget left empty is unlimited (wire.md §10). The id is made from the goal
unless the person gives one. The write path decides; a refusal is the page again with the
reason in words, each problem next to the field its JSON path names (``$.budgets.tokens``
is the tokens field), and everything typed still in the form. On success the person lands
on the new mission's page (post/redirect/get).
"""

from __future__ import annotations

import secrets
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import URLPattern, path, reverse
from django.utils.text import slugify
from django.views.decorators.http import require_http_methods

from apps.registry.models import Membership
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.identifiers import ID_PATTERN

from .access import access_membership
from .action_forms import mark_fields, may, short_id_field, who_can
from .actions import new_command_id, submit_form_command
from .decision_forms import membership_or_none, not_a_member, typed_from
from .refusal_words import plain_refusal

CREATE = "mission.create"
#: the budget dimensions (wire.md §10) as the form asks them: field, label, hint
BUDGETS: tuple[tuple[str, str, str], ...] = (
    ("money", "Money", "in the group's currency"),
    ("tokens", "Model tokens", "count"),
    ("tool_calls", "Tool calls", "count"),
    ("compute", "Compute", "seconds"),
    ("wall_clock", "Wall-clock time", "seconds"),
    ("side_effects", "Side effects", "count: actions that change something outside"),
)
_WHOLE = {"tokens", "tool_calls", "side_effects"}
#: where a refusal's JSON path points on this form
FIELD_OF_PATH = {
    "$.goal": "goal",
    "$.mission": "mission",
    "$.budgets": "money",
    **{f"$.budgets.{name}": name for name, _label, _hint in BUDGETS},
}
TYPED = (("goal", "goal"), ("mission", "short id"))


def _budget_field(name: str, label: str) -> forms.Field:
    attrs = {"inputmode": "numeric" if name in _WHOLE else "decimal", "placeholder": "no limit"}
    if name in _WHOLE:
        return forms.IntegerField(
            label=label, min_value=0, required=False, widget=forms.NumberInput(attrs)
        )
    return forms.FloatField(
        label=label, min_value=0, required=False, widget=forms.NumberInput({**attrs, "step": "any"})
    )


class MissionCreateForm(forms.Form):
    """``mission.create``: the goal, an optional id, and a limit per budget dimension."""

    command_id = forms.RegexField(regex=ID_PATTERN, required=False, widget=forms.HiddenInput)
    goal = forms.CharField(
        label="Goal",
        max_length=10_000,
        widget=forms.Textarea({"rows": 3, "placeholder": "What the mission is to achieve"}),
    )
    mission = short_id_field()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name, label, _hint in BUDGETS:
            self.fields[name] = _budget_field(name, label)

    def budget_fields(self) -> list[tuple[forms.BoundField, str]]:
        return [(self[name], hint) for name, _label, hint in BUDGETS]


#: the goal's first words an id made from it keeps, cut at a word, at most this long: the id
#: appears in links, breadcrumbs and every WorkItem's id ("…-gather"), where the goal is
#: shown beside it anyway
ID_STEM_CHARS = 28


def mission_id_for(goal: str) -> str:
    """A readable id made from the goal's first words, unique enough not to meet another:
    ``m-summarise-the-incident-3f9a1c``."""
    slug = slugify(goal)
    stem = ""
    for word in slug.split("-"):
        longer = f"{stem}-{word}" if stem else word
        if len(longer) > ID_STEM_CHARS:
            break
        stem = longer
    stem = stem or slug[:ID_STEM_CHARS].strip("-") or "mission"
    return f"m-{stem}-{secrets.token_hex(3)}"


def mission_body(data: dict[str, Any]) -> dict[str, Any]:
    """The command's body: only the budgets the person limited (an absent one is unlimited)."""
    budgets = {name: data[name] for name, _l, _h in BUDGETS if data.get(name) is not None}
    return {
        "mission": data.get("mission") or mission_id_for(data["goal"]),
        "goal": data["goal"],
        "budgets": budgets,
    }


def _page(
    request: HttpRequest,
    membership: Membership,
    form: MissionCreateForm,
    *,
    refusal: ProtocolError | None = None,
    words: str = "",
    status: int = 200,
) -> HttpResponse:
    group = membership.group
    allowed = may(request, group.id, CREATE)
    context = {
        "group": group,
        "form": form,
        "allowed": allowed,
        "who_can": "" if allowed else who_can(CREATE, "create missions", membership.roles),
        "refusal": refusal,
        "words": words,
    }
    return render(request, "dashboard/mission/create.html", context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def mission_create(request: HttpRequest, group: str) -> HttpResponse:
    """The form (GET), or ``mission.create`` as the person (POST), then the new mission."""
    if request.method == "GET":
        membership = access_membership(request, group)
        form = MissionCreateForm(initial={"command_id": new_command_id()})
        return _page(request, membership, form)
    membership_row = membership_or_none(request, group)
    if membership_row is None:
        return not_a_member(request, typed_from(request.POST, TYPED))
    form = MissionCreateForm(request.POST)
    if not form.is_valid():
        words = "Nothing was sent: correct the fields marked below."
        return _page(request, membership_row, form, words=words, status=400)
    body = mission_body(form.cleaned_data)
    try:
        submit_form_command(request, group, CREATE, body, form.cleaned_data)
    except ProtocolError as error:
        return _refused(request, membership_row, form, error)
    messages.success(request, f"Created the mission “{body['goal']}”.")
    return HttpResponseRedirect(reverse("dashboard:mission", args=[group, body["mission"]]))


def _refused(
    request: HttpRequest, membership: Membership, form: MissionCreateForm, error: ProtocolError
) -> HttpResponse:
    """The page again: the reason in words, each named field's problem beside it, what was
    typed kept (the bound form), and a fresh command id so the corrected form is new."""
    placed = mark_fields(form, error, FIELD_OF_PATH)
    if error.code == ErrorCode.FORBIDDEN:
        words = who_can(CREATE, "create missions", membership.roles)
    elif error.code == ErrorCode.ALREADY_EXISTS or "already exists" in error.message:
        words = "A mission with this short id already exists: choose another, or leave it empty."
        form.add_error("mission", "already taken")
    elif placed:
        words = "Nothing was sent: correct the fields marked below."
    else:
        words = plain_refusal(error)
    form.data = form.data.copy()
    form.data["command_id"] = new_command_id()
    return _page(request, membership, form, refusal=error, words=words, status=error.status)


urlpatterns: list[URLPattern] = [
    path("groups/<str:group>/new-mission/", mission_create, name="mission-create"),
]
