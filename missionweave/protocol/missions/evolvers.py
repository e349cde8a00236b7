"""How each event changes a Mission: one small evolver per event type."""

from __future__ import annotations

from ..budgets import CHARGE_EVENTS, add_usage, non_zero
from ..evolvers import REGISTRY, evolves
from ..facts import Fact, StateKey
from ..frozen import replace
from .changes import REQUESTED, changes_requested
from .model import ACTIVE, Mission, mission_key
from .usage import with_point


def _the_mission(fact: Fact) -> list[StateKey]:
    return [mission_key(fact.payload["mission"])]


MISSION = REGISTRY.aggregate("mission", keys=_the_mission)


def _created_and_parent(fact: Fact) -> list[StateKey]:
    """The new mission and, for ``mission.create`` with a parent, that parent (R10.4-06)."""
    keys = _the_mission(fact)
    if fact.payload.get("parent") is not None:
        keys.append(mission_key(fact.payload["parent"]))
    return keys


@evolves("mission.created", aggregate=MISSION, keys=_created_and_parent, creates=True)
def _created(current: Mission | None, fact: Fact, key: StateKey) -> Mission:
    payload = fact.payload
    if key != mission_key(payload["mission"]):
        assert current is not None, "a child mission names an unknown parent"
        return replace(current, children=(*current.children, payload["mission"]))
    link = payload.get("link")
    parent = payload.get("parent")
    if link is not None:
        parent = (
            link["mission"] if link["group"] == fact.group else f"{link['group']}/{link['mission']}"
        )
    return Mission(
        id=payload["mission"],
        state=ACTIVE,
        goal=payload["goal"],
        limits=dict(payload["budgets"]),
        used={},
        parent=parent,
        children=(),
        work_items=(),
        created_by=fact.actor,
        created_sequence=fact.sequence,
        link=link,
    )


@evolves("mission.approved", "mission.failed", "mission.cancelled", aggregate=MISSION)
def _ended(mission: Mission, fact: Fact, key: StateKey) -> Mission:
    return replace(mission, state=fact.type.removeprefix("mission."))


@evolves(REQUESTED, aggregate=MISSION)
def _changes_requested(mission: Mission, fact: Fact, key: StateKey) -> Mission:
    """R13.2-03 step 5 (issue 36 §5): the request kept on the mission."""
    return changes_requested(mission, fact)


@evolves("work.authorized", aggregate=MISSION)
def _work_authorized(mission: Mission, fact: Fact, key: StateKey) -> Mission:
    return replace(mission, work_items=(*mission.work_items, fact.payload["work_item"]))


@evolves("mission.child_created", aggregate=MISSION)
def _child_created(mission: Mission, fact: Fact, key: StateKey) -> Mission:
    """The parent WorkItem's mission lists the child, ``group/m`` when in another group."""
    child = fact.payload["child"]
    name = (
        child["mission"] if child["group"] == fact.group else f"{child['group']}/{child['mission']}"
    )
    return replace(mission, children=(*mission.children, name))


def _charged_missions(fact: Fact) -> list[StateKey]:
    return [mission_key(mission) for mission in fact.payload.get("charged_missions", ())]


@evolves(*sorted(CHARGE_EVENTS), aggregate=MISSION, keys=_charged_missions)
def _charged(mission: Mission, fact: Fact, key: StateKey) -> Mission:
    """R11.5-12: usage charges the whole ancestry (the decider checked every limit first);
    a charge that changes ``used`` is a point of its ``usage_series``."""
    usage = fact.payload["usage"]
    used = add_usage(mission.used, usage)
    series = mission.usage_series
    if non_zero(usage):
        series = with_point(series, fact.sequence, fact.recorded_at, used)
    return replace(mission, used=used, usage_series=series)
