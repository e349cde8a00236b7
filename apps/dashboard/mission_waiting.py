"""A mission's WorkItems that wait on work that ended, and its replacements (R10.2-20,
R10.2-21), for the mission page.

The write path records both on the WorkItem projection (``ended_dependencies``, ``replaces``;
``missionweave.protocol.work.dependents``): this only reads them, in one query of three keys
per item, and never decides again which dependency blocks what.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from apps.work.models import WorkItem
from missionweave.protocol.work.dependents import NOT_STARTED


@dataclass(frozen=True)
class Stuck:
    work_item: str
    state: str
    #: the projection's entries: {dependency, outcome, reason, sequence, recorded_at}
    ended: tuple[dict[str, Any], ...]


@dataclass(frozen=True)
class Replacement:
    old: str
    new: str


@dataclass(frozen=True)
class MissionWaiting:
    stuck: list[Stuck] = field(default_factory=list)
    replacements: list[Replacement] = field(default_factory=list)


def mission_waiting(group_id: str, mission_id: str) -> MissionWaiting:
    rows = (
        WorkItem.objects.filter(group_id=group_id, mission=mission_id)
        .order_by("id")
        .values_list("work_item_id", "state", "data__ended_dependencies", "data__replaces")
    )
    found = MissionWaiting()
    for work_item, state, ended, replaces in rows:
        if ended and state in NOT_STARTED:
            found.stuck.append(Stuck(work_item, state, tuple(ended)))
        if replaces:
            found.replacements.append(Replacement(old=str(replaces), new=work_item))
    return found
