"""The Worker's Presence: its current capacity, reported to the authority (R11.1-11).

The Agent Card declares the most the agent may run at once; Presence says what is free now:
``{"slots", "slots_free", "resources": {name: {"total", "free"}}}`` (wire.md §4
``POST /presence``, checked by ``missionweave.protocol.presence``). Capacity is the worker's
as a whole, never by group (R11.2-02).

When: once at start, then when the capacity changed — but not more often than
``min_interval_s``, so a busy worker whose slots turn over every second does not send a report
per item — and at least every ``interval_s`` while nothing changes, so a reader can tell a
quiet worker from a dead one by the report's age. A report is soft state, not a log event (see
``apps/registry/presence.py`` for why). Offline, nothing is sent: the next check after the
link is back sends the current capacity (an old one is worth nothing).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from missionweave.client.errors import ApiError

from .link import Offline
from .resources import ResourceLedger

log = logging.getLogger(__name__)

#: a call through the Worker's link (it raises ``Offline`` when the authority is away)
Call = Callable[[Callable[[], Any]], Any]
Send = Callable[[dict[str, Any]], Any]


def presence_report(slots: int, slots_free: int, ledger: ResourceLedger) -> dict[str, Any]:
    """The body of ``POST /presence`` for this capacity."""
    held = ledger.held()
    return {
        "slots": slots,
        "slots_free": slots_free,
        "resources": {
            name: {"total": total, "free": max(0.0, total - held.get(name, 0.0))}
            for name, total in sorted(ledger.have.items())
        },
    }


class PresenceReporter:
    """What was last reported, and when the next report is due."""

    def __init__(self, interval_s: float = 30.0, min_interval_s: float = 2.0) -> None:
        self.interval = timedelta(seconds=interval_s)
        self.min_interval = timedelta(seconds=min(min_interval_s, interval_s))
        self.last: dict[str, Any] | None = None
        self.sent_at: datetime | None = None

    def due(self, now: datetime, report: dict[str, Any]) -> bool:
        if self.sent_at is None:
            return True
        since = now - self.sent_at
        return since >= self.interval or (report != self.last and since >= self.min_interval)

    def check(self, now: datetime, report: dict[str, Any], send: Send, call: Call) -> None:
        """Send ``report`` through ``call`` when due; offline or refused, try again later."""
        if not self.due(now, report):
            return
        try:
            call(lambda: send(report))
        except Offline:
            return
        except ApiError as error:  # not fatal: the work goes on; said, then tried at the interval
            log.warning("presence not reported: %s", error)
        self.last, self.sent_at = report, now
