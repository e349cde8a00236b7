"""The Worker's cross-Group scheduler (R11.1-04..10, R0-04..07; MWP-WRK-009, MWP-WRK-010).

One scheduler per Worker picks the next WorkItem for a free slot from every Group's queue.
It has the final word on cross-Group ordering (R0-04, R11.1-05): what a Coordinator asks for
(urgency, deadline) orders work *inside its own Group* only (R11.1-06), so unbounded
highest-priority-first across Groups cannot happen — not by a check, by construction
(R0-07, R11.1-10): no input a Coordinator controls enters the cross-Group comparison.

Algorithm
---------
**Across Groups: stride scheduling** (C. A. Waldspurger and W. E. Weihl, *Stride Scheduling:
Deterministic Proportional-Share Resource Management*, MIT/LCS/TM-528, 1995), in its
non-uniform-quantum form and with its rule for clients that join: each Group ``g`` has a
weight ``w_g`` (tickets) and a *pass*; the decision serves the eligible Group with the lowest
pass, which then advances by the slot time charged divided by ``w_g`` (§4 of the report:
a client that uses a fraction of its quantum advances by that fraction of its stride).
Fairness is on **slot time used** (R0-05, R11.1-08): a pick reserves the item's estimated
slot time, clamped to ``[min_charge_s, max_charge_s]``; ``finish`` charges what it used
beyond that (an inflated estimate is never refunded: a Coordinator that overstates its
estimates only slows its own Group down, one that understates them pays the rest at the end).

- *Virtual time* ``V`` is the pass of the latest Group served, never decreasing (the global
  pass of the report; the start-tag clock of Start-time Fair Queuing, Goyal, Vin and Cheng,
  SIGCOMM 1996). A Group that becomes active after having nothing queued starts at
  ``max(pass, V)``: it banks **no credit while idle**, so a Group that returns after an hour
  cannot then take every slot for an hour.
- A Group that stays backlogged but is not served (its quota is full, its items need a
  resource that is busy) may bank at most ``max_credit_s`` (``B``): it is served as if its
  pass were ``max(pass, V - B)``. Without that cap, one Group released from a long wait could
  hold every decision until it caught up; with it, the bound below holds.
- Organisation priority class (R0-06, R11.1-07: a matter of policy, not of the Coordinator)
  scales an item's charge by ``1 / class_boost[class]``: a bounded boost of its Group's share
  (factor ``max/min`` of the boosts), never an override.
- Per-Group quota (R0-06): a Group already running ``quota`` items is not a candidate.
- Risk gates (R0-06, R10.2-06): an item awaiting execution approval is held apart and is not
  eligible until ``set_gated(..., False)``.
- Resources (R0-06): items are grouped by their exact ``Needs`` (a *need class*); a decision
  considers only the need classes that fit the free ``Resources``, so the scheduler is
  work-conserving: a busy GPU never idles a slot that other work could use.

**Inside a Group: earliest virtual deadline first** (EDF, C. L. Liu and J. W. Layland, JACM
20(1), 1973) with ageing. An item queued at ``a`` with urgency ``u`` has the key
``min(a + slack[u], max(deadline - estimate, a))``: urgency buys at most ``slack[u]`` seconds
of queue age over ``normal``, a deadline pulls the item forward to its latest useful start,
and the key never precedes ``a``. So an item is overtaken only by items that arrived before
its key, i.e. within ``slack[u]`` seconds after it (ageing: later urgent work cannot starve
it). Ties go to the earlier enqueue.

The bound (anti-starvation, R0-05, R11.1-08)
--------------------------------------------
Let ``c_min = min_charge_s / max(class_boost)`` and ``c_max = max_charge_s / min(class_boost)``
(the smallest and largest pass step per unit weight), ``B = max_credit_s``, and ``G`` the
Groups with their weights ``w_h``. Take an item ``i`` of Group ``g`` that is eligible from
decision ``t0`` until it is picked (not gated, its needs fit every decision's free resources,
``g`` below its quota), with ``k`` items of ``g`` ordered before it, and let
``Λ = max(0, pass_g - V)`` at ``t0`` and ``E`` the slot time charged to ``g`` in the meantime
beyond its reservations (0 when estimates are exact). Then at most

    D_k = k + Σ_{h ≠ g} ( ⌊ (B + Λ + (k·c_max + E) / w_g) · w_h / c_min ⌋ + 1 )

decisions are made before ``i`` is picked. ``wait_bound`` returns, in O(1), the closed form
``k + (G - 1) + ⌊(B + Λ + (k·c_max + E) / w_g) · (W - w_g) / c_min⌋ ≥ D_k``, ``W = Σ w``.

Proof sketch: ``V`` never decreases; every Group is served at pass ``≥ V - B``, and each
service raises its pass by ``≥ c_min / w_h``; while ``i`` waits, ``g`` is a candidate at every
decision, so nothing is served at a pass above ``g``'s, and ``g``'s pass (hence ``V``) stays
below ``max(V, pass_g) + (k·c_max + E) / w_g``; so ``h`` is served at most the count above.
After any pick of ``g``, ``Λ ≤ c_max / w_g``; with exact estimates a Group's head item
therefore waits at most ``(G - 1) + (B + c_max / w_g) · (W - w_g) / c_min`` decisions.

Cost per decision: ``O(K log G + K_g log n_g)`` — ``K`` need classes present (a handful):
one heap of candidate Groups per class, then the chosen Group's item heap per class it has
(lazy deletion with compaction: no scan of all items or all Groups). Pure and deterministic:
no clock is read (every time is an argument), no randomness, ties broken by arrival.

After a restart
---------------
The passes and ``V`` are soft state, kept in memory and not persisted: the queues themselves
are rebuilt by replay (R11.1-02), and a restarted Worker starts every Group level (every pass
``= V = 0``). That is safe, and storing them would buy little:

- *The wait bound holds from any starting pass.* The proof above assumes nothing about the
  passes at ``t0`` beyond ``Λ``; after a restart ``Λ = 0`` for every Group, so an item with
  ``k`` items of its Group ahead waits at most ``k + (G - 1) + ⌊(B + (k·c_max + E) / w_g) ·
  (W - w_g) / c_min⌋`` decisions, and a head item with exact estimates at most
  ``(G - 1) + ⌊B · (W - w_g) / c_min⌋`` — no more than in steady state, where ``Λ`` may be
  up to ``c_max / w_g``.
- *Fairness converges again; a restart moves each share by a bounded amount, once.* Before
  it, a backlogged Group's effective pass lies within ``[V - B, V + (c_max + E) / w_g]``;
  levelling forgets at most that spread, i.e. ``B · w_g + c_max + E`` seconds of slot time
  gained or lost per Group per restart, which does not accumulate over the schedule: from
  the new start, stride keeps every pass difference bounded as it does from any start. An
  item running at the restart has its lease revoked by the new session (R11.3-10) and its
  slot time is charged to nobody: at most one item per slot, per restart. No Group can
  exploit it: a restart only forgets history, and no Coordinator can cause one.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from types import MappingProxyType
from typing import Any

from missionweave.protocol.contracts import URGENCIES
from missionweave.protocol.work.schedule import CAPACITY_STATES, disclosure_body

#: Organisation priority classes (R0-06): set by policy or the MissionOwner (R11.1-07)
ORG_PRIORITY_CLASSES = ("low", "normal", "high", "critical")

#: seconds of queue age each urgency is worth inside its Group (the ageing window)
URGENCY_SLACK_S: Mapping[str, float] = MappingProxyType(
    {"critical": 0.0, "high": 300.0, "normal": 1800.0, "low": 7200.0}
)
#: the bounded share boost of each organisation priority class
CLASS_BOOST: Mapping[str, float] = MappingProxyType(
    {"low": 0.5, "normal": 1.0, "high": 2.0, "critical": 4.0}
)


# --- inputs --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Resources:
    """What is free at a decision: slots, present capabilities (``gpu``), named amounts."""

    slots: int
    capabilities: frozenset[str] = frozenset()
    amounts: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Needs:
    """What one item needs besides a slot; hashable, so equal needs form one need class."""

    capabilities: frozenset[str] = frozenset()
    amounts: tuple[tuple[str, float], ...] = ()
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        amounts = tuple(sorted((str(name), float(value)) for name, value in self.amounts))
        if any(value < 0 for _, value in amounts) or len({n for n, _ in amounts}) != len(amounts):
            raise ValueError("needs name each amount once, none negative")
        capabilities = frozenset(self.capabilities)
        object.__setattr__(self, "capabilities", capabilities)
        object.__setattr__(self, "amounts", amounts)
        # a need class is a dict key on every decision: hash it once
        object.__setattr__(self, "_hash", hash((capabilities, amounts)))

    def __hash__(self) -> int:
        return self._hash

    @classmethod
    def of(cls, *capabilities: str, **amounts: float) -> Needs:
        return cls(frozenset(capabilities), tuple(amounts.items()))

    def fits(self, free: Resources) -> bool:
        if not self.amounts:
            return self.capabilities <= free.capabilities
        return self.capabilities <= free.capabilities and all(
            free.amounts.get(name, 0.0) >= value for name, value in self.amounts
        )


NO_NEEDS = Needs()


def _aware(moment: datetime, name: str) -> None:
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"{name} must be an aware datetime")


@dataclass(frozen=True, slots=True)
class QueuedItem:
    """One accepted WorkItem waiting for a slot, as the scheduler sees it.

    ``urgency`` and ``deadline`` are what the Coordinator supplied (R0-03); they order the
    item within ``group`` only. ``org_priority_class`` comes from policy (R11.1-07). Ids and
    scheduling metadata only, never the contract's content (R13.3-08).
    """

    group: str
    work_item: str
    mission: str
    urgency: str
    deadline: datetime | None
    queued_at: datetime
    risk_gated: bool = False
    needs: Needs = NO_NEEDS
    estimated_seconds: float | None = None
    org_priority_class: str = "normal"

    def __post_init__(self) -> None:
        if self.urgency not in URGENCIES:
            raise ValueError(f"urgency is one of {URGENCIES}")
        if self.org_priority_class not in ORG_PRIORITY_CLASSES:
            raise ValueError(f"org_priority_class is one of {ORG_PRIORITY_CLASSES}")
        if self.estimated_seconds is not None and not self.estimated_seconds > 0:
            raise ValueError("estimated_seconds is positive when given")
        _aware(self.queued_at, "queued_at")
        if self.deadline is not None:
            _aware(self.deadline, "deadline")


@dataclass(frozen=True, slots=True)
class Share:
    """A Group's weight (its share of slot time) and quota (most slots it may hold at once)."""

    weight: float = 1.0
    quota: int | None = None

    def __post_init__(self) -> None:
        if not self.weight > 0 or (self.quota is not None and self.quota < 0):
            raise ValueError("a weight is positive and a quota is not negative")


@dataclass(frozen=True, slots=True)
class SchedulingPolicy:
    """The Organisation's scheduling policy; every figure here appears in the bound."""

    shares: Mapping[str, Share] = field(default_factory=dict)
    default_share: Share = Share()
    min_charge_s: float = 1.0
    max_charge_s: float = 900.0
    #: the reservation for an item with no estimate
    default_charge_s: float = 60.0
    max_credit_s: float = 60.0
    urgency_slack_s: Mapping[str, float] = URGENCY_SLACK_S
    class_boost: Mapping[str, float] = CLASS_BOOST

    def __post_init__(self) -> None:
        if not 0 < self.min_charge_s <= self.max_charge_s or self.max_credit_s < 0:
            raise ValueError("0 < min_charge_s <= max_charge_s and max_credit_s >= 0")
        if set(self.urgency_slack_s) != set(URGENCIES) or min(self.urgency_slack_s.values()) < 0:
            raise ValueError("urgency_slack_s gives every urgency a slack >= 0")
        if (
            set(self.class_boost) != set(ORG_PRIORITY_CLASSES)
            or min(self.class_boost.values()) <= 0
        ):
            raise ValueError("class_boost gives every priority class a positive boost")

    def share(self, group: str) -> Share:
        return self.shares.get(group, self.default_share)

    def reservation(self, item: QueuedItem) -> float:
        """The slot time a pick charges up front: the estimate, clamped."""
        estimate = item.estimated_seconds or self.default_charge_s
        return min(max(estimate, self.min_charge_s), self.max_charge_s)

    @property
    def step_bounds(self) -> tuple[float, float]:
        """``(c_min, c_max)`` of the bound: the smallest and largest charge per unit weight."""
        boosts = self.class_boost.values()
        return self.min_charge_s / max(boosts), self.max_charge_s / min(boosts)


# --- outputs -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Pick:
    """A decision: run ``item`` in a free slot; ``finish`` it when it leaves the slot."""

    item: QueuedItem
    reserved_seconds: float
    #: this decision's number (1, 2, …) and how many decisions it waited while eligible
    decision: int
    waited_decisions: int


@dataclass(frozen=True, slots=True)
class StartEstimate:
    """Schedule disclosure for one item (R11.2-01; MWP-WRK-012).

    Only this item's own times, its own Group's count ahead of it and the Worker's capacity
    as a whole: never another Group's identity, content, assignments or the item's global
    queue position (R11.2-02). ``confidence`` is a heuristic in [0, 1]: lower when estimates
    are missing, other Groups compete or the item awaits approval.
    """

    computed_at: datetime
    start_earliest: datetime
    start_expected: datetime
    start_latest: datetime
    finish_expected: datetime
    #: the slot time the item is expected to take (its reservation); not disclosed as
    #: ``compute_seconds``, which wire.md §9 defines as how long working out the estimate took
    slot_seconds: float
    confidence: float
    capacity_state: str
    ahead_in_group: int
    gated: bool

    def disclosure(self, *, work_item: str, ownership_epoch: int) -> dict[str, Any]:
        """The ``work.disclose_schedule`` body (the protocol builds it; completion is never
        before the latest start, as its validator requires)."""
        return disclosure_body(
            work_item=work_item,
            ownership_epoch=ownership_epoch,
            earliest_start=self.start_earliest,
            latest_start=self.start_latest,
            estimated_completion=max(self.finish_expected, self.start_latest),
            confidence=self.confidence,
            capacity_state=self.capacity_state,
            computed_at=self.computed_at,
        )


# --- internal state ------------------------------------------------------------------------


class _Entry:
    """A queued item with its within-Group rank; ``alive`` is False once it leaves a lane."""

    __slots__ = ("alive", "gated", "item", "rank", "since")

    def __init__(self, item: QueuedItem, rank: tuple[float, int], since: int) -> None:
        self.item = item
        self.rank = rank  # (virtual deadline, enqueue sequence)
        self.since = since  # decisions made before it became eligible
        self.alive = False
        self.gated = item.risk_gated


class _Lane:
    """One Group's eligible items of one need class: a heap with lazy deletion."""

    __slots__ = ("epoch", "heap", "live")

    def __init__(self, epoch: int) -> None:
        self.heap: list[tuple[float, int, int, _Entry]] = []
        self.live = 0
        #: the stamp of this lane's one valid entry in its need class's pool
        self.epoch = epoch


class _Group:
    __slots__ = (
        "held", "lanes", "name", "order", "pass_", "queued", "quota", "running", "weight",
    )  # fmt: skip

    def __init__(self, name: str, share: Share, order: int, pass_: float) -> None:
        self.name = name
        self.weight = share.weight
        self.quota = share.quota
        self.order = order  # registration order: the deterministic tie-break
        self.pass_ = pass_
        self.queued = 0  # eligible (not gated) queued items
        self.held = 0  # gated queued items
        self.running = 0
        self.lanes: dict[Needs, _Lane] = {}

    @property
    def listed(self) -> bool:
        return self.quota is None or self.running < self.quota


class _Run:
    __slots__ = ("accounted", "boost", "ends_at", "reserved", "used")

    def __init__(self, reserved: float, boost: float, ends_at: float) -> None:
        self.reserved = reserved
        self.boost = boost
        self.ends_at = ends_at  # expected end (epoch seconds): when its slot should free
        self.used = 0.0
        self.accounted = reserved


#: (pass, group order, lane epoch, lane, group): valid while the lane still has that epoch
_PoolEntry = tuple[float, int, int, "_Lane", "_Group"]


class Scheduler:
    """Stride scheduling across Groups, EDF with ageing inside each (see the module doc)."""

    def __init__(self, policy: SchedulingPolicy | None = None) -> None:
        self._policy = policy or SchedulingPolicy()
        self._groups: dict[str, _Group] = {}
        self._entries: dict[tuple[str, str], _Entry] = {}
        self._running: dict[tuple[str, str], _Run] = {}
        #: per need class: the candidate Groups by pass, and how many Groups have such items
        self._pools: dict[Needs, list[_PoolEntry]] = {}
        self._members: dict[Needs, int] = {}
        self._active: set[str] = set()  # Groups with eligible queued items
        self._eligible = 0
        self._vtime = 0.0
        self._decisions = 0
        self._total_weight = 0.0
        self._seq = itertools.count()
        self._epochs = itertools.count()
        for name in self._policy.shares:
            self._group(name)

    # --- reading ---------------------------------------------------------------------------

    @property
    def policy(self) -> SchedulingPolicy:
        return self._policy

    @property
    def virtual_time(self) -> float:
        return self._vtime

    @property
    def decisions(self) -> int:
        return self._decisions

    def __contains__(self, key: object) -> bool:
        """``(group, work_item) in scheduler``: queued, gated or not."""
        return key in self._entries

    def queued(self, group: str | None = None) -> int:
        """Queued items, gated or not, of ``group`` or of all (running ones are not queued).

        No ``__len__`` on purpose: an idle scheduler must not be falsy."""
        if group is None:
            return len(self._entries)
        found = self._groups.get(group)
        return found.queued + found.held if found else 0

    def running(self, group: str | None = None) -> int:
        if group is None:
            return len(self._running)
        found = self._groups.get(group)
        return found.running if found else 0

    def pass_of(self, group: str) -> float:
        return self._groups[group].pass_

    # --- the queue -------------------------------------------------------------------------

    def enqueue(self, item: QueuedItem) -> None:
        """Queue an accepted item (R10.3-07: a commitment to schedule, not to start now)."""
        key = (item.group, item.work_item)
        if key in self._entries or key in self._running:
            raise ValueError(f"{item.work_item} of {item.group} is already queued or running")
        group = self._group(item.group)
        entry = _Entry(item, (self._order_key(item), next(self._seq)), self._decisions)
        self._entries[key] = entry
        if entry.gated:
            group.held += 1
        else:
            self._become_eligible(group, entry)

    def remove(self, group: str, work_item: str) -> QueuedItem:
        """Take a queued item out (cancelled, reassigned, withdrawn); ``KeyError`` if absent."""
        entry = self._entries.pop((group, work_item))
        g = self._groups[group]
        if entry.gated:
            g.held -= 1
        else:
            self._leave(g, entry)
        return entry.item

    def reprioritize(
        self,
        group: str,
        work_item: str,
        *,
        urgency: str | None = None,
        deadline: datetime | None = None,
        org_priority_class: str | None = None,
        estimated_seconds: float | None = None,
    ) -> QueuedItem:
        """Change what orders a queued item; the next decision sees it (R11.3-11, R0-12).

        The item keeps its enqueue time, so its age keeps counting; its Group keeps its pass
        (a priority change is not a return from idle)."""
        entry = self._entries[(group, work_item)]
        changes: dict[str, Any] = {}
        if urgency is not None:
            changes["urgency"] = urgency
        if deadline is not None:
            changes["deadline"] = deadline
        if org_priority_class is not None:
            changes["org_priority_class"] = org_priority_class
        if estimated_seconds is not None:
            changes["estimated_seconds"] = estimated_seconds
        return self._replace(entry, replace(entry.item, **changes))

    def set_gated(self, group: str, work_item: str, gated: bool) -> QueuedItem:
        """Hold an item until its execution approval, or release it (R0-06, R10.2-06)."""
        entry = self._entries[(group, work_item)]
        if entry.gated == gated:
            return entry.item
        g = self._groups[group]
        item = replace(entry.item, risk_gated=gated)
        entry.item = item
        entry.gated = gated
        if gated:
            self._leave(g, entry)
            g.held += 1
        else:
            g.held -= 1
            entry.since = self._decisions
            self._become_eligible(g, entry)
        return item

    # --- decisions -------------------------------------------------------------------------

    def pick(self, free: Resources, now: datetime) -> Pick | None:
        """The next item to start in a free slot, or None (nothing eligible fits).

        The Group is the lowest pass among need classes that fit ``free``; then that Group's
        best fitting item by virtual deadline. Costs ``O(K log G + K_g log n_g)``. Call it
        once per slot to fill, each time with what is still free (the caller subtracts the
        picked item's needs); ``now`` dates the slot's expected end for estimates."""
        _aware(now, "now")
        if free.slots < 1:
            return None
        best: _PoolEntry | None = None
        for needs in self._pools:
            if needs.fits(free):
                top = self._pool_top(needs)
                if top is not None and (best is None or top < best):
                    best = top
        if best is None:
            return None
        group = best[4]
        chosen: _Entry | None = None
        for needs, lane in group.lanes.items():
            if needs.fits(free):
                head = self._lane_head(lane)
                if chosen is None or head.rank < chosen.rank:
                    chosen = head
        assert chosen is not None  # the pool listed this Group for a fitting need class
        policy = self._policy
        # served as if its pass were at least V - B: bounded credit for a backlogged Group
        effective = max(group.pass_, self._vtime - policy.max_credit_s)
        self._vtime = max(self._vtime, effective)
        item = chosen.item
        reserved = policy.reservation(item)
        boost = policy.class_boost[item.org_priority_class]
        del self._entries[(item.group, item.work_item)]
        self._leave(group, chosen)
        group.running += 1
        self._running[(item.group, item.work_item)] = _Run(
            reserved, boost, now.timestamp() + reserved
        )
        group.pass_ = effective + reserved / (group.weight * boost)
        self._relist(group)
        waited = self._decisions - chosen.since
        self._decisions += 1
        return Pick(item, reserved, self._decisions, waited)

    def charge(self, group: str, slot_seconds: float, *, work_item: str | None = None) -> None:
        """Charge slot time to a Group's account (fairness is on slot time used, R0-05).

        With ``work_item`` (a running pick) ``slot_seconds`` is more time that item used: only
        what exceeds its reservation is charged, and ``finish`` will not charge it again.
        Without, it is charged as given."""
        if slot_seconds < 0:
            raise ValueError("slot_seconds is not negative")
        g = self._groups[group]
        if work_item is None:
            due = slot_seconds / g.weight
        else:
            run = self._running[(group, work_item)]
            run.used += slot_seconds
            extra = max(0.0, run.used - run.accounted)
            run.accounted += extra
            due = extra / (g.weight * run.boost)
        if due > 0:
            g.pass_ += due
            self._relist(g)

    def finish(self, group: str, work_item: str, *, used_seconds: float) -> None:
        """A picked item left its slot (done, failed, or checkpointed for preemption, R0-13).

        ``used_seconds`` is its total slot time; what exceeds the reservation and earlier
        ``charge`` calls is charged now. Frees the Group's quota."""
        run = self._running.pop((group, work_item))
        g = self._groups[group]
        was_listed = g.listed
        g.running -= 1
        due = max(0.0, used_seconds - run.accounted)
        if due > 0 or not was_listed:
            g.pass_ += due / (g.weight * run.boost)
            self._relist(g)

    # --- the bound and disclosure ----------------------------------------------------------

    def wait_bound(self, group: str, position: int = 0, *, extra_charge_s: float = 0.0) -> int:
        """The bound on decisions before an item at ``position`` in ``group`` is picked, if it
        stays eligible (the closed form of ``D_k`` in the module doc), in O(1).

        Counts every Group this scheduler knows; a Group that appears later adds its share."""
        policy = self._policy
        c_min, c_max = policy.step_bounds
        found = self._groups.get(group)
        weight = found.weight if found else policy.share(group).weight
        lead = max(0.0, found.pass_ - self._vtime) if found else 0.0
        span = policy.max_credit_s + lead + (position * c_max + extra_charge_s) / weight
        others = len(self._groups) - (1 if found else 0)
        other_weight = self._total_weight - (weight if found else 0.0)
        return position + others + math.floor(span * other_weight / c_min)

    def position_estimate(self, item: QueuedItem, *, now: datetime, slots: int) -> StartEstimate:
        """Estimated start and finish of ``item`` (queued, or as if queued now) (R11.2-01).

        ``slots`` is the Worker's declared concurrency (R11.1-11). From the time a slot should
        free (every slot taken: the first running item's expected end), the work queued ahead
        in this Group is done at: earliest, every slot; expected, this Group's share among the
        Groups with work now; latest, its share if every known Group had work, plus one item
        in the way. Reads only this Group's items (``O(n_g)``: for disclosure on acceptance
        and on material change, not per decision)."""
        _aware(now, "now")
        if slots < 1:
            raise ValueError("a Worker has at least one slot")
        policy = self._policy
        entry = self._entries.get((item.group, item.work_item))
        if entry is not None:
            item, rank = entry.item, entry.rank
        else:
            rank = (self._order_key(item), math.inf)
        group = self._groups.get(item.group)
        ahead = [
            other.item
            for other in (self._queued_entries(group) if group else ())
            if other.rank < rank
        ]
        ahead_s = math.fsum(policy.reservation(other) for other in ahead)
        own_s = policy.reservation(item)
        weight = group.weight if group else policy.share(item.group).weight
        competing = math.fsum(
            self._groups[name].weight for name in self._active if name != item.group
        )
        everyone = math.fsum(g.weight for name, g in self._groups.items() if name != item.group)
        share_now = weight / (weight + competing)
        share_worst = weight / (weight + everyone)
        in_the_way = max([own_s, *(policy.reservation(other) for other in ahead)])
        # every slot taken: nothing starts before the first running item should end
        ends = sorted(run.ends_at for run in self._running.values())
        taken = len(ends) - slots
        start = now + timedelta(
            seconds=max(0.0, ends[taken] - now.timestamp()) if taken >= 0 else 0
        )
        earliest = start + timedelta(seconds=ahead_s / slots)
        expected = start + timedelta(seconds=ahead_s / (slots * share_now))
        latest = start + timedelta(seconds=(ahead_s + in_the_way) / (slots * share_worst))
        confidence = 0.9
        if item.estimated_seconds is None or any(o.estimated_seconds is None for o in ahead):
            confidence = 0.5
        if competing > 0:
            confidence *= 0.8
        gated = item.risk_gated
        if gated:
            confidence = min(confidence, 0.3)
        return StartEstimate(
            computed_at=now,
            start_earliest=earliest,
            start_expected=expected,
            start_latest=max(latest, expected),
            finish_expected=expected + timedelta(seconds=own_s),
            slot_seconds=own_s,
            confidence=round(confidence, 2),
            capacity_state=self._capacity_state(slots),
            ahead_in_group=len(ahead),
            gated=gated,
        )

    def _capacity_state(self, slots: int) -> str:
        """The Worker's capacity as a whole, never by Group (R11.2-02)."""
        available, busy, saturated = CAPACITY_STATES
        if len(self._running) < slots:
            return available
        return saturated if self._eligible > slots else busy

    # --- internals -------------------------------------------------------------------------

    def _group(self, name: str) -> _Group:
        group = self._groups.get(name)
        if group is None:
            group = _Group(name, self._policy.share(name), len(self._groups), self._vtime)
            self._groups[name] = group
            self._total_weight += group.weight
        return group

    def _order_key(self, item: QueuedItem) -> float:
        """The virtual deadline: in ``[queued_at, queued_at + slack[urgency]]`` (ageing)."""
        arrival = item.queued_at.timestamp()
        key = arrival + self._policy.urgency_slack_s[item.urgency]
        if item.deadline is not None:
            latest_start = item.deadline.timestamp() - self._policy.reservation(item)
            key = min(key, max(latest_start, arrival))
        return key

    def _queued_entries(self, group: _Group) -> Iterator[_Entry]:
        for lane in group.lanes.values():
            for *_, entry in lane.heap:
                if entry.alive:
                    yield entry

    def _replace(self, entry: _Entry, item: QueuedItem) -> QueuedItem:
        """Re-rank a queued item in place: same enqueue sequence, new virtual deadline."""
        fresh = _Entry(item, (self._order_key(item), entry.rank[1]), entry.since)
        self._entries[(item.group, item.work_item)] = fresh
        if not entry.gated:
            group = self._groups[item.group]
            self._lane_remove(group, entry)
            self._lane_add(group, fresh)
        return item

    def _become_eligible(self, group: _Group, entry: _Entry) -> None:
        if group.queued == 0:
            # back from idle: start at the virtual time, with no credit banked while idle
            group.pass_ = max(group.pass_, self._vtime)
            self._active.add(group.name)
        group.queued += 1
        self._eligible += 1
        self._lane_add(group, entry)

    def _leave(self, group: _Group, entry: _Entry) -> None:
        self._lane_remove(group, entry)
        group.queued -= 1
        self._eligible -= 1
        if group.queued == 0:
            self._active.discard(group.name)

    def _lane_add(self, group: _Group, entry: _Entry) -> None:
        needs = entry.item.needs
        lane = group.lanes.get(needs)
        if lane is None:
            lane = group.lanes[needs] = _Lane(next(self._epochs))
            self._members[needs] = self._members.get(needs, 0) + 1
            self._pools.setdefault(needs, [])
            if group.listed:
                self._push(needs, group, lane)
        entry.alive = True
        heapq.heappush(lane.heap, (*entry.rank, next(self._seq), entry))
        lane.live += 1

    def _lane_remove(self, group: _Group, entry: _Entry) -> None:
        needs = entry.item.needs
        lane = group.lanes[needs]
        entry.alive = False
        lane.live -= 1
        if lane.live == 0:
            del group.lanes[needs]
            lane.epoch = -1  # its pool entries go stale with it
            self._members[needs] -= 1
            if self._members[needs] == 0:
                del self._members[needs], self._pools[needs]
        elif len(lane.heap) > 2 * lane.live + 32:
            lane.heap = [row for row in lane.heap if row[-1].alive]
            heapq.heapify(lane.heap)

    def _lane_head(self, lane: _Lane) -> _Entry:
        heap = lane.heap
        while not heap[0][-1].alive:
            heapq.heappop(heap)
        return heap[0][-1]

    def _relist(self, group: _Group) -> None:
        """After a pass or quota change: one fresh pool entry per need class, old ones stale."""
        listed = group.listed
        for needs, lane in group.lanes.items():
            lane.epoch = next(self._epochs)
            if listed:
                self._push(needs, group, lane)

    def _push(self, needs: Needs, group: _Group, lane: _Lane) -> None:
        pool = self._pools[needs]
        heapq.heappush(pool, (group.pass_, group.order, lane.epoch, lane, group))
        if len(pool) > 2 * self._members[needs] + 64:
            pool[:] = [row for row in pool if row[3].epoch == row[2]]
            heapq.heapify(pool)

    def _pool_top(self, needs: Needs) -> _PoolEntry | None:
        pool = self._pools[needs]
        while pool and pool[0][3].epoch != pool[0][2]:
            heapq.heappop(pool)
        return pool[0] if pool else None
