"""A mission's change requests, open and answered, in the words the mission page and the
final-approval screen show them (issue 36 §5; R13.2-03 step 5, R10.2-21).

The write path keeps each ``mission.changes_requested`` on the Mission projection
(``change_requests``) and says which are open (``missions.changes.open_change_requests``: an
item named has no replacement yet); this reads that, with the goal of each item named and of
each replacement (two queries at most), and never decides again what holds the approval.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from apps.work.models import Mission, WorkItem
from missionweave.protocol.missions.changes import open_change_requests

from .item_names import item_names


@dataclass(frozen=True)
class AskedItem:
    id: str
    goal: str


@dataclass(frozen=True)
class Asked:
    """What every request says: who asked, when (and at which event), and the note."""

    by: str
    recorded_at: str
    sequence: int
    note: str

    @classmethod
    def fields_of(cls, request: dict[str, Any]) -> dict[str, Any]:
        """These fields of one ``mission.changes_requested`` the Mission projection keeps."""
        return {name: request[name] for name in ("by", "recorded_at", "sequence", "note")}


@dataclass(frozen=True)
class OpenRequest(Asked):
    """One open request, with the items still to be replaced."""

    waiting: tuple[AskedItem, ...]


@dataclass(frozen=True)
class Replaced:
    """An item a request named, and the WorkItem the coordinator authorised in its place."""

    asked: AskedItem
    by: AskedItem


@dataclass(frozen=True)
class AnsweredRequest(Asked):
    """A request every named item of which has its replacement: what the person asked, and
    what answered it (the request itself stays in the mission's record)."""

    replaced: tuple[Replaced, ...]


def requests_of(mission: Mission) -> tuple[list[OpenRequest], list[AnsweredRequest]]:
    """``mission``'s change requests, oldest first: the open ones, and the answered ones with
    the WorkItem that replaced each item named (two queries at most: the items named, then
    their replacements)."""
    if not mission.change_requests:
        return [], []
    named = {item for request in mission.change_requests for item in request["work_items"]}
    items = _items(mission, named)
    found = open_change_requests(mission.to_state(), items.get)
    still_open = {request["sequence"] for request in found}
    replacements = _items(
        mission, {item.replaced_by for item in items.values() if item.replaced_by is not None}
    )

    def asked(item_id: str, known: dict[str, Any]) -> AskedItem:
        item = known.get(item_id)
        return AskedItem(item_id, str(item.contract.get("goal") or item_id) if item else item_id)

    opened = [
        OpenRequest(
            **Asked.fields_of(request),
            waiting=tuple(asked(item, items) for item in request["waiting"]),
        )
        for request in found
    ]
    answered = [
        AnsweredRequest(
            **Asked.fields_of(request),
            replaced=tuple(
                Replaced(asked(item, items), asked(items[item].replaced_by, replacements))
                for item in request["work_items"]
                if item in items and items[item].replaced_by is not None
            ),
        )
        for request in mission.change_requests
        if request["sequence"] not in still_open
    ]
    return opened, answered


def _items(mission: Mission, ids: set[str]) -> dict[str, Any]:
    """The state of each of ``ids`` among the mission's WorkItems, by id."""
    if not ids:
        return {}
    rows = WorkItem.objects.filter(
        group_id=mission.group_id, mission=mission.mission_id, work_item_id__in=ids
    )
    return {row.work_item_id: row.to_state() for row in rows}


def holding_sentence(requests: list[OpenRequest]) -> str:
    """Why the mission cannot be approved while ``requests`` are open ("" with none)."""
    waiting = [item for request in requests for item in request.waiting]
    # an item whose goal is not known carries its id as its goal (``asked``): named by id
    titles = {item.id: item.goal for item in waiting if item.goal != item.id}
    return changes_sentence([item.id for item in waiting], titles)


def changes_sentence(waiting: list[str], titles: Mapping[str, str] | None = None) -> str:
    """ "Changes were asked of “Gather the sources”, b: …" — the refusal
    ``details.changes_requested`` of ``mission.approve`` (R13.2-03), in words ("" for none),
    the items named by their goals (``titles``: id -> goal)."""
    waiting = list(dict.fromkeys(waiting))
    if not waiting:
        return ""
    done = "it and the replacement has" if len(waiting) == 1 else "them and the replacements have"
    return (
        f"Changes were asked of {item_names(waiting, titles)}: the mission can be approved once "
        f"the coordinator has replaced {done} finished."
    )
