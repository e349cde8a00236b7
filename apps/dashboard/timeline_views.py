"""The Timeline page (``/groups/<g>/timeline/``; issue 37 §2): a group's log one line per
event, in words, filtered and paged both ways, every event on the page verified.

Members only: a group the person is no active member of is 404, as on every page
(``access.access_membership``). A filter the page cannot read is said next to its field and
the page still answers (200), never a 500 (docs/dashboard.md "Timeline").
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, QueryDict
from django.shortcuts import render
from django.urls import URLPattern, path, reverse
from django.views.decorators.http import require_safe

from . import event_words, names, selectors, timeline_reads, timeline_subjects
from .access import access_membership


def _query(request: HttpRequest) -> tuple[QueryDict, int | None]:
    """The page's query, where ``?at=N`` (the group page's old "go to event #N", issue 37 §1)
    is the page whose newest event is #N: ``?before=N+1``, with #N marked."""
    query = request.GET
    raw = query.get("at", "")
    if not raw or query.get("before") or query.get("after"):
        return query, None
    try:
        at = selectors.before_parameter(raw)
    except ValueError:
        return query, None
    query = query.copy()
    query["before"] = str((at or 0) + 1)
    return query, at


@require_safe
@login_required
def timeline(request: HttpRequest, group: str) -> HttpResponse:
    membership = access_membership(request, group)
    query, jumped = _query(request)
    filters = timeline_reads.read_filters(group, query)
    page = None
    if not filters.errors:
        page = timeline_reads.timeline_page(group, filters)
    actors = timeline_reads.actor_choices(group)
    names.prime(actors)
    # Live (issue 37 §1): the newest page with no filter follows the log as it grows.
    live = page is not None and not filters.any and filters.before is None and filters.after is None
    return render(
        request,
        "dashboard/timeline/page.html",
        {
            "group": membership.group,
            "membership": membership,
            "filters": filters,
            "page": page,
            "actors": actors,
            "missions": timeline_subjects.choices(timeline_subjects.MISSION, group),
            "work_items": timeline_subjects.choices(timeline_subjects.WORK_ITEM, group),
            "kinds": event_words.filter_choices(),
            "jumped": jumped,
            "live": live,
            "live_data": _live_data(group, page) if live and page is not None else None,
            "scan_limit": timeline_reads.SCAN_LIMIT,
            # the filters, kept by the pager's links (which add their own cursor)
            "query": urlencode(
                {k: v for k, v in filters.values.items() if v and k not in ("before", "after")}
            ),
        },
    )


def _live_data(group: str, page: timeline_reads.Page) -> dict[str, object]:
    """What ``timeline.js`` needs to follow the log from this page: where it stands (the
    newest event shown, whose hash the browser checks the next one's link against)."""
    newest = page.lines[0].checked.document if page.lines else {}
    return {
        "group": group,
        "after": int(newest.get("sequence") or 0) if page.lines else page.head_sequence,
        "hash": str(newest.get("hash") or ""),
        "page_size": timeline_reads.PAGE_SIZE,
        "lines_url": reverse("dashboard:timeline-lines", args=[group]),
    }


@require_safe
@login_required
def timeline_lines(request: HttpRequest, group: str) -> HttpResponse:
    """The events after ``?after=N``, in words and verified, newest first, for the live
    Timeline: at most a page (when more arrived, the newest page: the live page keeps a page
    of lines, so the older ones would fall off anyway). Bounded whatever the log's size."""
    access_membership(request, group)
    try:
        after = selectors.before_parameter(request.GET.get("after")) or 0
    except ValueError:
        return HttpResponseBadRequest("after is the number of an event")
    query = {"after": str(after)} if after else {}
    page = timeline_reads.timeline_page(group, timeline_reads.read_filters(group, query))
    if page.newer_after is not None:  # more than a page arrived: the newest page
        page = timeline_reads.timeline_page(group, timeline_reads.read_filters(group, {}))
    names.prime(line.checked.document.get("actor") for line in page.lines)
    return render(request, "dashboard/timeline/lines.html", {"page": page})


urlpatterns: list[URLPattern] = [
    path("groups/<str:group>/timeline/", timeline, name="timeline"),
    path("groups/<str:group>/timeline/lines/", timeline_lines, name="timeline-lines"),
]
