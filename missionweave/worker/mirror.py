"""The scheduler's queue kept equal to the store's work queues (R11.1-01, R11.1-04, R11.3-11).

The group queues are the ``QueueStore``'s, folded from the log; the ``Scheduler`` holds its own
heaps for cross-group decisions. ``QueueMirror.sync`` makes the second a function of the first
at every tick rather than patching it event by event: whatever the store shows queued (and
startable: not running here, past a retry's backoff, R11.4-08, and not held back after a
refused start) is in the scheduler with its current terms, and nothing else is. So a restart,
a snapshot restore or a missed wake-up can never leave the two apart for longer than a tick.

What changes in place, as the scheduler allows it: an approval gate opening or closing
(R10.2-06, ``set_gated``), a new urgency or deadline — a priority change reorders queued work
at once (R11.3-11, ``reprioritize``). An item queued again (after a checkpoint or a retry)
has a new ``queued_at`` and is enqueued afresh: its age counts from its return.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime

from .config import GroupConfig
from .intake import not_before, queued_item
from .local_store import QueueStore
from .scheduler import QueuedItem, Scheduler

Key = tuple[str, str]


class QueueMirror:
    def __init__(
        self, scheduler: Scheduler, store: QueueStore, groups: Mapping[str, GroupConfig]
    ) -> None:
        self.scheduler = scheduler
        self.store = store
        self.groups = groups
        #: what the scheduler holds queued, as last mirrored
        self.items: dict[Key, QueuedItem] = {}
        #: items kept out until then (a refused ``work.start``)
        self.deferred: dict[Key, datetime] = {}

    def sync(
        self, now: datetime, *, running: Collection[Key], closed: Collection[str] = ()
    ) -> None:
        """Mirror every group's queue except the ``closed`` ones (a revoked membership: its
        queued items are no longer this worker's to start, wire.md §6)."""
        seen: set[Key] = set()
        for group, share in self.groups.items():
            if group in closed:
                continue
            for row in self.store.queue(group):
                key = (group, row["work_item"])
                if key in running:
                    continue  # its slot has not reported its end yet
                holds = [t for t in (self.deferred.get(key), not_before(row)) if t]
                if holds and max(holds) > now:
                    continue
                seen.add(key)
                self._mirror(key, queued_item(row, share))
        for key in [k for k in self.items if k not in seen]:
            if key in self.scheduler:
                self.scheduler.remove(*key)
            del self.items[key]
        for key in [k for k, until in self.deferred.items() if until <= now]:
            del self.deferred[key]

    def taken(self, key: Key) -> None:
        """The scheduler picked ``key``: it is running (or about to be refused), not queued."""
        self.items.pop(key, None)

    def _mirror(self, key: Key, item: QueuedItem) -> None:
        before = self.items.get(key)
        self.items[key] = item
        if before is None or before.queued_at != item.queued_at:
            if key in self.scheduler:
                self.scheduler.remove(*key)
            self.scheduler.enqueue(item)
            return
        if before.risk_gated != item.risk_gated:
            self.scheduler.set_gated(*key, item.risk_gated)
        if (before.urgency, before.deadline) != (item.urgency, item.deadline):
            if item.deadline is None:  # ``reprioritize`` cannot clear a deadline
                self.scheduler.remove(*key)
                self.scheduler.enqueue(item)
            else:
                self.scheduler.reprioritize(*key, urgency=item.urgency, deadline=item.deadline)
