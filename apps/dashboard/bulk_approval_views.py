"""``POST /inbox/approve-missions/``: the final approval of several missions with one
comment (issue 37 §5; ``bulk_approval``).

The answer is a page that lists what was approved and what was refused, in words, with the
codes in collapsed details. The comment is never lost: whenever something was not approved
— a refusal, or a form that could not be read — the page offers the refused missions again
with the comment in its textarea.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_POST

from apps.ledger.write_path import Caller

from .actions import new_command_id
from .bulk_approval import BulkApproveForm, missions_approve, picks_from
from .decision_forms import form_problem

LABELS = {"comment": "comment on the approvals"}


@login_required
@require_POST
def inbox_approve_missions(request: HttpRequest) -> HttpResponse:
    form = BulkApproveForm(request.POST)
    comment = request.POST.get("comment", "")
    picks, problem = picks_from(request.POST.getlist("missions"))
    if not form.is_valid():
        problem = " ".join(p for p in (problem, form_problem(form, LABELS)) if p)
    if problem:
        retry = [(pick, pick.mission) for pick in picks]
        context = {"problem": problem, "results": [], "comment": comment, "retry": retry}
        return _page(request, context, status=400)
    caller = Caller.for_user(request.user)
    results = missions_approve(
        caller=caller,
        picks=picks,
        comment=form.cleaned_data["comment"],
        batch=form.cleaned_data["batch"] or new_command_id(),
    )
    refused = [result for result in results if not result.approved]
    context = {
        "problem": "",
        "results": results,
        "approved": [result for result in results if result.approved],
        "refused": refused,
        "comment": comment,
        "retry": [(result.pick, result.title) for result in refused],
    }
    # every approval refused: nothing happened, as a refused single approval answers
    everything_refused = bool(refused) and len(refused) == len(results)
    status = getattr(refused[0].error, "status", 409) if everything_refused else 200
    return _page(request, context, status=status)


def _page(request: HttpRequest, context: dict[str, object], *, status: int) -> HttpResponse:
    context["batch"] = new_command_id()
    return render(request, "dashboard/inbox/bulk-approval.html", context, status=status)
