"""At-least-once delivery of group logs, as a socket would (wire.md §7, R16-01, R16-09)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field


@dataclass
class Transport:
    """Delivers every group's log at least once (R16-01): each group in order from where it
    was subscribed, with duplicates of earlier events and events held back until after their
    successor (R16-04); groups interleave at random. ``subscribe`` is a reconnect: the socket's
    held events are lost and each group starts again after the durable cursor (R16-09)."""

    logs: dict[str, list[dict]]
    rng: random.Random
    duplicate: float = 0.1
    hold_back: float = 0.1
    next: dict[str, int] = field(default_factory=dict)
    held: dict[str, list[dict]] = field(default_factory=dict)

    def subscribe(self, cursors: dict[str, int]) -> None:
        self.next = {group: cursors.get(group, 0) for group in self.logs}
        self.held = {group: [] for group in self.logs}

    def pull(self) -> tuple[str, dict] | None:
        pending = [g for g in self.logs if self.next[g] < len(self.logs[g]) or self.held[g]]
        if not pending:
            return None
        group = self.rng.choice(pending)
        events, at, held = self.logs[group], self.next[group], self.held[group]
        roll = self.rng.random()
        if roll < self.duplicate and at > 0:
            return group, events[self.rng.randrange(at)]
        if roll < self.duplicate + self.hold_back and at + 1 < len(events):
            held.append(events[at])
            self.next[group] = at + 2
            return group, events[at + 1]
        if held and (roll < 0.5 or at >= len(events)):
            return group, held.pop(0)
        self.next[group] = at + 1
        return group, events[at]

    def __iter__(self) -> Iterator[tuple[str, dict]]:
        while (delivery := self.pull()) is not None:
            yield delivery
