"""A child mission named by its goal, as people know it (R10.2-15..17).

A WorkItem blocked on a child mission holds the child's group and id (``data.child``); the
inbox said "waiting for its child mission mx-c2d798b1901f-lab". The goal lives on the child's
own Mission row, possibly in another group, so it is read here, for every child of a page in
one query, and only from the groups the reader is a member of: another group's goal is that
group's to show (R10.4-06), so elsewhere the child stays named by its id.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping
from typing import Any

from django.db.models import Q

from apps.work.models import Mission

from .event_words import short_title

Key = tuple[str, str]


def _key(child: object) -> Key | None:
    if isinstance(child, Mapping) and child.get("group") and child.get("mission"):
        return str(child["group"]), str(child["mission"])
    return None


def child_goals(children: Iterable[object], readable: Container[str]) -> dict[Key, str]:
    """``(group, mission) -> goal`` of each child mission named whose group is ``readable``
    (the reader's groups; one query)."""
    keys = {key for key in map(_key, children) if key is not None and key[0] in readable}
    if not keys:
        return {}
    wanted = Q()
    for group, mission in keys:
        wanted |= Q(group_id=group, mission_id=mission)
    rows = Mission.objects.filter(wanted).values_list("group_id", "mission_id", "goal")
    return {(group, mission): goal for group, mission, goal in rows}


def child_mission_words(child: Any, goals: Mapping[Key, str]) -> str:
    """ "the child mission “Research for: …”", or its id when its goal is not known here."""
    key = _key(child)
    goal = goals.get(key) if key else None
    if goal:
        return f"the child mission {short_title(goal)}"
    if isinstance(child, Mapping) and child.get("mission"):
        return f"the child mission {child['mission']}"
    return "its child mission"
