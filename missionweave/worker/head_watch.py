"""The Worker holds every group's log to the heads the authority signed (issue 33 §2).

Every ``interval_s`` the control loop reads each group's signed head and hands it to the
feed (``EventFeed.check_head``): a head that contradicts the one kept — another hash at its
sequence, a head behind it or behind the events already processed, a head not following it —
is ``HistoryForked``, and the feed itself refuses any event contradicting a kept head. So a
history rewritten after this Worker saw a head stops the Worker's work in that group, loudly,
instead of being acted on. A fork is said once per group and the group's feed stays stopped
(the feed refuses everything past it); the check reads no events, so it is safe beside the
stream thread that delivers them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any

from missionweave.client.errors import ApiError, ChainBroken, HistoryForked
from missionweave.client.feed import EventFeed

from .link import Offline

log = logging.getLogger(__name__)

#: a call through the Worker's link (it raises ``Offline`` when the authority is away)
Call = Callable[[Callable[[], Any]], Any]


class HeadWatch:
    """When to check the heads next, and which groups were found forked."""

    def __init__(self, interval_s: float = 30.0) -> None:
        self.interval = timedelta(seconds=interval_s)
        self.next_at: datetime | None = None
        self.forked: dict[str, HistoryForked] = {}

    def check(self, now: datetime, feeds: Mapping[str, EventFeed], call: Call) -> None:
        """Check every group's head when due; a fork is logged and remembered by group."""
        if self.next_at is None:
            # the first check comes one interval after the start: a starting worker takes its
            # work first
            self.next_at = now + self.interval
            return
        if now < self.next_at:
            return
        self.next_at = now + self.interval
        for group, feed in list(feeds.items()):
            if group in self.forked:
                continue
            try:
                call(feed.check_head)
            except Offline:
                return
            except HistoryForked as fork:
                self.forked[group] = fork
                log.critical(
                    "group %s: the authority's history contradicts a head: %s", group, fork
                )
            except (ChainBroken, ApiError) as error:
                log.warning("group %s: cannot check its signed head: %s", group, error)
