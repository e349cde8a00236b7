"""At the final approval, ask for changes to chosen WorkItems instead of approving (issue 36 §5).

What the protocol allows (wire.md §9; R13.2-03 step 5, R10.2-13, R10.2-19, R10.2-21):

- the chosen **accepted** (``verified``) results go in ONE ``mission.request_changes`` with the
  note: ``verified`` is terminal, so nothing is reopened; the request is kept on the mission,
  whose approval waits until the coordinator has replaced each of them (a new WorkItem with
  ``replaces``) and the replacements have finished. The page says so before anything is sent;
- a result still **submitted** is sent back as before: ``work.fail`` by a human mission owner,
  the note as a ``needs_changes`` verdict (the review screen's "Send back"), so the
  coordinator offers it again. An accepted result already replaced is not listed.

The mission's human owners who may approve it use the page (the write path's
``mission.approve`` roles, asked of ``preview``); each command is sent as the person through
the one write path, under an id derived from the form's own, so a resubmitted form replays.
A refusal is the page again with the reason in words, the note and the ticked items kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import URLPattern, path, reverse
from django.views.decorators.http import require_http_methods

from apps.ledger.write_path import Caller, submit_as_human
from apps.registry.models import Membership
from apps.work.models import Mission, WorkItem
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.identifiers import ID_PATTERN

from .access import access_membership
from .action_forms import may, who_can
from .actions import new_command_id
from .decision_forms import form_problem, membership_or_none, not_a_member, typed_from
from .item_names import item_names
from .refusal_words import plain_refusal

APPROVE = "mission.approve"
SEND_BACK = "work.fail"
REQUEST_CHANGES = "mission.request_changes"
#: the states whose result a note at the final approval is about
CHOOSABLE = ("submitted", "verified")
#: WorkItems listed on the page (a mission's, in the order they were authorised)
LISTED = 500
LABELS = {"note": "note on what must change"}


class SendBackForm(forms.Form):
    command_id = forms.RegexField(regex=ID_PATTERN, required=False, widget=forms.HiddenInput)
    work_items = forms.MultipleChoiceField(
        label="WorkItems that need changes",
        widget=forms.CheckboxSelectMultiple,
        error_messages={"required": "choose at least one WorkItem"},
    )
    note = forms.CharField(
        label="What must change",
        max_length=10_000,
        widget=forms.Textarea({"rows": 4, "maxlength": 10_000}),
    )

    def __init__(self, *args: Any, items: list[WorkItem], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["work_items"].choices = [(i.work_item_id, i.work_item_id) for i in items]


@dataclass(frozen=True)
class Choice:
    """One WorkItem as the page lists it, and what sending it back would do."""

    id: str
    goal: str
    state: str
    checked: bool

    @property
    def consequence(self) -> str:
        if self.state == "submitted":
            return "sent back: the coordinator offers it again"
        return "accepted already: the coordinator replaces it with new work, and the approval waits"


def changes_body(mission: Mission, chosen: list[WorkItem], note: str) -> dict[str, Any]:
    """The one ``mission.request_changes`` for every chosen accepted result (R13.2-03)."""
    ids = [item.work_item_id for item in chosen]
    return {"mission": mission.mission_id, "work_items": ids, "note": note}


def fail_body(item: WorkItem, note: str, principal: str) -> dict[str, Any]:
    """``work.fail`` of a submitted result with the note as a ``needs_changes`` verdict on its
    first criterion (as the review screen's "Send back")."""
    criteria = (item.data or {}).get("contract", {}).get("acceptance_criteria", [])
    first = criteria[0] if criteria else {"id": "review", "method": "human_review"}
    evidence = {
        "criterion": first["id"],
        "method": first.get("method", "human_review"),
        "result": {"verdict": "fail", "summary": note, "data": {"review_verdict": "needs_changes"}},
        "producer": principal,
        "artifacts": [],
    }
    return {"work_item": item.work_item_id, "evidence": [evidence]}


def _mission_or_404(group: str, mission: str) -> Mission:
    found = Mission.objects.filter(group_id=group, mission_id=mission).first()
    if found is None:
        raise Http404("no such mission")
    return found


def _items(group: str, mission: str) -> list[WorkItem]:
    """The mission's submitted results and its accepted ones not replaced yet."""
    rows = WorkItem.objects.filter(group_id=group, mission=mission, state__in=CHOOSABLE)
    return [row for row in rows.order_by("id")[:LISTED] if not row.data.get("replaced_by")]


def _page(
    request: HttpRequest,
    membership: Membership,
    mission: Mission,
    items: list[WorkItem],
    form: SendBackForm,
    *,
    words: str = "",
    refusal: ProtocolError | None = None,
    status: int = 200,
) -> HttpResponse:
    chosen = set(form.data.getlist("work_items")) if form.is_bound else set()
    context = {
        "group": membership.group,
        "mission": mission,
        "form": form,
        "choices": [
            Choice(i.work_item_id, i.title or i.work_item_id, i.state, i.work_item_id in chosen)
            for i in items
        ],
        "allowed": mission.state == "active" and may(request, membership.group_id, APPROVE),
        "who_can": who_can(APPROVE, "ask for changes at the final approval", membership.roles),
        "words": words,
        "refusal": refusal,
    }
    return render(request, "dashboard/actions/send-back.html", context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def mission_send_back(request: HttpRequest, group: str, mission: str) -> HttpResponse:
    """The list of the mission's submitted and accepted WorkItems with a note (GET), or, for
    each chosen one, the command that asks for its changes (POST), then the final approval."""
    if request.method == "GET":
        membership = access_membership(request, group)
        found = _mission_or_404(group, mission)
        items = _items(group, mission)
        form = SendBackForm(initial={"command_id": new_command_id()}, items=items)
        return _page(request, membership, found, items, form)
    membership_row = membership_or_none(request, group)
    if membership_row is None:
        return not_a_member(request, typed_from(request.POST, list(LABELS.items())))
    found = _mission_or_404(group, mission)
    items = _items(group, mission)
    form = SendBackForm(request.POST, items=items)
    if not form.is_valid():
        words = form_problem(form, LABELS)
        return _page(request, membership_row, found, items, form, words=words, status=400)
    if not may(request, group, APPROVE) or found.state != "active":
        words = (
            who_can(APPROVE, "ask for changes at the final approval", membership_row.roles)
            if found.state == "active"
            else f"This mission is {found.state}: there is nothing left to approve."
        )
        return _page(request, membership_row, found, items, form, words=words, status=403)
    chosen = [i for i in items if i.work_item_id in set(form.cleaned_data["work_items"])]
    return _send(request, membership_row, found, items, form, chosen=chosen)


def _commands(
    mission: Mission, chosen: list[WorkItem], note: str, principal: str
) -> list[tuple[str, dict[str, Any], list[str]]]:
    """What the chosen items become: ONE ``mission.request_changes`` for the accepted ones,
    then a ``work.fail`` per submitted one; each with the ids it covers."""
    accepted = [item for item in chosen if item.state == "verified"]
    commands = []
    if accepted:
        ids = [item.work_item_id for item in accepted]
        commands.append((REQUEST_CHANGES, changes_body(mission, accepted, note), ids))
    for item in chosen:
        if item.state == "submitted":
            commands.append((SEND_BACK, fail_body(item, note, principal), [item.work_item_id]))
    return commands


def _send(
    request: HttpRequest,
    membership: Membership,
    mission: Mission,
    items: list[WorkItem],
    form: SendBackForm,
    *,
    chosen: list[WorkItem],
) -> HttpResponse:
    caller = Caller.for_user(request.user)
    titles = {item.work_item_id: item.title for item in chosen}
    base = form.cleaned_data.get("command_id") or new_command_id()
    asked, sent_back = [], []
    commands = _commands(mission, chosen, form.cleaned_data["note"], caller.principal)
    for index, (type_, body, ids) in enumerate(commands):
        try:
            submit_as_human(
                caller=caller,
                group_id=membership.group_id,
                type_=type_,
                body=body,
                command_id=f"{base}-{index}",
            )
        except ProtocolError as error:
            done = len(asked) + len(sent_back)
            said = f"{done} of {len(chosen)} were sent before this. " if done else ""
            words = f"Nothing was sent for {item_names(ids, titles)}: {plain_refusal(error)} {said}"
            if error.code == ErrorCode.FORBIDDEN:
                words = who_can(type_, "do this", membership.roles)
            return _page(
                request,
                membership,
                mission,
                items,
                form,
                words=words.strip(),
                refusal=error,
                status=error.status,
            )
        (asked if type_ == REQUEST_CHANGES else sent_back).extend(ids)
    messages.success(request, _confirmation(asked, sent_back, titles))
    target = [membership.group_id, mission.mission_id]
    return HttpResponseRedirect(reverse("dashboard:mission-final-approval", args=target))


def _confirmation(asked: list[str], sent_back: list[str], titles: dict[str, str]) -> str:
    parts = []
    if asked:
        parts.append(
            f"Changes asked of {item_names(asked, titles)}: the coordinator replaces "
            f"{'it' if len(asked) == 1 else 'them'} with new work, and the approval waits for it"
        )
    if sent_back:
        again = "it" if len(sent_back) == 1 else "them"
        parts.append(
            f"Sent back {item_names(sent_back, titles)}: the coordinator offers {again} again"
        )
    return "The mission is not approved. " + "; ".join(parts) + "."


urlpatterns: list[URLPattern] = [
    path(
        "groups/<str:group>/missions/<str:mission>/final-approval/send-back/",
        mission_send_back,
        name="mission-send-back",
    ),
]
