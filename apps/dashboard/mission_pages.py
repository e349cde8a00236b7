"""The mission page, its live section, and the final-approval screen (GET only).

Thin function views: reads from ``missions``; the approve and cancel forms post to
``mission_views`` (the one write path). As on every dashboard page, a group the person is
not an active member of is 404, and so is a mission the group does not have.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import URLPattern, path, reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_safe

from apps.ledger.write_path import Caller
from apps.registry.models import Membership

from . import missions, selectors, work
from .access import access_membership
from .graph import GraphLayout, layout, render_list, render_svg, summary

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


def _page_context(request: HttpRequest, group: str, mission: str) -> dict[str, object]:
    membership: Membership = access_membership(request, group)
    state = membership.to_state()
    viewer = work.viewer_of(Caller.for_user(request.user), state)
    page = missions.mission_page(group, mission, viewer=viewer, membership=state)
    if page is None:
        raise Http404("no such mission")
    return {
        "group": membership.group,
        "membership": membership,
        "page": page,
        **_graph_markup(group, page.graph, page.counts),
        "graph_url": reverse("dashboard:mission-graph", args=[group, mission]),
        "return_to": reverse("dashboard:mission", args=[group, mission]),
        # the pieces of the links the page repeats per row, reversed once
        "work_item_base": _base("dashboard:work-item", group),
        "timeline_base": reverse("dashboard:group", args=[group]),
    }


@login_required
@require_safe
def mission_detail(request: HttpRequest, group: str, mission: str) -> HttpResponse:
    """The mission page: goal, state, dependency graph, progress, budgets, children and the
    mission's slice of the timeline, refreshed live (R16-09)."""
    access_membership(request, group)
    head = selectors.timeline_head(group)  # before the projections: see views.group_detail
    context = _page_context(request, group, mission)
    page: missions.MissionPage = context["page"]  # type: ignore[assignment]
    context["stream"] = {
        "group": group,
        "head_sequence": head,
        "families": work.ITEM_LIVE_FAMILIES,
        "mission": mission,
        # same-group children: their approval or end changes this page (R10.2-16, R10.2-17)
        "missions": [child.mission for child in page.children if child.group is None],
        "work_items": [item.id for item in page.items],
    }
    return render(request, "dashboard/mission/detail.html", context)


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


@login_required
@require_safe
def mission_final_approval(request: HttpRequest, group: str, mission: str) -> HttpResponse:
    """Every WorkItem with its retained review results, then the approval form — shown only
    when the write path would take this person's ``mission.approve`` now (R13.2-03 step 5,
    R10.2-16, R10.2-22); once approved, who approved, when, and their comment."""
    membership = access_membership(request, group)
    requested = request.GET.get("page", "1")
    screen = missions.final_approval(
        group,
        mission,
        caller=Caller.for_user(request.user),
        membership=membership.to_state(),
        page=int(requested) if requested.isdigit() and len(requested) < 7 else 1,
    )
    if screen is None:
        raise Http404("no such mission")
    return render(
        request,
        "dashboard/mission/final-approval.html",
        {
            "group": membership.group,
            "membership": membership,
            "screen": screen,
            "return_to": reverse("dashboard:mission-final-approval", args=[group, mission]),
            "work_item_base": _base("dashboard:work-item", group),
            "artifact_base": _base("dashboard:artifact", group),
            "timeline_base": reverse("dashboard:group", args=[group]),
        },
    )


_MISSION = "groups/<str:group>/missions/<str:mission>/"

urlpatterns: list[URLPattern] = [
    path(_MISSION, mission_detail, name="mission"),
    path(f"{_MISSION}section/", mission_section, name="mission-section"),
    path(f"{_MISSION}graph/", mission_graph, name="mission-graph"),
    path(f"{_MISSION}final-approval/", mission_final_approval, name="mission-final-approval"),
]
