"""Add a WorkItem to a mission from its Work Contract (issue 36 §5; ``work.authorize``,
R10.2-02, R10.1-01, R10.4; wire.md §9, §10).

The contract is written in a JSON editor (a monospace textarea, prefilled with the wire.md
§10 example made current: no input to fetch, a deadline a week ahead) and checked by the
protocol core before anything is sent: strict JSON first (wire.md §1), then
``contracts.validate_contract``, which names *every* bad field by its JSON path. Each problem
is shown under the editor as ``$.budgets.tokens: expected a number of at least 0``, the text
kept exactly as typed. Only a valid contract is submitted, as the person, through the one
write path, which decides again (a contract's inputs must be stored and nameable, a dependency
must not close a cycle, the mission must be active); its refusals land next to the fields
they name too.

Who may add work is the command table's: ``work.authorize`` is a coordinator's (wire.md §9).
Anyone else is told so in words on the page, with no form.
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import replace
from datetime import timedelta
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.text import slugify
from django.views.decorators.http import require_http_methods

from apps.registry.models import Membership
from apps.work.models import Mission, WorkItem
from missionweave.protocol import strictjson
from missionweave.protocol.contracts import validate_contract
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.examples import example_contract
from missionweave.protocol.identifiers import ID_PATTERN
from missionweave.protocol.timefmt import format_timestamp

from .access import access_membership
from .action_forms import (
    FieldProblem,
    field_problems,
    mark_fields,
    may,
    short_id_field,
    who_can,
)
from .actions import new_command_id, submit_form_command
from .decision_forms import membership_or_none, not_a_member, typed_from
from .refusal_words import plain_refusal

AUTHORIZE = "work.authorize"
#: the longest contract the editor takes (a contract's notes may be 100,000 characters)
CONTRACT_LIMIT = 200_000
#: a mission's WorkItems offered as dependencies (the newest first)
DEPENDENCY_CHOICES = 200
TYPED = (("contract", "contract"), ("work_item", "short id"))
_FIELD_OF_PATH = {"$.work_item": "work_item", "$.depends_on": "depends_on"}


class AddWorkItemForm(forms.Form):
    """``work.authorize``: the contract as typed, an optional id, the WorkItems it waits on."""

    command_id = forms.RegexField(regex=ID_PATTERN, required=False, widget=forms.HiddenInput)
    contract = forms.CharField(
        label="Work Contract (JSON)",
        max_length=CONTRACT_LIMIT,
        strip=False,
        widget=forms.Textarea(
            {
                "rows": 28,
                "class": "contract-editor",
                "spellcheck": "false",
                "autocapitalize": "off",
                "autocomplete": "off",
                "aria-describedby": "contract-hint contract-problems",
            }
        ),
    )
    work_item = short_id_field()
    depends_on = forms.MultipleChoiceField(
        label="Waits for", required=False, widget=forms.CheckboxSelectMultiple
    )

    def __init__(self, *args: Any, dependencies: list[tuple[str, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["depends_on"].choices = dependencies


def starting_contract(goal: str) -> str:
    """The editor's first text: the wire.md §10 example, valid now — about this mission's goal,
    no input to fetch, a deadline a week ahead — pretty-printed to edit."""
    contract = example_contract(
        goal=goal[:500],
        inputs=[],
        deadline=format_timestamp(timezone.now() + timedelta(days=7)),
    )
    return json.dumps(contract, indent=2, ensure_ascii=False)


def work_item_id_for(mission: str, goal: object) -> str:
    """``<mission>-<goal slug>-<4 hex>``, at most 128 characters (wire.md ids)."""
    stem = slugify(str(goal))[:40].strip("-") or "work"
    return f"{mission[:70]}-{stem}-{secrets.token_hex(2)}"


def _mission_or_404(group: str, mission: str) -> Mission:
    found = Mission.objects.filter(group_id=group, mission_id=mission).first()
    if found is None:
        raise Http404("no such mission")
    return found


def _dependencies(group: str, mission: str) -> list[tuple[str, str]]:
    rows = (
        WorkItem.objects.filter(group_id=group, mission=mission)
        .order_by("-id")
        .values_list("work_item_id", "title", "state")[:DEPENDENCY_CHOICES]
    )
    return [(ident, f"{title or ident} ({state})") for ident, title, state in rows]


def line_of(text: str, path: str) -> int | None:
    """The line of ``text`` where the field ``path`` (``$.budgets.tokens``) is written, found
    by its keys in order — after ``[n]``, the key's n+1-th occurrence, as in an array of like
    objects — so a problem can say where to look; ``None`` when a key is not written."""
    position, skip = 0, 0
    for key, index in re.findall(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]", path):
        if index:
            skip = int(index)
            continue
        for _ in range(skip + 1):
            found = text.find(f'"{key}"', position)
            if found < 0:
                return None
            position = found + 1
        skip = 0
    return text.count("\n", 0, position) + 1 if position else None


def contract_problems(text: str) -> tuple[dict[str, Any] | None, list[FieldProblem]]:
    """The contract parsed and checked by the protocol core, or what is wrong with it: not
    JSON (strict, wire.md §1), or each bad field by its path (``validate_contract``)."""
    try:
        value = strictjson.parse(text)
    except ProtocolError as error:
        said = error.message.removeprefix("not JSON: ")
        return None, [FieldProblem("$", f"this is not valid JSON: {said}")]
    try:
        validate_contract(value, path="$")
    except ProtocolError as error:
        return None, field_problems(error)
    return value, []


def _page(
    request: HttpRequest,
    membership: Membership,
    mission: Mission,
    form: AddWorkItemForm,
    *,
    problems: list[FieldProblem] = (),  # type: ignore[assignment]
    refusal: ProtocolError | None = None,
    words: str = "",
    status: int = 200,
) -> HttpResponse:
    allowed = mission.state == "active" and may(request, membership.group_id, AUTHORIZE)
    context = {
        "group": membership.group,
        "mission": mission,
        "form": form,
        "allowed": allowed,
        "who_can": who_can(AUTHORIZE, "add WorkItems", membership.roles),
        "problems": problems,
        "refusal": refusal,
        "words": words,
    }
    return render(request, "dashboard/actions/add-work-item.html", context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def work_item_add(request: HttpRequest, group: str, mission: str) -> HttpResponse:
    """The contract editor (GET), or ``work.authorize`` of a checked contract as the person
    (POST), then the new WorkItem's page."""
    if request.method == "GET":
        membership = access_membership(request, group)
        found = _mission_or_404(group, mission)
        initial = {"command_id": new_command_id(), "contract": starting_contract(found.goal)}
        form = AddWorkItemForm(initial=initial, dependencies=_dependencies(group, mission))
        return _page(request, membership, found, form)
    membership_row = membership_or_none(request, group)
    if membership_row is None:
        return not_a_member(request, typed_from(request.POST, TYPED))
    found = _mission_or_404(group, mission)
    form = AddWorkItemForm(request.POST, dependencies=_dependencies(group, mission))
    if not form.is_valid():
        words = "Nothing was sent: correct what is marked below."
        return _page(request, membership_row, found, form, words=words, status=400)
    contract, problems = contract_problems(form.cleaned_data["contract"])
    if contract is None:
        words = "Nothing was sent: the contract is not valid. Each problem is listed under it."
        return _again(request, membership_row, found, form, problems, words=words, status=400)
    work_item = form.cleaned_data.get("work_item") or work_item_id_for(mission, contract["goal"])
    body = {
        "work_item": work_item,
        "mission": mission,
        "contract": contract,
        "depends_on": list(form.cleaned_data.get("depends_on") or []),
    }
    try:
        submit_form_command(request, group, AUTHORIZE, body, form.cleaned_data)
    except ProtocolError as error:
        return _refused(request, membership_row, found, form, error)
    messages.success(request, f"Added the WorkItem “{contract['goal']}” to the mission.")
    return HttpResponseRedirect(reverse("dashboard:work-item", args=[group, work_item]))


def _again(
    request: HttpRequest,
    membership: Membership,
    mission: Mission,
    form: AddWorkItemForm,
    problems: list[FieldProblem],
    *,
    words: str,
    status: int,
    refusal: ProtocolError | None = None,
) -> HttpResponse:
    """The page again with the typed text and a fresh command id (the corrected form is a
    new command, not a replay of the refused one)."""
    form.data = form.data.copy()
    form.data["command_id"] = new_command_id()
    typed = str(form.data.get("contract", ""))
    located = [replace(p, line=line_of(typed, p.path)) for p in problems]
    return _page(
        request,
        membership,
        mission,
        form,
        problems=located,
        refusal=refusal,
        words=words,
        status=status,
    )


def _refused(
    request: HttpRequest,
    membership: Membership,
    mission: Mission,
    form: AddWorkItemForm,
    error: ProtocolError,
) -> HttpResponse:
    """The write path's refusal: a contract field's problem under the editor (its path
    without the ``$.contract`` prefix), an id or a dependency beside its field, the rest
    said above the form."""
    problems = [
        FieldProblem("$" + problem.path.removeprefix("$.contract"), problem.message)
        for problem in field_problems(error)
        if problem.path.startswith("$.contract")
    ]
    placed = mark_fields(form, error, _FIELD_OF_PATH)
    if error.code == ErrorCode.FORBIDDEN:
        words = who_can(AUTHORIZE, "add WorkItems", membership.roles)
    elif error.code == ErrorCode.DEPENDENCY_CYCLE:
        cycle = " → ".join((error.details or {}).get("cycle", []))
        words = f"Nothing was sent: that would make the work wait for itself ({cycle})."
    elif "already exists" in error.message:
        words = "A WorkItem with this short id already exists: choose another, or leave it empty."
        form.add_error("work_item", "already taken")
    elif problems or placed:
        words = "Nothing was sent: correct what is marked below."
    else:
        words = plain_refusal(error)
    return _again(
        request,
        membership,
        mission,
        form,
        problems,
        words=words,
        status=error.status,
        refusal=error,
    )


urlpatterns: list[URLPattern] = [
    path(
        "groups/<str:group>/missions/<str:mission>/add-work-item/",
        work_item_add,
        name="work-item-add",
    ),
]
