"""A mission's open change requests, in the words the mission page and the final-approval
screen show them (issue 36 §5; R13.2-03 step 5, R10.2-21).

The write path keeps each ``mission.changes_requested`` on the Mission projection
(``change_requests``) and says which are open (``missions.changes.open_change_requests``: an
item named has no replacement yet); this reads that, with the goal of each item named, in one
query, and never decides again what holds the approval.
"""

from __future__ import annotations

from dataclasses import dataclass

from apps.work.models import Mission, WorkItem
from missionweave.protocol.missions.changes import open_change_requests


@dataclass(frozen=True)
class AskedItem:
    id: str
    goal: str


@dataclass(frozen=True)
class OpenRequest:
    """One open request: who asked, when, the note, and the items still to be replaced."""

    by: str
    recorded_at: str
    sequence: int
    note: str
    waiting: tuple[AskedItem, ...]


def open_requests(mission: Mission) -> list[OpenRequest]:
    """``mission``'s open change requests, oldest first ([] when it has none)."""
    if not mission.change_requests:
        return []
    named = {item for request in mission.change_requests for item in request["work_items"]}
    rows = WorkItem.objects.filter(
        group_id=mission.group_id, mission=mission.mission_id, work_item_id__in=named
    )
    items = {row.work_item_id: row.to_state() for row in rows}
    found = open_change_requests(mission.to_state(), items.get)
    return [
        OpenRequest(
            by=request["by"],
            recorded_at=request["recorded_at"],
            sequence=request["sequence"],
            note=request["note"],
            waiting=tuple(
                AskedItem(item, str(items[item].contract.get("goal") or item))
                for item in request["waiting"]
            ),
        )
        for request in found
    ]


def holding_sentence(requests: list[OpenRequest]) -> str:
    """Why the mission cannot be approved while ``requests`` are open ("" with none)."""
    return changes_sentence([item.id for request in requests for item in request.waiting])


def changes_sentence(waiting: list[str]) -> str:
    """ "Changes were asked of a, b: …" — the refusal ``details.changes_requested`` of
    ``mission.approve`` (R13.2-03), in words ("" for none)."""
    waiting = list(dict.fromkeys(waiting))
    if not waiting:
        return ""
    done = "it and the replacement has" if len(waiting) == 1 else "them and the replacements have"
    return (
        f"Changes were asked of {', '.join(waiting)}: the mission can be approved once the "
        f"coordinator has replaced {done} finished."
    )
