"""The Mission aggregate (wire.md §4), its state key, and the checks every mission command
shares.

A Mission owns a goal, budgets in the six dimensions of R10.1-01(g), its WorkItems, and links
to a parent or children (R10.4-06).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import ErrorCode, ProtocolError
from ..facts import StateKey, View

ACTIVE = "active"


@dataclass(frozen=True, slots=True)
class Mission:
    id: str
    state: str  # "active", "approved", "failed", "cancelled"
    goal: str
    limits: dict[str, float | int]
    used: dict[str, float | int]
    parent: str | None  # "m" in this group, "group/m" in another
    children: tuple[str, ...]  # the same notation
    work_items: tuple[str, ...]
    created_by: str
    created_sequence: int
    #: a child mission's link to the WorkItem it unblocks:
    #: {group, mission, work_item, correlation_id}
    link: dict[str, Any] | None = None
    #: ``used`` over time, for charts of used against limit: (sequence, recorded_at,
    #: {dimension: cumulative used}) after each charge, bounded (``missions.usage``)
    usage_series: tuple[tuple[int, str, dict[str, float | int]], ...] = ()
    #: ``mission.changes_requested``, oldest first: {work_items, note, by, sequence,
    #: recorded_at}; open while an item named has no replacement (``missions.changes``)
    change_requests: tuple[dict[str, Any], ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """The Mission projection as served by ``GET /groups/{g}/missions/{id}``."""
        return {
            "id": self.id,
            "state": self.state,
            "goal": self.goal,
            "budgets": {"limits": dict(self.limits), "used": dict(self.used)},
            "parent": self.parent,
            "children": list(self.children),
            "work_items": list(self.work_items),
            "created_by": self.created_by,
            "created_sequence": self.created_sequence,
            "link": self.link,
            "usage_series": [
                [sequence, recorded_at, dict(used)]
                for sequence, recorded_at, used in self.usage_series
            ],
            "change_requests": [dict(request) for request in self.change_requests],
        }


def usage_series_of(points: Any) -> tuple[tuple[int, str, dict[str, float | int]], ...]:
    """``usage_series`` read back from JSON (a projection row or a snapshot)."""
    return tuple((sequence, recorded_at, dict(used)) for sequence, recorded_at, used in points)


def mission_key(mission_id: str) -> StateKey:
    return ("mission", mission_id)


def mission_or_404(
    view: View, mission_id: str, path: str = "$.mission", requirement: str = "wire§4"
) -> Mission:
    mission = view.get(mission_key(mission_id))
    if mission is None:
        raise ProtocolError(
            ErrorCode.NOT_FOUND,
            f"no mission {mission_id!r} in this group",
            requirement=requirement,
            details={"path": path, "mission": mission_id},
        )
    return mission


def require_active_mission(mission: Mission, command: str) -> None:
    if mission.state != ACTIVE:
        raise ProtocolError(
            ErrorCode.ILLEGAL_TRANSITION,
            f"{command} is not allowed on a mission that is {mission.state}",
            requirement="R10.2-22",
            details={"mission": mission.id, "state": mission.state},
        )


def refuse_existing(view: View, mission_id: str) -> None:
    if view.get(mission_key(mission_id)) is not None:
        raise ProtocolError(
            ErrorCode.ILLEGAL_TRANSITION,
            f"mission {mission_id!r} already exists in this group",
            requirement="R10.2-22",
            details={"mission": mission_id},
        )
