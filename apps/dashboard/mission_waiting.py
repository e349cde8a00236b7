"""A mission's WorkItems that wait on work that ended, and its replacements (R10.2-20,
R10.2-21), for the mission page.

The write path records both on the WorkItem projection (``ended_dependencies``, ``replaces``;
``missionweave.protocol.work.dependents``): this only sorts what the page's one read of the
mission's WorkItems brought (``missions.mission_items``), and never decides again which
dependency blocks what. Each list shows at most ``SHOWN`` entries, with the number of the
rest: a failed dependency of hundreds of WorkItems must not make the page hundreds of rows.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .missions import ItemSummary

#: entries each list of the card names; the count says how many there are in all
SHOWN = 20


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
    stuck_count: int = 0  # all of them; ``stuck`` names the first ``SHOWN``
    replacement_count: int = 0
    #: each of the mission's WorkItems' goal, by id: what the section names them by
    titles: dict[str, str] = field(default_factory=dict)

    @property
    def stuck_more(self) -> int:
        return self.stuck_count - len(self.stuck)

    @property
    def replacements_more(self) -> int:
        return self.replacement_count - len(self.replacements)


def mission_waiting(items: Iterable[ItemSummary]) -> MissionWaiting:
    """The stuck WorkItems and the replacements among ``items``, in their order (the
    mission's authorisation order); ``ItemSummary.ended`` is kept only while not started."""
    items = list(items)
    stuck = [Stuck(item.id, item.state, item.ended) for item in items if item.ended]
    replacements = [Replacement(old=item.replaces, new=item.id) for item in items if item.replaces]
    return MissionWaiting(
        stuck=stuck[:SHOWN],
        replacements=replacements[:SHOWN],
        stuck_count=len(stuck),
        replacement_count=len(replacements),
        titles={item.id: item.goal for item in items if item.goal},
    )
