"""The evidence review screens: the queue of submissions a person may judge, and one
submission judged criterion by criterion.

Thin function views: reads from ``review`` and ``review_queue``, the form from
``review_forms``, and every write (a verdict, an acceptance, a send-back, a reservation) is a
command submitted as the person through the one write path, which decides (R13.2-01..05,
R10.2-12, R10.2-13). A decision the server does not take is answered with the page again:
the reason in words and every verdict and note the person typed (issue 34 §3). As on every
dashboard page, a group the person is not an active member of is 404.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import render
from django.urls import path, reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_POST

from apps.ledger.write_path import Caller, Outcome, submit_as_human
from apps.registry.models import Membership
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.timefmt import parse_timestamp
from missionweave.protocol.work.reservations import RESERVATION_SECONDS

from . import names, review, review_holder, review_queue, selectors
from .access import access_membership
from .actions import new_command_id, refused
from .asking import ASK_FORM, REVIEW, AskPanel, ask_panel
from .decision_forms import NotSent, Typed, membership_or_none, not_a_member
from .item_names import item_named
from .resubmission_reads import changes_since_previous
from .review_forms import Draft, ReviewSubmission, parse_review, posted_draft, review_payload
from .review_words import refusal_text

#: the families of events that change a review page or the queue
QUEUE_FAMILIES = ["work", "evidence", "review", "membership", "mission"]
PAGE_FAMILIES = ["work", "evidence", "review", "membership", "artifact", "lease"]
#: a reservation of the person's this young was made on the way here ("Start reviewing");
#: an older one is made again on arrival, as leaving the page may just have given it back
JUST_RESERVED_S = 30


def _caller(request: HttpRequest) -> Caller:
    return Caller.for_user(request.user)


# --- the queue -------------------------------------------------------------------------------


def _queue_context(request: HttpRequest) -> dict[str, Any]:
    caller = _caller(request)
    memberships = review_queue.judging_memberships(caller.principal)
    queue = review_queue.review_queue(caller.principal)
    names.prime(q.reservation.reviewer for q in queue.items if q.reservation is not None)
    return {
        "queue": queue,
        "judging_groups": memberships,
        "stream": {
            "groups": [
                {"group": m.group_id, "head_sequence": selectors.timeline_head(m.group_id)}
                for m in memberships
            ],
            "families": QUEUE_FAMILIES,
        },
    }


@login_required
def review_queue_page(request: HttpRequest) -> HttpResponse:
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
    """Reserve ``work_item``'s review for the person: while it runs, only they decide it."""
    return _as_person(request, group, review.RESERVE, work_item)


def _open_next(
    request: HttpRequest, *, after: tuple[str, str] | None = None, sent: str = ""
) -> HttpResponseRedirect:
    """Reserve the next free submission in the person's queue and open it; the queue when
    none is left.

    The queue is read now, at the redirect, not when the page was drawn: a submission
    decided or reserved by someone else meanwhile is not in it, and one reserved a moment
    ago is skipped when its reservation is refused. The one opened is reserved for the
    person first, so nobody else decides it under them (REVIEW_RESERVED). ``sent`` names
    the draft the next page drops from the browser (it was sent)."""
    queue = review_queue.review_queue(_caller(request).principal)
    skipped: set[tuple[str, str]] = set()
    current = after
    suffix = f"?{urlencode({'sent': sent})}" if sent else ""
    while True:
        candidate = (
            queue.next_after(*current)
            if current is not None
            else (queue.free[0] if queue.free else None)
        )
        if candidate is None or candidate.key in skipped:
            fresh = review_queue.review_queue(_caller(request).principal)
            messages.info(request, fresh.nothing_next(after))
            return HttpResponseRedirect(reverse("dashboard:reviews") + suffix)
        if _reserve(request, *candidate.key) is None:
            return HttpResponseRedirect(reverse("dashboard:review", args=candidate.key) + suffix)
        skipped.add(candidate.key)
        current = candidate.key


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


def _page(request: HttpRequest, membership: Membership, work_item: str) -> dict[str, Any]:
    group = membership.group_id
    page = review.review_page(
        group, work_item, caller=_caller(request), roles=tuple(membership.roles)
    )
    if page is None:
        raise Http404("no submission to review")
    asking = ask_panel(_caller(request), membership.to_state(), group, page.item, REVIEW)
    changes = changes_since_previous(group, page.item, page.submission, principal=page.principal)
    names.prime(
        [
            *asking.principals,
            page.submitter,
            *(e.producer for c in page.criteria for e in (*c.evidence, *c.checks)),
            *(a.producer for a in page.artifacts),
            page.reservation.reviewer if page.reservation else "",
            page.decided.by if page.decided else "",
            *(
                (changes.previous_by, changes.decision.by if changes.decision else "")
                if changes
                else ()
            ),
        ]
    )
    context = {"group": membership.group, "membership": membership, "page": page}
    return {**context, "asking": asking, "changes": changes}


def review_page_response(
    request: HttpRequest,
    membership: Membership,
    work_item: str,
    *,
    not_sent: NotSent | None = None,
    draft: Draft | None = None,
    command_id: str = "",
    status: int = 200,
) -> HttpResponse:
    group = membership.group_id
    head = selectors.timeline_head(group)  # before the projections: see views.group_detail
    context = _page(request, membership, work_item)
    page: review.ReviewPage = context["page"]
    reserved_for = _reserved_for(page)
    page_token = review_holder.new_page_token()
    if reserved_for:  # the person holds it: this page, now the newest, gives it back on leaving
        review_holder.hold(request.session, group, work_item, page_token)
    context["stream"] = {
        "group": group,
        "head_sequence": head,
        "work_item": work_item,
        "families": PAGE_FAMILIES,
        "draft_key": page.draft_key,
        "criteria": [c.id for c in page.criteria],
        "reserve_url": reverse("dashboard:review-reserve", args=[group, work_item]),
        # leaving the page gives the person's reservation back, if this page holds it
        "release_url": reverse("dashboard:review-release", args=[group, work_item]),
        "page_token": page_token,
        "may_reserve": page.open and page.reserve.allowed,
        # seconds left on the person's own reservation: the page holds it
        "reserved_for_s": reserved_for,
        # one made a moment ago (by "Start reviewing") is not made again on arrival
        "reserved_just_now": reserved_for > RESERVATION_SECONDS - JUST_RESERVED_S,
        # the server shows what was posted: the browser takes it as the draft
        "posted": draft is not None,
    }
    context["command_id"] = command_id or new_command_id()
    context["not_sent"] = not_sent
    # an ask's note goes back into the ask panel; shown beside the reason once it is gone
    asking: AskPanel = context["asking"]
    context["not_sent_typed_here"] = (
        not_sent is not None and not_sent.form == ASK_FORM and not asking.offers_form
    )
    context["draft"] = draft
    criteria = [c.id for c in page.criteria]
    context["draft_lines"] = draft.lines(criteria) if draft is not None else []
    context["posted"] = (
        {"verdicts": draft.verdicts, "notes": draft.notes, "summary": draft.summary}
        if draft is not None
        else None
    )
    return render(request, "dashboard/review/detail.html", context, status=status)


@login_required
def review_detail(request: HttpRequest, group: str, work_item: str) -> HttpResponse:
    return review_page_response(request, access_membership(request, group), work_item)


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
    context = _page(request, access_membership(request, group), work_item)
    context["command_id"] = request.GET.get("command_id", "") or new_command_id()
    return render(request, "dashboard/review/body.html", context)


def _decided(submission: ReviewSubmission, group: str, work_item: str) -> str:
    """The flash after a decision, naming the work by its goal as people know it."""
    named = item_named(group, work_item)
    passed = sum(1 for v in submission.verdicts if v.verdict == "pass")
    total = len(submission.verdicts)
    if submission.action == "accept":
        every = {1: "its criterion passes", 2: "both criteria pass"}.get(
            total, f"all {total} criteria pass"
        )
        return f"Accepted the result of {named}: {every}. It is verified."
    if submission.action == "send_back":
        return (
            f"Sent {named} back: {total - passed} of {total} criteria did not pass. "
            "It failed with your verdicts as evidence; a coordinator can offer it again."
        )
    return f"Recorded your verdicts on {named} ({passed} of {total} pass) for the approvers."


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


_COMMANDS = {"accept": review.ACCEPT, "send_back": review.SEND_BACK, "record": review.RECORD}


def _typed(draft: Draft, criteria: list[str]) -> list[Typed]:
    """The draft as labelled text, for the page a former member gets."""
    typed = [
        Typed(f"note-{c}", f"verdict on {c}: {verdict}", note)
        for c, verdict, note in draft.lines(criteria)
    ]
    if draft.summary:
        typed.append(Typed("summary", "summary", draft.summary))
    return typed


@login_required
@require_POST
def review_decide(request: HttpRequest, group: str, work_item: str) -> HttpResponse:
    """Accept the result (``work.accept_result`` with the verdicts, R10.2-12), send it back
    (``work.fail`` with the verdicts as evidence, R10.2-13) or record the verdicts
    (``evidence.record`` per criterion, R13.2-04) — whichever the person chose.

    Whatever the server does not take — an incomplete form, a decision someone else made
    first, a reservation or a check that holds the acceptance — comes back as the page with
    the reason in words and the person's verdicts and notes (issue 34 §3)."""
    membership = membership_or_none(request, group)
    criteria_ids = [
        key.removeprefix("verdict-") for key in request.POST if key.startswith("verdict-")
    ]
    if membership is None:
        draft = posted_draft(request.POST, criteria_ids)
        return not_a_member(request, _typed(draft, criteria_ids))
    context = _page(request, membership, work_item)
    page: review.ReviewPage = context["page"]
    criteria = [c.id for c in page.criteria]
    draft = posted_draft(request.POST, criteria)
    command_id = request.POST.get("command_id", "")
    submission, problem = parse_review(request.POST, criteria)
    if submission is None:
        return review_page_response(
            request,
            membership,
            work_item,
            not_sent=NotSent(problem),
            draft=draft,
            command_id=command_id,
            status=400,
        )
    try:
        _submit(request, group, page, submission)
    except ProtocolError as error:
        if error.code == ErrorCode.NOT_A_MEMBER:
            return not_a_member(request, _typed(draft, criteria))
        words = refusal_text(
            error,
            command=_COMMANDS[submission.action],
            roles=tuple(membership.roles),
            state=page.item.state,
        )
        return review_page_response(
            request,
            membership,
            work_item,
            not_sent=NotSent(words, error=error),
            draft=draft,
            command_id=command_id,
            status=error.status,
        )
    messages.success(request, _decided(submission, group, work_item))
    if submission.then_next:
        return _open_next(request, after=(group, work_item), sent=page.draft_key)
    # ``sent``: the page drops the browser's draft of this submission, now that it is sent
    back = reverse("dashboard:review", args=[group, work_item])
    return HttpResponseRedirect(f"{back}?{urlencode({'sent': page.draft_key})}")


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
    """Hold the review for a few minutes: while it runs, only the person decides it (no agent
    accepts it under them, REVIEW_RESERVED); the page renews it while it stays open."""
    access_membership(request, group)
    refusal = _reserve(request, group, work_item)
    if refusal is None:
        review_holder.hold(request.session, group, work_item, request.POST.get("page", ""))
    if _wants_json(request):
        if refusal is None:
            return JsonResponse({"reserved": True})
        return JsonResponse(
            {"reserved": False, "code": refusal.code.value, "message": refusal.message},
            status=409
            if refusal.status == 409 or refusal.code.value == "ILLEGAL_TRANSITION"
            else 403,
        )
    back = reverse("dashboard:review", args=[group, work_item])
    if refusal is not None:
        return refused(request, refusal, back)
    return HttpResponseRedirect(back)


@login_required
@require_POST
def review_release(request: HttpRequest, group: str, work_item: str) -> HttpResponse:
    """Give the reservation back. A review page leaving says which page it is (``page``): only
    the page that holds the reservation gives it back, not an older one of the same person
    whose release arrives after a reload reserved again (``review_holder``)."""
    access_membership(request, group)
    page = request.POST.get("page")
    released = page is None or review_holder.may_release(request.session, group, work_item, page)
    if released:
        _release(request, group, work_item)
    if _wants_json(request):
        return JsonResponse({"released": released})
    return HttpResponseRedirect(reverse("dashboard:reviews"))


_ITEM = "groups/<str:group>/work-items/<str:work_item>/review/"
urlpatterns = [
    path("reviews/", review_queue_page, name="reviews"),
    path("reviews/section/", review_queue_section, name="reviews-section"),
    path("reviews/next/", review_next, name="reviews-next"),
    path(_ITEM, review_detail, name="review"),
    path(f"{_ITEM}section/", review_section, name="review-section"),
    path(f"{_ITEM}decide/", review_decide, name="review-decide"),
    path(f"{_ITEM}reserve/", review_reserve, name="review-reserve"),
    path(f"{_ITEM}release/", review_release, name="review-release"),
]
