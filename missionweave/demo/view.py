"""What an agent of the demo knows of a group: the group's state, rebuilt from its log.

The coordinator and the reviewer follow each group's log through the SDK's verified feed
(hash chain, dedup by event id, never past a gap: R16-01..05) and fold every event with the
protocol core's own ``decider.apply`` — the function the authority's projections and replays
use — so they see exactly the state the authority has at that sequence (R11.1-03: the log is
the truth), not a copy of its tables. Each start replays from the beginning (the cursors are
in memory): a demo group's log is short enough, and a restart can never trust a state it did
not keep.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from missionweave.client import AgentClient
from missionweave.client.feed import CursorStore, EventFeed
from missionweave.protocol import decider
from missionweave.protocol.facts import Fact, StateKey
from missionweave.protocol.missions.model import Mission
from missionweave.protocol.work.items import WorkItem


class GroupState:
    """One group's state: the events folded in so far (pure)."""

    def __init__(self, group: str) -> None:
        self.group = group
        self.state: dict[StateKey, Any] = {}
        #: the sequence of the last event folded (a context package's range ends there)
        self.sequence = 0

    def fold(self, event: dict[str, Any]) -> None:
        """Fold one wire.md §6 event document, the next in the group's order."""
        decider.apply(self.state, Fact.of_event(event))
        self.sequence = int(event["sequence"])

    def has_context(self, package_id: str) -> bool:
        return ("context", package_id) in self.state

    def work_items(self) -> Iterator[WorkItem]:
        for (kind, _key), value in self.state.items():
            if kind == "work_item":
                yield value

    def work_item(self, work_item: str) -> WorkItem | None:
        return self.state.get(("work_item", work_item))

    def missions(self) -> Iterator[Mission]:
        for (kind, _key), value in self.state.items():
            if kind == "mission":
                yield value

    def mission(self, mission: str) -> Mission | None:
        return self.state.get(("mission", mission))

    def members(self, role: str) -> list[str]:
        """The principals holding ``role`` in the group now."""
        return sorted(
            value.principal
            for (kind, _key), value in self.state.items()
            if kind == "membership" and value.active and role in value.roles
        )


class GroupView(GroupState):
    """``GroupState`` kept current from the authority by ``refresh``."""

    def __init__(self, client: AgentClient, group: str) -> None:
        super().__init__(group)
        self._feed = EventFeed(client, CursorStore(":memory:"), group, self.fold)

    def refresh(self) -> int:
        """Read and fold the events since the last refresh; how many there were."""
        return self._feed.catch_up(limit=500)
