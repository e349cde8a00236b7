"""A child mission named by its goal, as people know it (R10.2-15..17).

A WorkItem blocked on a child mission holds the child's group and id (``data.child``); the
inbox said "waiting for its child mission mx-c2d798b1901f-lab". The goal lives on the child's
own Mission row, possibly in another group, so it is read here, for every child of a page in
one query, and only from the groups the reader is a member of: another group's goal is that
group's to show (R10.4-06), so elsewhere the child stays named by its id.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.urls import reverse

from apps.registry.models import Group
from apps.registry.services import memberships_of
from apps.work.models import Mission, MissionStatus, WorkItem
from apps.work.selectors import in_groups
from missionweave.protocol import states as S

from .event_words import short_title

Key = tuple[str, str]


def child_key(child: object) -> Key | None:
    """``(group, mission)`` of a WorkItem's ``data.child``, or ``None``."""
    if isinstance(child, Mapping) and child.get("group") and child.get("mission"):
        return str(child["group"]), str(child["mission"])
    return None


def running_child(child: object) -> Mapping[str, Any] | None:
    """A WorkItem's ``data.child`` while the child mission runs (its parent blocked on it,
    R10.2-15), else ``None``."""
    if isinstance(child, Mapping) and child.get("status") == "running":
        return child
    return None


def readable_groups(group_id: str, children: Iterable[object], viewer: str) -> frozenset[str]:
    """The groups whose child missions ``viewer`` may read by goal: this one, and — asked only
    when a child lives elsewhere — the others they are a member of (R10.4-06)."""
    keys = [key for key in map(child_key, children) if key is not None]
    if viewer and any(group != group_id for group, _mission in keys):
        return frozenset({group_id, *memberships_of(viewer)})
    return frozenset({group_id})


def _readable_keys(children: Iterable[object], readable: Container[str]) -> set[Key]:
    return {key for key in map(child_key, children) if key is not None and key[0] in readable}


def child_goals(children: Iterable[object], readable: Container[str]) -> dict[Key, str]:
    """``(group, mission) -> goal`` of each child mission named whose group is ``readable``
    (the reader's groups; one query)."""
    keys = _readable_keys(children, readable)
    if not keys:
        return {}
    rows = Mission.objects.filter(in_groups(keys, "mission_id"))
    return {(g, m): goal for g, m, goal in rows.values_list("group_id", "mission_id", "goal")}


def ready_children(children: Iterable[object], readable: Container[str]) -> set[Key]:
    """The child missions named, in ``readable`` groups, that wait only for their final
    approval (R10.2-16, R10.2-22): active, with WorkItems, none of them unfinished — the
    mission list's "ready for final approval". The parent's block then waits for a person,
    not for work: a page says so and links the approval (two queries)."""
    keys = _readable_keys(children, readable)
    if not keys:
        return set()
    active = Mission.objects.filter(in_groups(keys, "mission_id"), state=MissionStatus.ACTIVE)
    with_work = {
        (group, mission)
        for group, mission, items in active.values_list("group_id", "mission_id", "work_items")
        if items
    }
    if not with_work:
        return set()
    unfinished = WorkItem.objects.filter(in_groups(with_work, "mission"), state__in=S.UNFINISHED)
    return with_work - set(unfinished.values_list("group_id", "mission").distinct())


def final_approval_url(child: Any) -> str:
    """The child mission's final-approval page (in its own group)."""
    key = child_key(child)
    if key is None:
        return ""
    return reverse("dashboard:mission-final-approval", args=list(key))


def child_mission_words(child: Any, goals: Mapping[Key, str]) -> str:
    """ "the child mission “Research for: …”", or its id when its goal is not known here."""
    key = child_key(child)
    goal = goals.get(key) if key else None
    if goal:
        return f"the child mission {short_title(goal)}"
    if isinstance(child, Mapping) and child.get("mission"):
        return f"the child mission {child['mission']}"
    return "its child mission"


@dataclass(frozen=True)
class ParentWork:
    """The WorkItem a child mission unblocks (its ``link``, R10.2-15..16), as the viewer may
    read it: by its goal, linked, where they are a member of its group; by its id and group
    otherwise (R10.4-06)."""

    work_item: str
    group: str
    group_name: str  # another group's name; "" for this group or one the viewer may not read
    goal: str  # "" where the viewer may not read it
    url: str  # "" where the viewer may not open it


def parent_work(
    mission: Mission, viewer: str, *, member_of: Container[str] | None = None
) -> ParentWork | None:
    """What approving the child ``mission`` moves on, or ``None`` for a mission of its own
    (no query then; at most three for a child in another group). ``member_of``: the viewer's
    groups when the page has read them already."""
    link = mission.link
    if not isinstance(link, Mapping) or not link.get("group") or not link.get("work_item"):
        return None
    group, work_item = str(link["group"]), str(link["work_item"])
    if group != mission.group_id and member_of is None:
        member_of = frozenset(memberships_of(viewer))
    readable = group == mission.group_id or group in (member_of or ())
    if not readable:
        return ParentWork(work_item, group, "", "", "")
    title = (
        WorkItem.objects.filter(group_id=group, work_item_id=work_item)
        .values_list("title", flat=True)
        .first()
    )
    name = ""  # shown only for another group
    if group != mission.group_id:
        name = Group.objects.filter(pk=group).values_list("name", flat=True).first() or group
    url = reverse("dashboard:work-item", args=[group, work_item])
    return ParentWork(work_item, group, name, title or "", url)
