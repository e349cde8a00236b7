"""The registry of evolvers: how each event changes each aggregate it touches.

One ``Evolver`` per (event type, aggregate kind) says which keys of that aggregate the event
changes and how one of them folds the event in. ``decider.routes`` and ``decider.evolve``
only look evolvers up here.

Why a registry rather than one routing dict per module merged into one table: in a merge
(``{**a.ROUTES, **b.ROUTES}``) a later module silently replaces an earlier module's route for
the same event, and an event touching several aggregates has to be patched back in by hand.
Here a second evolver for the same (event, aggregate) raises ``DuplicateEvolver`` when its
module is imported, and an event touching several aggregates is simply one evolver per
aggregate. What every evolver of a kind shares (a WorkItem's ``history``) is declared once, on
its ``Aggregate``; an event that changes nothing is declared ``audit_only``.
"""

from __future__ import annotations

from bisect import insort
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .facts import Fact, StateKey

#: the aggregate kinds of a group's state, in the order ``routes`` lists an event's keys:
#: the WorkItem an event is about before what it changes beside it (a fixed order, so the
#: live write path and a replay write the same rows in the same order)
AGGREGATE_KINDS = (
    "work_item", "dependencies", "mission", "proposal", "membership", "artifact", "context",
)  # fmt: skip

KeysOf = Callable[[Fact], list[StateKey]]
#: ``(current, fact, key) -> the aggregate at key after fact``; ``current`` is ``None`` only
#: for an evolver that creates its aggregate
Fold = Callable[[Any, Fact, StateKey], Any]
Finish = Callable[[Any, Fact], Any]


class RegistryError(ValueError):
    """A registration that would make routing ambiguous (raised at import time)."""


class DuplicateEvolver(RegistryError):
    """A second evolver for an (event type, aggregate kind) that already has one."""


class DuplicateAggregate(RegistryError):
    """A second declaration of an aggregate kind."""


@dataclass(frozen=True, slots=True, eq=False)
class Aggregate:
    """An aggregate kind and what all its evolvers share."""

    kind: str
    #: the keys an event changes when its evolver names none (e.g. the payload's WorkItem)
    keys: KeysOf | None = None
    #: applied after every evolver of this kind (e.g. a WorkItem's bounded ``history``)
    finish: Finish | None = None
    #: the value before the first event, for an aggregate that always exists (the graph)
    initial: Callable[[], Any] | None = None


@dataclass(frozen=True, slots=True)
class Evolver:
    event: str
    aggregate: Aggregate
    keys: KeysOf
    fold: Fold
    #: whether the event may find no aggregate at a key (it creates it)
    creates: bool = False

    @property
    def kind(self) -> str:
        return self.aggregate.kind


class EvolverRegistry:
    """Evolvers by (event type, aggregate kind), and the events deliberately left audit-only."""

    def __init__(self) -> None:
        self._aggregates: dict[str, Aggregate] = {}
        self._evolvers: dict[tuple[str, str], Evolver] = {}
        #: per event, its evolvers in ``AGGREGATE_KINDS`` order (what ``routes`` walks)
        self._by_event: dict[str, list[Evolver]] = {}
        self._audit_only: set[str] = set()

    # --- declaring ---------------------------------------------------------------------

    def aggregate(
        self,
        kind: str,
        *,
        keys: KeysOf | None = None,
        finish: Finish | None = None,
        initial: Callable[[], Any] | None = None,
    ) -> Aggregate:
        """Declare an aggregate kind, once."""
        if kind not in AGGREGATE_KINDS:
            raise RegistryError(
                f"unknown aggregate kind {kind!r}, expected one of {AGGREGATE_KINDS}"
            )
        if kind in self._aggregates:
            raise DuplicateAggregate(f"aggregate kind {kind!r} is already declared")
        aggregate = Aggregate(kind, keys, finish, initial)
        self._aggregates[kind] = aggregate
        return aggregate

    def evolves(
        self, *events: str, aggregate: Aggregate, keys: KeysOf | None = None, creates: bool = False
    ) -> Callable[[Fold], Fold]:
        """Register the decorated fold as ``aggregate``'s evolver for each of ``events``.

        ``keys`` (default: the aggregate's) names the keys of ``aggregate`` an event changes.
        Nothing is registered unless every event is free for this aggregate.
        """

        def register(fold: Fold) -> Fold:
            self._register(events, aggregate, keys, fold, creates)
            return fold

        return register

    def audit_only(self, *events: str) -> None:
        """Declare events that change no aggregate: they are in the log and route nowhere."""
        routed = [event for event in events if event in self._by_event]
        if routed:
            raise RegistryError(f"{routed} change aggregates, so they are not audit-only")
        self._audit_only.update(events)

    def _register(
        self,
        events: tuple[str, ...],
        aggregate: Aggregate,
        keys: KeysOf | None,
        fold: Fold,
        creates: bool,
    ) -> None:
        if self._aggregates.get(aggregate.kind) is not aggregate:
            raise RegistryError(f"aggregate {aggregate.kind!r} is not declared in this registry")
        keys = keys or aggregate.keys
        if keys is None:
            raise RegistryError(f"{events}: name the {aggregate.kind} keys the event changes")
        for event in events:
            taken = self._evolvers.get((event, aggregate.kind))
            if taken is not None:
                raise DuplicateEvolver(
                    f"{event} already has a {aggregate.kind} evolver "
                    f"({taken.fold.__module__}.{taken.fold.__qualname__}); "
                    f"{fold.__module__}.{fold.__qualname__} would silently replace it"
                )
            if event in self._audit_only:
                raise RegistryError(f"{event} is declared audit-only")
        if len(set(events)) != len(events):
            raise DuplicateEvolver(f"{events} names an event twice")
        rank = AGGREGATE_KINDS.index
        for event in events:
            evolver = Evolver(event, aggregate, keys, fold, creates)
            self._evolvers[event, aggregate.kind] = evolver
            insort(self._by_event.setdefault(event, []), evolver, key=lambda e: rank(e.kind))

    # --- asking ------------------------------------------------------------------------

    def routes(self, fact: Fact) -> list[StateKey]:
        """The keys ``fact`` changes, aggregate kind by kind; ``[]`` for an audit-only event."""
        return [key for evolver in self._by_event.get(fact.type, ()) for key in evolver.keys(fact)]

    def evolve(self, key: StateKey, current: Any, fact: Fact) -> Any:
        """The aggregate at ``key`` after ``fact``."""
        kind = key[0]
        aggregate = self._aggregates.get(kind)
        if aggregate is None:
            raise ValueError(f"no aggregate of kind {kind!r}")
        evolver = self._evolvers.get((fact.type, kind))
        if evolver is None:
            raise ValueError(f"a {kind} does not evolve on {fact.type}")
        if current is None and aggregate.initial is not None:
            current = aggregate.initial()
        assert current is not None or evolver.creates, f"{fact.type} for an unknown {kind} {key}"
        changed = evolver.fold(current, fact, key)
        return aggregate.finish(changed, fact) if aggregate.finish else changed

    def events_changing(self, kind: str) -> frozenset[str]:
        """The event types with an evolver for aggregate ``kind``."""
        return frozenset(event for event, evolver_kind in self._evolvers if evolver_kind == kind)

    def audit_only_events(self) -> frozenset[str]:
        return frozenset(self._audit_only)

    def evolvers(self) -> tuple[Evolver, ...]:
        """Every registered evolver, in registration order."""
        return tuple(self._evolvers.values())


#: the one registry the protocol's evolver modules register with at import
#: (``decider`` imports them all)
REGISTRY = EvolverRegistry()
evolves = REGISTRY.evolves
