"""Which running item yields its slot to a higher-priority queued one (R0-12, R0-13, R11.3-11;
MWP-WRK-015 step 1).

Preemption frees a slot; it never chooses who gets it — the scheduler's next fair pick does
(R11.1-05). What counts as "higher priority" keeps the scheduler's rule that a coordinator's
input orders work only inside its own group (R11.1-06, R0-07):

- inside one group, a queued item of strictly higher **urgency** (the coordinator's word)
  may displace a running item of the same group;
- across groups, only a strictly higher **organisation priority class** (policy, R11.1-07)
  may displace a running item of another group: no coordinator can take another group's slot
  by shouting.

A running item is displaced only after ``min_run_s`` in its slot, so two items cannot keep
evicting each other (each pays at most one checkpoint per ``min_run_s``), and at most one
preemption per waiting candidate is pending at a time. The victim is the lowest-priority
eligible running item, the most recently started among equals (the least work to redo).
Active work stops only at its next checkpoint (R11.3-12): this module only names it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from missionweave.protocol.contracts import URGENCIES

from .scheduler import ORG_PRIORITY_CLASSES, QueuedItem

#: how long a started item keeps its slot before a higher-priority one may displace it
MIN_RUN_S = 10.0


@dataclass(frozen=True, slots=True)
class Occupant:
    """A running item as contention sees it."""

    group: str
    work_item: str
    urgency: str
    org_priority_class: str
    started_at: datetime
    yielding: bool  # a preemption is already requested


def _urgency(value: str) -> int:
    return URGENCIES.index(value)


def _class(value: str) -> int:
    return ORG_PRIORITY_CLASSES.index(value)


def outranks(waiting: QueuedItem, running: Occupant) -> bool:
    if waiting.group == running.group:
        return _urgency(waiting.urgency) > _urgency(running.urgency)
    return _class(waiting.org_priority_class) > _class(running.org_priority_class)


def choose_victims(
    waiting: Iterable[QueuedItem],
    running: Iterable[Occupant],
    *,
    now: datetime,
    min_run_s: float = MIN_RUN_S,
) -> list[Occupant]:
    """The running items to ask to yield now: one per eligible waiting item that outranks
    some running item, minus the preemptions already pending."""
    occupants = list(running)
    pending = sum(1 for o in occupants if o.yielding)
    settled = [
        o for o in occupants if not o.yielding and (now - o.started_at).total_seconds() >= min_run_s
    ]
    victims: list[Occupant] = []
    # the most urgent waiting items first, so the strongest claims are served first
    claims = sorted(
        (item for item in waiting if not item.risk_gated),
        key=lambda item: (-_class(item.org_priority_class), -_urgency(item.urgency)),
    )
    for item in claims:
        if pending > 0:
            pending -= 1  # a slot is already being freed for some waiting item
            continue
        beaten = [o for o in settled if o not in victims and outranks(item, o)]
        if not beaten:
            continue
        beaten.sort(
            key=lambda o: (
                _class(o.org_priority_class),
                _urgency(o.urgency),
                -o.started_at.timestamp(),
            )
        )
        victims.append(beaten[0])
    return victims
