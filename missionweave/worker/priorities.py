"""A priority change reaches running work too (R0-12, R0-13, R11.3-11; MWP-WRK-015).

``work.reprioritized`` changes the terms the worker's projection keeps (``queues``); the
``QueueMirror`` puts a queued item's new urgency and deadline into the scheduler at its next
sync, which is the reorder R11.3-11 asks for. What the mirror cannot see is a *running* item:
it left the scheduler's queue when it started, and contention (``contention.choose_victims``)
judges it by the urgency its ``Running`` record took at the start. So after every sync the
runtime copies the projection's current urgency onto each running item: an escalated running
item is no longer displaced by what it now outranks, and one whose urgency was lowered yields
at its next checkpoint to the queued work that now outranks it — cooperatively, as ever
(R11.3-12).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Protocol

from .local_store import QueueStore

log = logging.getLogger("missionweave.worker")


class _Run(Protocol):
    group: str
    work_item: str
    urgency: str


def follow_priorities(runs: Iterable[_Run], store: QueueStore) -> list[_Run]:
    """Give each running item the urgency its group's projection holds now; the ones that
    changed."""
    changed = []
    for run in runs:
        row = store.owned(run.group, run.work_item)
        if row is None:
            continue  # fenced: ``Worker._fence`` stops it
        urgency = row["terms"].get("urgency") or "normal"
        if urgency != run.urgency:
            log.info("%s/%s: urgency %s → %s", run.group, run.work_item, run.urgency, urgency)
            run.urgency = urgency
            changed.append(run)
    return changed
