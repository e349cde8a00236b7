"""The Timeline's Mission and WorkItem filters read what a person types: an id, or words of
the goal.

A person knows a mission as “Triage the new support tickets”, not as ``m-431adcd0b00f``; the
filters asked for "its id". Now a typed text is first an id of the group; otherwise the
missions (WorkItems) whose goal contains it, ignoring case: one is the filter, several are
listed by goal so the person can type more of it, none is said plainly. The page also offers
the newest ones as suggestions (``choices``), by goal with the id as the value.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Model, QuerySet

from apps.work.models import Mission, WorkItem
from missionweave.protocol.identifiers import ID_PATTERN

from .event_words import short_title

#: how many of the newest missions and WorkItems the filters suggest
SUGGESTED = 50
#: how many goals a "several match" error names (the field's list has the rest)
LISTED = 3


@dataclass(frozen=True)
class Found:
    """What a typed filter came to: the id and goal it names, or why it names nothing."""

    id: str = ""
    goal: str = ""
    error: str = ""
    #: the row's ``_Kind.extra`` column, read with it (a mission's WorkItems)
    extra: object = None


@dataclass(frozen=True)
class Subject:
    """One mission or WorkItem: what the filter's field suggests."""

    id: str
    goal: str


@dataclass(frozen=True)
class _Kind:
    model: type[Model]
    id_field: str
    goal_field: str
    newest: str
    noun: str
    plural: str
    #: one more column the filter needs of the row it finds
    extra: str = "pk"


MISSION = _Kind(
    Mission, "mission_id", "goal", "-created_sequence", "mission", "missions", "work_items"
)
WORK_ITEM = _Kind(WorkItem, "work_item_id", "title", "-id", "WorkItem", "WorkItems")


def _rows(kind: _Kind, group_id: str) -> QuerySet:
    return kind.model.objects.filter(group_id=group_id)  # type: ignore[attr-defined]


def find(kind: _Kind, group_id: str, typed: str) -> Found:
    """The mission (WorkItem) ``typed`` names in ``group_id``: by id, else by goal words."""
    rows = _rows(kind, group_id)
    columns = (kind.id_field, kind.goal_field, kind.extra)
    if ID_PATTERN.match(typed):
        hit = rows.filter(**{kind.id_field: typed}).values_list(*columns).first()
        if hit is not None:
            return Found(id=typed, goal=str(hit[1] or ""), extra=hit[2])
    matches = list(
        rows.filter(**{f"{kind.goal_field}__icontains": typed})
        .order_by(kind.newest)
        .values_list(*columns)[: LISTED + 1]
    )
    if len(matches) == 1:
        return Found(id=matches[0][0], goal=str(matches[0][1] or ""), extra=matches[0][2])
    if not matches:
        return Found(error=f"No {kind.noun} of this group has “{typed}” as its id or in its goal.")
    named = ", ".join(short_title(str(goal)) for _id, goal, _extra in matches[:LISTED])
    more = " and more" if len(matches) > LISTED else ""
    return Found(
        error=f"Several {kind.plural} have “{typed}” in their goal: {named}{more}. "
        "Type more of the goal, or pick one from the list."
    )


def choices(kind: _Kind, group_id: str) -> list[Subject]:
    """The ``SUGGESTED`` newest missions (WorkItems) of the group, for the field's list."""
    rows = _rows(kind, group_id).order_by(kind.newest)
    return [
        Subject(id=str(ident), goal=str(goal or ""))
        for ident, goal in rows.values_list(kind.id_field, kind.goal_field)[:SUGGESTED]
    ]
