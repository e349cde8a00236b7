"""The big mission: N WorkItems with dependencies, in a mix of states, through the write path.

The plan is drawn once from a seeded generator. Each WorkItem depends on 0–3 earlier ones:
a WorkItem that has started (active, submitted, verified) or is queued or offered depends
only on verified ones, since ``dependency_policy: all_verified`` holds it back otherwise
(R10.4-03); an open one may depend on anything earlier, mostly on recent items (chains), so
some wait on unfinished work. A fifth of the started ones were gated: their contract needed
two mission owners' execution approval (quorum 2, R10.2-06), which both gave.

The states (shares of N): verified 40 %; submitted 15 % (the authority's checks done; some
already reviewed by the human reviewer, waiting for the owner's acceptance, the others
waiting for the reviewer); active 15 % (a progress report and a usage charge each); queued
behind an execution approval 10 % (some approved by the co-owner, none by the owner);
queued 5 %; offered 5 %; open 10 %.

The mission is played in three phases — authorise everything; take the verified ones to
verified in dependency order; move the rest to where they stop — so the group's history can
be appended between them, as other missions go on while a big one runs.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from .dashboard_cast import CO_OWNER, OWNER, Cast, as_person
from .dashboard_work import (
    Item,
    accept,
    accept_result,
    approve_execution,
    authorize,
    offer,
    report_progress,
    review,
    start,
    submit,
)

MISSION = "m-dash-big"
ITEM = "wi-big-"
SEED = 12
#: (state, share of N); the remainder goes to ``open``
SHARES = (
    ("verified", 0.40),
    ("submitted", 0.15),
    ("active", 0.15),
    ("approval", 0.10),  # queued, waiting for execution approval (quorum 2)
    ("queued", 0.05),
    ("offered", 0.05),
)
STARTED = frozenset({"verified", "submitted", "active"})
#: of the submitted ones, this share has the reviewer's verdict already
REVIEWED_SHARE = 0.25
#: of those waiting for execution approval, this share has the co-owner's already
HALF_APPROVED_SHARE = 0.4
GATED_SHARE = 0.2
#: events each state costs (authorise, offer, accept, approvals, start, progress + usage,
#: publish + submit + the authority's two checks, review, accept): to size the history
EVENTS = {
    "verified": 12,
    "submitted": 9,
    "active": 6,
    "approval": 3,
    "queued": 3,
    "offered": 2,
    "open": 1,
}


@dataclass
class PlannedItem:
    item: Item
    state: str
    reviewed: bool = False  # submitted: the reviewer's verdict is in
    approvals: tuple[str, ...] = ()  # usernames that approve its execution


@dataclass
class Plan:
    mission: str
    items: list[PlannedItem] = field(default_factory=list)

    def of(self, state: str) -> list[PlannedItem]:
        return [p for p in self.items if p.state == state]

    @property
    def events(self) -> int:
        """About how many events the mission appends (to size the history around it)."""
        return 1 + sum(EVENTS[p.state] + len(p.approvals) + p.reviewed for p in self.items)


def _states(count: int, rng: random.Random) -> list[str]:
    states: list[str] = []
    for state, share in SHARES:
        states += [state] * round(count * share)
    states += ["open"] * (count - len(states))
    rng.shuffle(states)
    return states


def plan_mission(cast: Cast, count: int, *, mission: str = MISSION) -> Plan:
    """``count`` WorkItems: their states, dependencies, workers and gates (seeded)."""
    rng = random.Random(SEED)
    workers = [w.principal for w in cast.workers]
    plan = Plan(mission)
    verified: list[str] = []
    earlier: list[str] = []
    for index, state in enumerate(_states(count, rng), start=1):
        ident = f"{ITEM}{index:04d}"
        wanted = rng.choices((0, 1, 2, 3), weights=(30, 35, 20, 15))[0]
        # an open one: recent ones, chains and fan-in, some unfinished
        pool = earlier[-30:] if state == "open" else verified[-60:]
        depends_on = tuple(sorted(rng.sample(pool, min(wanted, len(pool)))))
        gated = state == "approval" or (state in STARTED and rng.random() < GATED_SHARE)
        approvals: tuple[str, ...] = ()
        if state in STARTED and gated:
            approvals = (OWNER, CO_OWNER)
        elif state == "approval" and rng.random() < HALF_APPROVED_SHARE:
            approvals = (CO_OWNER,)
        item = Item(
            ident,
            mission,
            f"Part {index} of the archive migration",
            workers[index % len(workers)],
            gated=gated,
            depends_on=depends_on,
        )
        reviewed = state == "submitted" and rng.random() < REVIEWED_SHARE
        plan.items.append(PlannedItem(item, state, reviewed=reviewed, approvals=approvals))
        earlier.append(ident)
        if state == "verified":
            verified.append(ident)
    return plan


def _advance(cast: Cast, planned: PlannedItem) -> None:
    """Take one authorised WorkItem to the state the plan gives it."""
    item, state = planned.item, planned.state
    if state == "open":
        return
    offer(cast, item)
    if state == "offered":
        return
    accept(cast, item)
    for username in planned.approvals:
        approve_execution(cast, item, username)
    if state in ("queued", "approval"):
        return
    start(cast, item)
    report_progress(cast, item)
    if state == "active":
        return
    submit(cast, item)
    if state == "verified" or planned.reviewed:
        review(cast, item)
    if state == "verified":
        accept_result(cast, item)


def phase_authorize(cast: Cast, plan: Plan) -> None:
    """The owner creates the mission; the coordinator authorises every WorkItem."""
    body = {
        "mission": plan.mission,
        "goal": "Migrate the document archive to the new store",
        "budgets": {"money": 100_000.0, "tokens": 10_000_000_000},
    }
    as_person(cast, OWNER, "mission.create", body)
    for planned in plan.items:
        authorize(cast, planned.item)


def phase_verified(cast: Cast, plan: Plan) -> None:
    """The verified ones, in plan order (each depends only on earlier verified ones)."""
    for planned in plan.of("verified"):
        _advance(cast, planned)


def phase_rest(cast: Cast, plan: Plan) -> None:
    for planned in plan.items:
        if planned.state != "verified":
            _advance(cast, planned)


PHASES: tuple[Callable[[Cast, Plan], None], ...] = (phase_authorize, phase_verified, phase_rest)
