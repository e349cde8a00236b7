"""A replacement WorkItem (R10.2-21): ``work.authorize`` with ``replaces`` names the failed or
cancelled WorkItem whose work the new one carries on.

R10.2-20 leaves a failed item to the coordinator, who may offer it again; R10.2-21 lets the
coordinator instead create a replacement. Naming what it replaces is what makes it one: the
log says so (``work.replaced`` for the old item, ``replaces`` on the new), and every item that
depends on the old one now waits for the new one (``DependencyGraph.resolve``), since a
WorkItem's ``depends_on`` cannot be changed once authorised. **Choices**: only a ``failed`` or
``cancelled`` item can be replaced (a live one would run twice: cancel it first), once, by an
item of its own mission; a replaced item is not offered again (its replacement carries the
work), and a replacement that depends, even transitively, on what it replaces is
``DEPENDENCY_CYCLE`` (it would wait on itself).

A ``verified`` item may be replaced too, but only while an open change request of its mission
names it (``mission.request_changes``, issue 36 §5): a mission owner sent its accepted result
back at the final approval. It stays ``verified`` (terminal, R10.2-19) and gets
``replaced_by``; what depends on it now waits for the replacement.
"""

from __future__ import annotations

from typing import Any

from .. import states as S
from ..errors import ErrorCode, ProtocolError
from ..facts import NewEvent, StateKey, View
from ..missions.changes import asked_to_replace
from ..validation import check_id, malformed
from .dependencies import REPLACED
from .items import WorkItem, work_item_key

#: what a replacement may replace: an item that ended without its work done
REPLACEABLE = frozenset({S.FAILED, S.CANCELLED})


def validate_replaces(body: dict[str, Any]) -> None:
    if body.get("replaces") is not None:
        check_id(body["replaces"], "$.replaces")


def keys_of_replaces(body: dict[str, Any]) -> set[StateKey]:
    replaced = body.get("replaces")
    return {work_item_key(replaced)} if replaced is not None else set()


def replaced_events(view: View, body: dict[str, Any]) -> list[NewEvent]:
    """``work.replaced`` for the item ``body`` replaces (none without ``replaces``), after the
    checks of R10.2-21."""
    replaced_id = body.get("replaces")
    if replaced_id is None:
        return []
    replaced: WorkItem | None = view.get(work_item_key(replaced_id))
    if replaced is None:
        raise ProtocolError(
            ErrorCode.NOT_FOUND,
            f"no WorkItem {replaced_id!r} to replace in this group",
            requirement="R10.2-21",
            details={"path": "$.replaces", "work_item": replaced_id},
        )
    if replaced.mission != body["mission"]:
        raise malformed(
            f"{replaced_id} belongs to mission {replaced.mission!r}: a replacement is "
            f"authorised in the same mission",
            "$.replaces",
            "R10.2-21",
        )
    if replaced.replaced_by is not None:
        raise ProtocolError(
            ErrorCode.ILLEGAL_TRANSITION,
            f"{replaced_id} was already replaced by {replaced.replaced_by}",
            requirement="R10.2-21",
            details={"work_item": replaced_id, "replaced_by": replaced.replaced_by},
        )
    if replaced.state not in REPLACEABLE and not asked_to_replace(view, body["mission"], replaced):
        raise ProtocolError(
            ErrorCode.ILLEGAL_TRANSITION,
            f"{replaced_id} is {replaced.state}: only a failed or cancelled WorkItem is replaced, "
            "or a verified one a mission owner asked changes of (mission.request_changes)",
            requirement="R10.2-21",
            details={
                "work_item": replaced_id,
                "state": replaced.state,
                "allowed_from": sorted(REPLACEABLE),
            },
        )
    payload = {"work_item": replaced_id, "replaced_by": body["work_item"]}
    return [NewEvent(REPLACED, payload)]


def replaceable(item: WorkItem) -> bool:
    """Whether ``item`` may be replaced, or offered again after failing (R10.2-20, R10.2-21)."""
    return item.state in REPLACEABLE


def require_not_replaced(item: WorkItem) -> None:
    """A replaced item is not offered again: its replacement carries its work (R10.2-21)."""
    if item.replaced_by is not None:
        raise ProtocolError(
            ErrorCode.ILLEGAL_TRANSITION,
            f"{item.id} was replaced by {item.replaced_by}: offer that one",
            requirement="R10.2-21",
            details={"work_item": item.id, "replaced_by": item.replaced_by},
        )
