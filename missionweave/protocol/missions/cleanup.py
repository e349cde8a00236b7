"""What ending a WorkItem cleans up: R10.2-14's "cleanup policy applies" (R10.2-18, R10.2-20,
R10.2-21).

When a decision ends a WorkItem — ``work.cancel``, a final ``work.fail``, a mission's end
propagated to its items, a failed child under ``fail_parent`` — two things must not be left
behind:

1. **Its running child mission.** The child was created to unblock this item (R10.2-15); with
   the item ended its result has nowhere to go (R10.2-16 verifies only a blocked parent), yet
   it would go on running and spending. So the parent records ``mission.child_cancelled`` and
   the child is cancelled like a ``mission.cancel`` (R10.2-18: its unfinished WorkItems with
   it, and their own children in turn). In the same group that is more events of this very
   command; in another group it is the authority's follow-up ``link.cancel_child_mission``
   there, carried through the outbox after this command commits (R10.4-05: no cross-group
   transaction).
2. **The items waiting on it.** ``work.dependency_ended`` for each (``work.dependents``).

``decider.decide`` applies :func:`clean_up` to every decision, after the command's own rules,
so no command that ends an item can forget it; a command whose decision may end items loads
what this reads with :func:`with_cleanup`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .. import states as S
from ..errors import ErrorCode, ProtocolError
from ..evolvers import evolves
from ..facts import Command, Decision, Fact, FollowUp, NewEvent, StateKey, View
from ..frozen import replace
from ..validation import check_fields, check_id, check_text
from ..work.dependencies import GRAPH_KEY
from ..work.dependents import Ending, Restoring, events_for, keys_of_dependents
from ..work.item_evolvers import WORK_ITEM
from ..work.items import WorkItem, work_item_key
from .children import cancel_follow_up
from .lifecycle import ending_events
from .model import ACTIVE, Mission, mission_key, mission_or_404, require_active_mission

#: the parent WorkItem's record that it cancelled its child (both cases, same group or not)
CHILD_CANCELLED = "mission.child_cancelled"
_ENDS = {"work.failed": S.FAILED, "work.cancelled": S.CANCELLED}
_MISSION_ENDS = frozenset({"mission.approved", "mission.failed", "mission.cancelled"})

Keys = Callable[[Command, View], set[StateKey]]


# --- what it reads ---------------------------------------------------------------------------


def running_child(item: WorkItem) -> dict[str, Any] | None:
    child = item.child
    return child if child is not None and child.get("status") == "running" else None


def keys_for_cleanup(view: View, group: str, work_items: Iterable[str]) -> set[StateKey]:
    """What :func:`clean_up` reads if any of ``work_items`` ends: each one's child mission in
    this group with that mission's WorkItems (which end with it, so recursively), then the
    graph and the WorkItems that depend on any of them."""
    keys: set[StateKey] = set()
    frontier, seen = list(work_items), set[str]()
    while frontier:
        work_item = frontier.pop()
        if work_item in seen:
            continue
        seen.add(work_item)
        keys.add(work_item_key(work_item))
        item: WorkItem | None = view.get(work_item_key(work_item))
        child = running_child(item) if item is not None else None
        if child is not None and child["group"] == group:
            keys.add(mission_key(child["mission"]))
            mission: Mission | None = view.get(mission_key(child["mission"]))
            if mission is not None:
                frontier.extend(mission.work_items)
    return keys | keys_of_dependents(view, seen)


def with_cleanup(keys: Keys, *, may_end: Callable[[WorkItem], bool] = lambda _item: True) -> Keys:
    """``keys`` plus what :func:`clean_up` reads for the WorkItems ``keys`` names whose end (or
    return) the command may decide: ``may_end`` of the item as it is now."""

    def keys_and_cleanup(command: Command, view: View) -> set[StateKey]:
        own = keys(command, view)
        loaded = [view.get(key) for key in own if key[0] == "work_item"]
        candidates = [item.id for item in loaded if item is not None and may_end(item)]
        return own | keys_for_cleanup(view, command.group, candidates) if candidates else own

    return keys_and_cleanup


# --- what it decides ---------------------------------------------------------------------------


def clean_up(view: View, command: Command, decision: Decision) -> Decision:
    """``decision`` with the cleanup of every WorkItem it ends and of every failed one it
    offers again or replaces (module doc). Events the cleanup appends are read in turn: a
    cancelled child's WorkItems end too, and their children and dependents follow."""
    events, follow_ups = list(decision.events), list(decision.follow_ups)
    endings: list[Ending] = []
    restorings: list[Restoring] = []
    ended_missions: set[str] = set()
    index = 0
    while index < len(events):
        event = events[index]
        index += 1
        if event.type in _MISSION_ENDS:
            ended_missions.add(event.payload["mission"])
        ending = _ending(event)
        if ending is not None and all(e.work_item != ending.work_item for e in endings):
            endings.append(ending)
            if event.type != "mission.child_failed":  # that child has ended by itself
                more, sent = _cancel_child(view, command, ending, ended_missions)
                events.extend(more)
                follow_ups.extend(sent)
            continue
        restoring = _restoring(view, event)
        if restoring is not None:
            restorings.append(restoring)
    if not endings and not restorings:
        return decision
    if GRAPH_KEY not in view:
        raise RuntimeError(f"{command.type} ends WorkItems: its keys need ``with_cleanup``")
    ended = frozenset(ending.work_item for ending in endings)
    events.extend(events_for(view, endings, restorings, ended_here=ended))
    return replace(decision, events=events, follow_ups=tuple(follow_ups))


def _ending(event: NewEvent) -> Ending | None:
    p = event.payload
    if event.type in _ENDS:
        return Ending(p["work_item"], _ENDS[event.type], _reason_of(p))
    if event.type == "mission.child_failed" and p["failure_policy"] == "fail_parent":
        return Ending(p["work_item"], S.FAILED, p["reason"])
    return None


def _reason_of(payload: dict[str, Any]) -> str:
    """A cancellation's reason, or the summary of a failure's first evidence."""
    if payload.get("reason"):
        return str(payload["reason"])
    evidence = payload.get("evidence") or [{}]
    return str((evidence[0].get("result") or {}).get("summary", ""))


def _restoring(view: View, event: NewEvent) -> Restoring | None:
    if event.type == "work.replaced":
        return Restoring(event.payload["work_item"], event.payload["replaced_by"])
    if event.type == "work.offered":
        item: WorkItem | None = view.get(work_item_key(event.payload["work_item"]))
        if item is not None and item.state == S.FAILED:  # R10.2-20: a failed item's new offer
            return Restoring(item.id)
    return None


def _cancel_child(
    view: View, command: Command, ending: Ending, ended_missions: set[str]
) -> tuple[list[NewEvent], list[FollowUp]]:
    """The ended item's running child cancelled: here, its mission's end; elsewhere, the
    follow-up that ends it there."""
    item: WorkItem | None = view.get(work_item_key(ending.work_item))
    child = running_child(item) if item is not None else None
    if item is None or child is None:
        return [], []
    reason = f"{item.id} was {ending.outcome}" + (f": {ending.reason}" if ending.reason else "")
    cancelled = {
        "work_item": item.id,
        "child": {"group": child["group"], "mission": child["mission"]},
        "correlation_id": child["correlation_id"],
        "reason": reason,
    }
    events = [NewEvent(CHILD_CANCELLED, cancelled)]
    if child["group"] != command.group:
        return events, [cancel_follow_up(command.group, item, reason)]
    mission: Mission | None = view.get(mission_key(child["mission"]))
    if mission is None or mission.state != ACTIVE or mission.id in ended_missions:
        return events, []
    payload = {
        "mission": mission.id,
        "reason": reason,
        "cancelled_with": {
            "group": command.group,
            "work_item": item.id,
            "correlation_id": child["correlation_id"],
        },
    }
    events += ending_events(
        view, mission, outcome="cancelled", payload=payload, producer=command.actor
    )
    return events, []


# --- link.cancel_child_mission: the child's group hears it (authority only) -------------------


def validate_link_cancel(body: dict[str, Any]) -> None:
    check_fields(body, required=("mission", "correlation_id", "reason", "parent"))
    check_id(body["mission"], "$.mission")
    check_text(body["reason"], "$.reason", empty=True)


def _mission_items(command: Command, view: View) -> set[StateKey]:
    keys = {mission_key(command.body["mission"])}
    mission: Mission | None = view.get(mission_key(command.body["mission"]))
    if mission is not None:
        keys.update(work_item_key(item) for item in mission.work_items)
    return keys


keys_of_link_cancel = with_cleanup(_mission_items)


def decide_link_cancel(view: View, command: Command) -> Decision:
    """The child mission its parent WorkItem's end cancelled, ended here like a
    ``mission.cancel`` (R10.2-18) without telling the parent back: the parent asked."""
    body = command.body
    mission = mission_or_404(view, body["mission"])
    if mission.link is None or mission.link["correlation_id"] != body["correlation_id"]:
        raise ProtocolError(
            ErrorCode.NOT_FOUND,
            f"mission {mission.id} is not the child linked by {body['correlation_id']}",
            requirement="R10.4-06",
            details={"mission": mission.id},
        )
    require_active_mission(mission, command.type)
    payload = {
        "mission": mission.id,
        "reason": body["reason"],
        "cancelled_with": {**body["parent"], "correlation_id": body["correlation_id"]},
    }
    events = ending_events(
        view, mission, outcome="cancelled", payload=payload, producer=command.actor
    )
    return Decision(events, {"mission": mission.id})


# --- the parent's record --------------------------------------------------------------------


@evolves(CHILD_CANCELLED, aggregate=WORK_ITEM)
def _child_cancelled(item: WorkItem, fact: Fact, key: StateKey) -> WorkItem:
    assert item.child is not None
    child = {**item.child, "status": "cancelled", "cancel_reason": fact.payload["reason"]}
    return replace(item, child=child)
