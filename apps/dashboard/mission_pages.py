"""The mission page and the final-approval screen, each with its live section (GET only).

Thin function views: reads from ``missions`` and ``mission_reviews``; the approve and cancel
forms post to ``mission_views`` (the one write path), which answers a form the server did not
take with these pages again (``mission_page_response``, ``final_approval_response``): the
reason in words and the typed text kept. As on every dashboard page, a group the person is
not an active member of is 404, and so is a mission the group does not have.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import URLPattern, path, reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_safe

from apps.ledger.write_path import Caller
from apps.registry.models import Membership

from . import (
    change_requests,
    mission_contexts,
    mission_reviews,
    mission_waiting,
    missions,
    names,
    selectors,
    work,
)
from .access import access_membership
from .decision_forms import NotSent
from .graph import GraphLayout, layout, render_list, render_svg, summary

#: what changes a mission page or its final approval: its WorkItems' events, missions',
#: charges, memberships (a role or a revocation changes who may act), and its context
#: packages (R13.3)
LIVE_FAMILIES = (*work.ITEM_LIVE_FAMILIES, "context")

#: a placeholder id, swapped for each node's: one ``reverse`` per page, not one per node
_ID = "__work_item__"


def _base(name: str, group: str) -> str:
    """The path of route ``name`` for ``group`` up to its last argument (an id or digest,
    which the template appends with the closing slash): one ``reverse`` per page."""
    return reverse(name, args=[group, _ID]).partition(_ID)[0]


def work_item_href(group: str) -> Callable[[str], str]:
    """The WorkItem page's path for any id of ``group`` (ids need no quoting: wire.md §1)."""
    before, _, after = reverse("dashboard:work-item", args=[group, _ID]).partition(_ID)
    return lambda work_item: f"{before}{work_item}{after}"


def _graph_markup(
    group: str, graph: GraphLayout | None, counts: Sequence[tuple[str, int]]
) -> dict[str, object]:
    """The graph's picture and its list, or nothing when it is drawn on its own page."""
    if graph is None:
        return {"graph_svg": None, "graph_list": None}
    href = work_item_href(group)
    label = summary(graph, counts)
    return {
        # every text in the graph's markup is escaped by ``graph``
        "graph_svg": mark_safe(render_svg(graph, href=href, label=label)),  # noqa: S308
        "graph_list": mark_safe(render_list(graph, href=href)),  # noqa: S308
    }


def _page_context(
    request: HttpRequest, group: str, mission: str, membership: Membership | None = None
) -> dict[str, object]:
    membership = membership or access_membership(request, group)
    state = membership.to_state()
    viewer = work.viewer_of(Caller.for_user(request.user), state)
    shown = request.GET.get("progress", "1")
    page = missions.mission_page(
        group,
        mission,
        viewer=viewer,
        membership=state,
        progress_page=int(shown) if shown.isdigit() and len(shown) < 7 else 1,
    )
    if page is None:
        raise Http404("no such mission")
    packages = mission_contexts.mission_packages(group, mission)  # R13.3
    asked, answered = change_requests.requests_of(page.mission)  # issue 36 §5
    if asked and page.actions.approvable:  # the approval waits for the replacements
        holding = change_requests.holding_sentence(asked)
        page = replace(page, actions=replace(page.actions, approvable=False, approve_note=holding))
    names.prime(
        [
            *(request.by for request in (*asked, *answered)),
            *mission_contexts.generators(packages),
            page.mission.created_by,
            page.ending.actor if page.ending else None,
            *(entry.actor for entry in page.timeline),
            *(item.refused.get("principal") for item in page.items if item.refused),
        ]
    )
    return {
        "group": membership.group,
        "membership": membership,
        "page": page,
        "change_requests": asked,
        "answered_changes": answered,
        "context_packages": packages,
        # R10.2-20, R10.2-21: what waits on ended work, and the replacements named
        "waiting": mission_waiting.mission_waiting(page.items),
        **_graph_markup(group, page.graph, page.counts),
        "graph_url": reverse("dashboard:mission-graph", args=[group, mission]),
        # the state counts open the WorkItem list, filtered to this mission (and a state)
        "work_items_url": reverse("dashboard:work-items", args=[group]),
        "return_to": reverse("dashboard:mission", args=[group, mission]),
        # the pieces of the links the page repeats per row, reversed once
        "work_item_base": _base("dashboard:work-item", group),
        "timeline_base": reverse("dashboard:timeline", args=[group]),
    }


def mission_page_response(
    request: HttpRequest,
    membership: Membership,
    mission: str,
    *,
    not_sent: NotSent | None = None,
    status: int = 200,
) -> HttpResponse:
    """The mission page, with a refused form's reason and typed text when there is one."""
    group = membership.group_id
    head = selectors.timeline_head(group)  # before the projections: see views.group_detail
    context = _page_context(request, group, mission, membership)
    page: missions.MissionPage = context["page"]  # type: ignore[assignment]
    context["stream"] = {
        "group": group,
        "head_sequence": head,
        "families": LIVE_FAMILIES,
        "mission": mission,
        # same-group children: their approval or end changes this page (R10.2-16, R10.2-17)
        "missions": [child.mission for child in page.children if child.group is None],
        "work_items": [item.id for item in page.items],
    }
    context["not_sent"] = not_sent
    return render(request, "dashboard/mission/detail.html", context, status=status)


@login_required
@require_safe
def mission_detail(request: HttpRequest, group: str, mission: str) -> HttpResponse:
    """The mission page: goal, state, dependency graph, progress, budgets, children and the
    mission's slice of the timeline, refreshed live (R16-09)."""
    return mission_page_response(request, access_membership(request, group), mission)


@login_required
@require_safe
def mission_section(request: HttpRequest, group: str, mission: str) -> HttpResponse:
    """The mission page's body alone, for the page to swap in when events arrive."""
    return render(request, "dashboard/mission/body.html", _page_context(request, group, mission))


@login_required
@require_safe
def mission_graph(request: HttpRequest, group: str, mission: str) -> HttpResponse:
    """The dependency graph of a mission too large to draw inline (``INLINE_GRAPH_LIMIT``):
    a page of its own, which the mission page also loads into itself after it is shown."""
    membership = access_membership(request, group)
    found = missions.mission_graph(group, mission)
    if found is None:
        raise Http404("no such mission")
    row, items = found
    graph = layout(missions.graph_nodes(items))
    counts = missions.state_counts(item.state for item in items)
    return render(
        request,
        "dashboard/mission/graph.html",
        {
            "group": membership.group,
            "mission": row,
            "items": items,
            "graph": graph,
            **_graph_markup(group, graph, counts),
        },
    )


def _final_context(
    request: HttpRequest, membership: Membership, mission: str, page: str
) -> dict[str, object]:
    group = membership.group_id
    screen = mission_reviews.final_approval(
        group,
        mission,
        caller=Caller.for_user(request.user),
        membership=membership.to_state(),
        page=int(page) if page.isdigit() and len(page) < 7 else 1,
    )
    if screen is None:
        raise Http404("no such mission")
    asked, answered = change_requests.requests_of(screen.mission)  # issue 36 §5
    names.prime(
        [
            *(request.by for request in (*asked, *answered)),
            screen.ending.actor if screen.ending else None,
            *(item.accepted.get("by") for item in screen.items if item.accepted),
            *(item.failed.get("by") for item in screen.items if item.failed),
            *(e.producer for item in screen.items for e in item.evidence),
            *(d.get("principal") for item in screen.items for d in item.decisions),
            *(a.producer for a in (screen.artifacts or {}).values()),
        ]
    )
    return {
        "group": membership.group,
        "membership": membership,
        "screen": screen,
        "change_requests": asked,
        "answered_changes": answered,
        "return_to": reverse("dashboard:mission-final-approval", args=[group, mission]),
        "work_item_base": _base("dashboard:work-item", group),
        "artifact_base": _base("dashboard:artifact", group),
        "timeline_base": reverse("dashboard:timeline", args=[group]),
        "typed": {},
    }


def final_approval_response(
    request: HttpRequest,
    membership: Membership,
    mission: str,
    *,
    not_sent: NotSent | None = None,
    status: int = 200,
) -> HttpResponse:
    """The final-approval screen, following the group's log; with a refused approval's
    reason, and its comment kept (in the form while it can still succeed, else beside the
    reason), when there is one (issue 34 §3)."""
    group = membership.group_id
    head = selectors.timeline_head(group)  # before the projections: see views.group_detail
    context = _final_context(request, membership, mission, request.GET.get("page", "1"))
    screen: mission_reviews.FinalApproval = context["screen"]  # type: ignore[assignment]
    context["stream"] = {
        "group": group,
        "head_sequence": head,
        "families": LIVE_FAMILIES,
        "mission": mission,
        "work_items": list(screen.mission.work_items),
    }
    context["not_sent"] = not_sent
    if not_sent is not None:
        context["typed"] = {"comment": not_sent.text("comment")}
        context["not_sent_typed_here"] = not screen.shows_form
    return render(request, "dashboard/mission/final-approval.html", context, status=status)


@login_required
@require_safe
def mission_final_approval(request: HttpRequest, group: str, mission: str) -> HttpResponse:
    """Every WorkItem with its retained review results, then the approval form — shown only
    when the write path would take this person's ``mission.approve`` now (R13.2-03 step 5,
    R10.2-16, R10.2-22); once approved, who approved, when, and their comment. Live: another
    person's approval, a cancel or a revocation takes the form away within a second."""
    return final_approval_response(request, access_membership(request, group), mission)


@login_required
@require_safe
def mission_final_approval_section(request: HttpRequest, group: str, mission: str) -> HttpResponse:
    """The final-approval screen's body alone, for the page to swap in when events arrive."""
    context = _final_context(
        request, access_membership(request, group), mission, request.GET.get("page", "1")
    )
    return render(request, "dashboard/mission/final-approval-body.html", context)


_MISSION = "groups/<str:group>/missions/<str:mission>/"

urlpatterns: list[URLPattern] = [
    path(_MISSION, mission_detail, name="mission"),
    path(f"{_MISSION}section/", mission_section, name="mission-section"),
    path(f"{_MISSION}graph/", mission_graph, name="mission-graph"),
    path(f"{_MISSION}final-approval/", mission_final_approval, name="mission-final-approval"),
    path(
        f"{_MISSION}final-approval/section/",
        mission_final_approval_section,
        name="mission-final-approval-section",
    ),
]
