"""Cancel one WorkItem from its page (issue 36 §5; ``work.cancel``, R10.2-14, wire.md §9).

Destructive, so it asks first (as revoking a member does): "Cancel this WorkItem…" on the
WorkItem page opens a page of its own that says what follows and takes the reason; only its
"Yes, cancel this WorkItem" sends the command — with scripts off too. Mission owners and
coordinators may (the command table's roles); the write path decides, from any unfinished
state, and applies the cleanup policy (the items waiting on it learn that it ended). A
refusal is the same page again with the reason in words and the typed reason kept; a
former member gets their text back on a page that names nothing of the group.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import URLPattern, path, reverse
from django.views.decorators.http import require_http_methods

from apps.registry.models import Membership
from apps.work.models import WorkItem
from missionweave.protocol import states
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.identifiers import ID_PATTERN

from . import selectors
from .access import access_membership
from .action_forms import may, who_can
from .actions import new_command_id, submit_form_command
from .decision_forms import form_problem, membership_or_none, not_a_member, typed_from
from .refusal_words import plain_refusal

CANCEL = "work.cancel"
LABELS = {"reason": "reason for cancelling"}


class WorkItemCancelForm(forms.Form):
    """``work.cancel``: the reason is required; it is recorded in ``work.cancelled``."""

    command_id = forms.RegexField(regex=ID_PATTERN, required=False, widget=forms.HiddenInput)
    reason = forms.CharField(
        label="Why it is cancelled",
        max_length=10_000,
        widget=forms.Textarea({"rows": 3, "maxlength": 10_000, "required": True}),
    )


def cancellable(state: str) -> bool:
    """Whether ``work.cancel`` may still end an item in ``state`` (the state table's rule)."""
    return state in states.allowed_from(CANCEL)


def _item_or_404(group: str, work_item: str) -> WorkItem:
    found = WorkItem.objects.filter(group_id=group, work_item_id=work_item).first()
    if found is None:
        raise Http404("no such WorkItem")
    return found


def _dependents(item: WorkItem) -> list[str]:
    """The unfinished WorkItems of its mission that wait on this one (``depends_on``), named
    on the confirmation page: they will not start unless the work is carried on."""
    rows = WorkItem.objects.filter(
        group_id=item.group_id, mission=item.mission, state__in=states.UNFINISHED
    ).values_list("work_item_id", "data")
    return [
        ident
        for ident, data in rows.iterator()
        if item.work_item_id in (data or {}).get("depends_on", ())
    ]


def _page(
    request: HttpRequest,
    membership: Membership,
    item: WorkItem,
    form: WorkItemCancelForm,
    *,
    words: str = "",
    refusal: ProtocolError | None = None,
    status: int = 200,
) -> HttpResponse:
    context = {
        "group": membership.group,
        "item": item,
        "goal": item.title or item.work_item_id,
        "mission_goal": selectors.mission_goal(membership.group_id, item.mission),
        "form": form,
        "cancellable": cancellable(item.state),
        "allowed": may(request, membership.group_id, CANCEL),
        "who_can": who_can(CANCEL, "cancel WorkItems", membership.roles),
        "dependents": _dependents(item),
        "words": words,
        "refusal": refusal,
    }
    return render(request, "dashboard/actions/cancel-work-item.html", context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def work_item_cancel(request: HttpRequest, group: str, work_item: str) -> HttpResponse:
    """The confirmation page (GET), or ``work.cancel`` with the reason as the person (POST),
    then the WorkItem's page."""
    if request.method == "GET":
        membership = access_membership(request, group)
        form = WorkItemCancelForm(initial={"command_id": new_command_id()})
        return _page(request, membership, _item_or_404(group, work_item), form)
    membership_row = membership_or_none(request, group)
    if membership_row is None:
        return not_a_member(request, typed_from(request.POST, list(LABELS.items())))
    item = _item_or_404(group, work_item)
    form = WorkItemCancelForm(request.POST)
    if not form.is_valid():
        words = form_problem(form, LABELS)
        return _page(request, membership_row, item, form, words=words, status=400)
    body = {"work_item": work_item, "reason": form.cleaned_data["reason"]}
    try:
        submit_form_command(request, group, CANCEL, body, form.cleaned_data)
    except ProtocolError as error:
        if error.code == ErrorCode.FORBIDDEN:
            words = who_can(CANCEL, "cancel WorkItems", membership_row.roles)
        elif error.code == ErrorCode.ILLEGAL_TRANSITION:
            words = "This WorkItem has already ended: there is nothing left to cancel."
        else:
            words = plain_refusal(error)
        item.refresh_from_db()
        form.data = form.data.copy()
        form.data["command_id"] = new_command_id()
        return _page(
            request, membership_row, item, form, words=words, refusal=error, status=error.status
        )
    messages.success(request, "Cancelled this WorkItem. The reason is in its history.")
    return HttpResponseRedirect(reverse("dashboard:work-item", args=[group, work_item]))


urlpatterns: list[URLPattern] = [
    path(
        "groups/<str:group>/work-items/<str:work_item>/cancel/",
        work_item_cancel,
        name="work-item-cancel",
    ),
]
