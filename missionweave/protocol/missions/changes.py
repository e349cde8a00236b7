"""Asking for changes at the final approval: ``mission.request_changes`` →
``mission.changes_requested`` (R13.2-03 step 5, R10.2-19, R10.2-21, R10.2-02; issue 36 §5).

At the final human approval (R13.2-03 step 5) a mission owner reads every result and either
approves the mission or — this command — sends chosen results back with a note. What it can
send back is a ``verified`` WorkItem, and ``verified`` is terminal (R10.2-19): nothing reopens
it. So the request does not move the item; it holds the *mission*:

- it is recorded on the Mission (``change_requests``: the items named, the note, who asked and
  when), and while a request is **open** — while any item it names has no replacement —
  ``mission.approve`` is refused (``ILLEGAL_TRANSITION``, R13.2-03, ``details``
  ``{"changes_requested": [the items still unreplaced]}``);
- the coordinator answers it the one way the seeds give it to carry work on (R10.2-21,
  R10.2-02: the coordinator creates WorkItems): ``work.authorize`` with ``replaces`` naming the
  verified item, which this request is what allows (``replacements``). The verified item stays
  verified with ``replaced_by``; what depends on it now waits for the replacement, and the
  mission's final approval waits for the replacement to finish like any other WorkItem.

Who may ask: the people who may approve the mission (``mission.approve``'s roles: a human
mission owner), since it is the other answer to the same question. Naming an item that is not
the mission's, not verified, or already replaced is refused and appends nothing. An item named
by an open request may be named again (another owner's note); one replacement answers both.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import states as S
from ..errors import ErrorCode, ProtocolError
from ..facts import Command, Decision, Fact, NewEvent, StateKey, View
from ..frozen import replace
from ..validation import check_fields, check_id, check_text, malformed
from ..work.items import WorkItem, work_item_key
from .model import Mission, mission_key, mission_or_404, require_active_mission

REQUEST = "mission.request_changes"
REQUESTED = "mission.changes_requested"
#: who may ask: those who may approve the mission (``mission.approve``), humans only
ROLES = frozenset({"mission_owner"})
#: WorkItems named in one request
MAX_ITEMS = 50
NOTE_LIMIT = 10_000
RULE = "R13.2-03"


def validate_request_changes(body: dict[str, Any]) -> None:
    """``mission``, ``work_items`` (1..50 distinct ids) and a non-blank ``note``."""
    check_fields(body, required=("mission", "work_items", "note"))
    check_id(body["mission"], "$.mission")
    items = body["work_items"]
    if not isinstance(items, list) or not 1 <= len(items) <= MAX_ITEMS:
        raise malformed(f"work_items names 1 to {MAX_ITEMS} WorkItems", "$.work_items", RULE)
    for index, item in enumerate(items):
        check_id(item, f"$.work_items[{index}]")
        if item in items[:index]:
            raise malformed("each WorkItem is named once", f"$.work_items[{index}]", RULE)
    check_text(body["note"], "$.note", max_length=NOTE_LIMIT)


def keys_of_request_changes(command: Command, view: View) -> set[StateKey]:
    body = command.body
    return {mission_key(body["mission"]), *(work_item_key(i) for i in body["work_items"])}


def _refused_item(view: View, mission: Mission, item_id: str, path: str) -> None:
    """The named item is one of the mission's verified WorkItems, not yet replaced."""
    item: WorkItem | None = view.get(work_item_key(item_id))
    if item is None:
        raise ProtocolError(
            ErrorCode.NOT_FOUND,
            f"no WorkItem {item_id!r} in this group",
            requirement="wire§4",
            details={"path": path, "work_item": item_id},
        )
    if item.mission != mission.id:
        raise ProtocolError(
            ErrorCode.MALFORMED,
            f"{item_id} belongs to mission {item.mission!r}, not {mission.id!r}",
            requirement=RULE,
            details={"path": path, "work_item": item_id},
        )
    if item.state != S.VERIFIED:
        raise ProtocolError(
            ErrorCode.ILLEGAL_TRANSITION,
            f"{item_id} is {item.state}: changes are asked of an accepted (verified) result; "
            "a submitted one is sent back with work.fail",
            requirement=RULE,
            details={"path": path, "work_item": item_id, "state": item.state},
        )
    if item.replaced_by is not None:
        raise ProtocolError(
            ErrorCode.ILLEGAL_TRANSITION,
            f"{item_id} was already replaced by {item.replaced_by}: ask it of the replacement",
            requirement=RULE,
            details={"path": path, "work_item": item_id, "replaced_by": item.replaced_by},
        )


def decide_request_changes(view: View, command: Command) -> Decision:
    """The mission is active (``ILLEGAL_TRANSITION``, R10.2-22) and each item named is one of
    its verified WorkItems not yet replaced (``NOT_FOUND``, ``MALFORMED``,
    ``ILLEGAL_TRANSITION``, each with ``details`` naming the item and its path)."""
    body = command.body
    mission = mission_or_404(view, body["mission"])
    require_active_mission(mission, REQUEST)
    for index, item_id in enumerate(body["work_items"]):
        _refused_item(view, mission, item_id, f"$.work_items[{index}]")
    payload = {"mission": mission.id, "work_items": list(body["work_items"]), "note": body["note"]}
    result = {"mission": mission.id, "work_items": list(body["work_items"])}
    return Decision([NewEvent(REQUESTED, payload)], result)


def changes_requested(mission: Mission, fact: Fact) -> Mission:
    """The mission after ``mission.changes_requested``: the request kept (every one: each is a
    person's decision, and an open one must never drop out of the projection)."""
    p = fact.payload
    entry = {
        "work_items": list(p["work_items"]),
        "note": p["note"],
        "by": fact.actor,
        "sequence": fact.sequence,
        "recorded_at": fact.recorded_at,
    }
    return replace(mission, change_requests=(*mission.change_requests, entry))


# --- reading: which requests are open -----------------------------------------------------------

#: a WorkItem by id, as the reader has it (``None`` when unknown)
Lookup = Callable[[str], WorkItem | None]


def _unreplaced(request: dict[str, Any], lookup: Lookup) -> list[str]:
    found = ((item_id, lookup(item_id)) for item_id in request["work_items"])
    return [item_id for item_id, item in found if item is not None and item.replaced_by is None]


def open_change_requests(mission: Mission, lookup: Lookup) -> list[dict[str, Any]]:
    """The mission's requests still open, oldest first, each with ``waiting``: the items it
    names that have no replacement yet."""
    found = []
    for request in mission.change_requests:
        waiting = _unreplaced(request, lookup)
        if waiting:
            found.append({**request, "waiting": waiting})
    return found


def awaiting_replacement(mission: Mission, lookup: Lookup) -> list[str]:
    """Every item an open request names that has no replacement yet, in request order."""
    ids: list[str] = []
    for request in open_change_requests(mission, lookup):
        ids += [item_id for item_id in request["waiting"] if item_id not in ids]
    return ids


def _in_view(view: View) -> Lookup:
    return lambda item_id: view.get(work_item_key(item_id))


def require_no_open_requests(view: View, mission: Mission) -> None:
    """``mission.approve`` waits while a request is open (R13.2-03 step 5): the items named
    must be carried on by their replacements first. ``view`` holds the mission's items."""
    waiting = awaiting_replacement(mission, _in_view(view))
    if waiting:
        raise ProtocolError(
            ErrorCode.ILLEGAL_TRANSITION,
            "changes were asked of " + ", ".join(waiting) + ": the mission is approved once "
            "the coordinator has replaced them and the replacements have finished",
            requirement=RULE,
            details={"changes_requested": waiting},
        )


def asked_to_replace(view: View, mission_id: str, item: WorkItem) -> bool:
    """Whether an open request of ``mission_id`` (in ``view``) names ``item``, a verified
    WorkItem not yet replaced: what lets ``work.authorize`` replace it (R10.2-21)."""
    mission: Mission | None = view.get(mission_key(mission_id))
    if mission is None or item.state != S.VERIFIED or item.replaced_by is not None:
        return False
    return any(item.id in request["work_items"] for request in mission.change_requests)
