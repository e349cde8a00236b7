"""The demo coordinator's answer to a mission owner's "ask for changes" (issue 36 §5; R10.2-21,
R10.2-02, R13.2-03 step 5).

A mission owner who sends accepted results back at the final approval records a change request
on the mission (``mission.request_changes``); the mission cannot be approved while it is open.
Only the coordinator creates WorkItems (R10.2-02), so this is the coordinator's step: for each
item an open request names, a replacement WorkItem (``replaces``, R10.2-21) on the same
contract terms, the note added to its goal, with the same dependencies — so the mission goes
round again (offered, run, reviewed) and can then be approved. Pure: the steps come from the
group's state alone.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from missionweave.protocol.missions.changes import open_change_requests
from missionweave.protocol.timefmt import parse_timestamp
from missionweave.protocol.work.items import WorkItem

from .contracts import authorize_body, source_bytes
from .steps import Step
from .view import GroupState

#: a contract's goal is at most this long (wire.md §10, a text field)
GOAL_LIMIT = 10_000


def replacement_id(state: GroupState, old: str) -> str:
    """``<old>-r<n>``: the first such id the group does not hold yet."""
    n = 1
    while state.work_item(f"{old}-r{n}") is not None:
        n += 1
    return f"{old}-r{n}"


def replacement_body(
    item: WorkItem, new_id: str, note: str, *, now: datetime, fresh_deadline: str
) -> dict[str, Any]:
    """``work.authorize`` of ``new_id`` replacing ``item``: its contract with the note added
    to the goal (and ``fresh_deadline`` if its own has passed), its dependencies."""
    goal = f"{item.contract.get('goal', item.id)} — changes asked: {note}"[:GOAL_LIMIT]
    contract = {**item.contract, "goal": goal}
    deadline = contract.get("deadline")
    if isinstance(deadline, str) and parse_timestamp(deadline) <= now:
        contract["deadline"] = fresh_deadline
    body = authorize_body(new_id, item.mission, contract, list(item.depends_on))
    return {**body, "replaces": item.id}


def answer_change_requests(
    group: str,
    state: GroupState,
    ours: Callable[[WorkItem], bool],
    *,
    now: datetime,
    fresh_deadline: str,
) -> list[Step]:
    """One replacement per item each open request of an active mission still waits on, for
    the items that are ``ours`` (the coordinator authorised them; oldest request first; an
    item named twice is replaced once, with the first note)."""
    steps: list[Step] = []
    done: set[str] = set()
    for mission in sorted(state.missions(), key=lambda m: m.created_sequence):
        if mission.state != "active":
            continue
        for request in open_change_requests(mission, state.work_item):
            for old in request["waiting"]:
                item = state.work_item(old)
                if item is None or old in done or not ours(item):
                    continue
                done.add(old)
                new_id = replacement_id(state, old)
                body = replacement_body(
                    item, new_id, request["note"], now=now, fresh_deadline=fresh_deadline
                )
                uploads = (source_bytes(str(item.contract.get("goal", ""))),)
                steps.append(Step(group, "work.authorize", body, uploads=uploads))
    return steps
