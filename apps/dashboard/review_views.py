"""The evidence review screens: the queue of submissions a person may judge, and one
submission judged criterion by criterion.

Thin function views: reads from ``review``, the form from ``review_forms``, and every write
(a verdict, an acceptance, a send-back, a reservation) is a command submitted as the person
through the one write path, which decides (R13.2-01..05, R10.2-12, R10.2-13). As on every
dashboard page, a group the person is not an active member of is 404.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import render
from django.urls import path, reverse
from django.views.decorators.http import require_POST

from apps.ledger.write_path import Caller, Outcome, submit_as_human
from missionweave.protocol.errors import ProtocolError
from missionweave.protocol.timefmt import parse_timestamp

from . import review, selectors
from .access import access_membership
from .actions import new_command_id, refused
from .review_forms import ReviewSubmission, parse_review, review_payload


def _caller(request: HttpRequest) -> Caller:
    return Caller.for_user(request.user)


# --- the queue -------------------------------------------------------------------------------


def _queue_context(request: HttpRequest) -> dict[str, Any]:
    caller = _caller(request)
    memberships = review.judging_memberships(caller.principal)
    return {
        "queue": review.review_queue(caller.principal),
        "judging_groups": memberships,
        "stream": {
            "groups": [
                {"group": m.group_id, "head_sequence": selectors.timeline_head(m.group_id)}
                for m in memberships
            ],
            "families": ["work", "evidence", "review", "membership", "mission"],
        },
    }


@login_required
def review_queue(request: HttpRequest) -> HttpResponse:
    """Submissions waiting for a verdict across the person's groups, oldest first, with each
    mission's progress and who is reviewing what right now."""
    return render(request, "dashboard/review/queue.html", _queue_context(request))


@login_required
def review_queue_section(request: HttpRequest) -> HttpResponse:
    return render(request, "dashboard/review/queue-section.html", _queue_context(request))


def _as_person(
    request: HttpRequest, group: str, type_: str, work_item: str
) -> ProtocolError | None:
    """``type_`` on ``work_item`` as the person, a fresh command; the refusal, if any."""
    try:
        submit_as_human(
            caller=_caller(request),
            group_id=group,
            type_=type_,
            body={"work_item": work_item},
            command_id=new_command_id(),
        )
    except ProtocolError as refusal:
        return refusal
    return None


def _reserve(request: HttpRequest, group: str, work_item: str) -> ProtocolError | None:
    """Reserve ``work_item``'s review for the person (advisory, expiring by itself)."""
    return _as_person(request, group, review.RESERVE, work_item)


def _open_next(
    request: HttpRequest, *, after: tuple[str, str] | None = None
) -> HttpResponseRedirect:
    """Reserve the next free submission in the person's queue and open it; the queue when
    none is left. A reservation someone took a moment ago moves on to the one after."""
    queue = review.review_queue(_caller(request).principal)
    skipped: set[tuple[str, str]] = set()
    current = after
    while True:
        candidate = (
            queue.next_after(*current)
            if current is not None
            else (queue.free[0] if queue.free else None)
        )
        if candidate is None or (candidate.group_id, candidate.item.id) in skipped:
            messages.info(request, "Nothing else is waiting for your review.")
            return HttpResponseRedirect(reverse("dashboard:reviews"))
        key = (candidate.group_id, candidate.item.id)
        if _reserve(request, *key) is None:
            return HttpResponseRedirect(reverse("dashboard:review", args=key))
        skipped.add(key)
        current = key


@login_required
@require_POST
def review_next(request: HttpRequest) -> HttpResponseRedirect:
    """The queue's Start button and the review's Skip: the next free submission, reserved
    for the person (Skip gives the one it leaves back first)."""
    group = request.POST.get("group", "")
    work_item = request.POST.get("work_item", "")
    if group and work_item:
        access_membership(request, group)
        _release(request, group, work_item)
        return _open_next(request, after=(group, work_item))
    return _open_next(request)


# --- one submission --------------------------------------------------------------------------


def _page(request: HttpRequest, group: str, work_item: str) -> dict[str, Any]:
    membership = access_membership(request, group)
    page = review.review_page(group, work_item, caller=_caller(request))
    if page is None:
        raise Http404("no submission to review")
    return {"group": membership.group, "membership": membership, "page": page}


@login_required
def review_detail(request: HttpRequest, group: str, work_item: str) -> HttpResponse:
    access_membership(request, group)
    head = selectors.timeline_head(group)  # before the projections: see views.group_detail
    context = _page(request, group, work_item)
    page: review.ReviewPage = context["page"]
    context["stream"] = {
        "group": group,
        "head_sequence": head,
        "work_item": work_item,
        "families": ["work", "evidence", "review", "membership", "artifact", "lease"],
        "draft_key": page.draft_key,
        "criteria": [c.id for c in page.criteria],
        "reserve_url": reverse("dashboard:review-reserve", args=[group, work_item]),
        "may_reserve": page.open and page.reserve.allowed,
        # a reservation of the person's with this long left is not renewed on arrival
        "reserved_for_s": _reserved_for(page),
    }
    context["command_id"] = new_command_id()
    return render(request, "dashboard/review/detail.html", context)


def _reserved_for(page: review.ReviewPage) -> int:
    """Seconds left on the person's own reservation (0: none of theirs)."""
    held = page.reservation
    if held is None or not held.mine or not held.live:
        return 0
    left = parse_timestamp(held.countdown.target) - held.countdown.now
    return max(int(left.total_seconds()), 0)


@login_required
def review_section(request: HttpRequest, group: str, work_item: str) -> HttpResponse:
    """The review's body alone, for the page to swap in when evidence or a decision arrives."""
    context = _page(request, group, work_item)
    context["command_id"] = request.GET.get("command_id", "") or new_command_id()
    return render(request, "dashboard/review/body.html", context)


def _decided(submission: ReviewSubmission, work_item: str) -> str:
    passed = sum(1 for v in submission.verdicts if v.verdict == "pass")
    total = len(submission.verdicts)
    if submission.action == "accept":
        return f"Accepted the result of {work_item}: all {total} criteria pass. It is verified."
    if submission.action == "send_back":
        return (
            f"Sent {work_item} back: {total - passed} of {total} criteria did not pass. "
            "It failed with your verdicts as evidence; a coordinator can offer it again."
        )
    return f"Recorded your verdicts on {work_item} ({passed} of {total} pass) for the approvers."


def _submit(
    request: HttpRequest, group: str, page: review.ReviewPage, submission: ReviewSubmission
) -> Outcome:
    caller = _caller(request)
    item = page.item
    command_id = submission.command_id or new_command_id()
    if submission.action == "accept":
        return submit_as_human(
            caller=caller,
            group_id=group,
            type_=review.ACCEPT,
            body={"work_item": item.id, "review": review_payload(submission)},
            command_id=command_id,
        )
    evidence = [
        review.verdict_evidence(item, caller.principal, v.criterion, v.verdict, v.note)
        for v in submission.verdicts
    ]
    if submission.action == "send_back":
        return submit_as_human(
            caller=caller,
            group_id=group,
            type_=review.SEND_BACK,
            body={"work_item": item.id, "evidence": evidence},
            command_id=command_id,
        )
    outcome: Outcome | None = None
    for index, item_evidence in enumerate(evidence):
        # one command per criterion, each with an id derived from the page's: a resubmitted
        # form replays the ones already recorded instead of recording them twice
        outcome = submit_as_human(
            caller=caller,
            group_id=group,
            type_=review.RECORD,
            body={"work_item": item.id, **item_evidence, "submission": page.submission},
            command_id=f"{command_id}-v{index}",
        )
    assert outcome is not None  # a contract has at least one criterion (R10.1-01)
    return outcome


@login_required
@require_POST
def review_decide(request: HttpRequest, group: str, work_item: str) -> HttpResponse:
    """Accept the result (``work.accept_result`` with the verdicts, R10.2-12), send it back
    (``work.fail`` with the verdicts as evidence, R10.2-13) or record the verdicts
    (``evidence.record`` per criterion, R13.2-04) — whichever the person chose."""
    context = _page(request, group, work_item)
    page: review.ReviewPage = context["page"]
    back = HttpResponseRedirect(reverse("dashboard:review", args=[group, work_item]))
    submission, problem = parse_review(request.POST, [c.id for c in page.criteria])
    if submission is None:
        messages.error(request, f"Nothing was sent: {problem}.", extra_tags="MALFORMED")
        return back
    try:
        _submit(request, group, page, submission)
    except ProtocolError as error:
        return refused(request, error, back.url)
    messages.success(request, _decided(submission, work_item))
    if submission.then_next:
        return _open_next(request, after=(group, work_item))
    # ``sent``: the page drops the browser's draft of this submission, now that it is sent
    return HttpResponseRedirect(f"{back.url}?sent={page.submission}")


def _release(request: HttpRequest, group: str, work_item: str) -> None:
    """Give the reservation back when the person holds it; there is nothing to say when they
    do not (it ran out, or was never theirs). An id this group does not have is 404."""
    refusal = _as_person(request, group, review.RELEASE, work_item)
    if refusal is not None and refusal.status == 404:
        raise Http404(refusal.message)


def _wants_json(request: HttpRequest) -> bool:
    return "application/json" in request.headers.get("Accept", "")


@login_required
@require_POST
def review_reserve(request: HttpRequest, group: str, work_item: str) -> HttpResponse:
    """Hold the review for a few minutes, so another reviewer does not judge the same
    submission at once; the page renews it while it stays open."""
    access_membership(request, group)
    refusal = _reserve(request, group, work_item)
    if _wants_json(request):
        if refusal is None:
            return JsonResponse({"reserved": True})
        return JsonResponse(
            {"reserved": False, "code": refusal.code.value, "message": refusal.message},
            status=409 if refusal.code.value == "ILLEGAL_TRANSITION" else 403,
        )
    back = reverse("dashboard:review", args=[group, work_item])
    if refusal is not None:
        return refused(request, refusal, back)
    return HttpResponseRedirect(back)


@login_required
@require_POST
def review_release(request: HttpRequest, group: str, work_item: str) -> HttpResponse:
    access_membership(request, group)
    _release(request, group, work_item)
    if _wants_json(request):
        return JsonResponse({"released": True})
    return HttpResponseRedirect(reverse("dashboard:reviews"))


_ITEM = "groups/<str:group>/work-items/<str:work_item>/review/"
urlpatterns = [
    path("reviews/", review_queue, name="reviews"),
    path("reviews/section/", review_queue_section, name="reviews-section"),
    path("reviews/next/", review_next, name="reviews-next"),
    path(_ITEM, review_detail, name="review"),
    path(f"{_ITEM}section/", review_section, name="review-section"),
    path(f"{_ITEM}decide/", review_decide, name="review-decide"),
    path(f"{_ITEM}reserve/", review_reserve, name="review-reserve"),
    path(f"{_ITEM}release/", review_release, name="review-release"),
]
