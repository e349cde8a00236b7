"""Reads of the mission projection."""

from __future__ import annotations

from typing import Any

from missionweave.protocol.errors import ErrorCode, ProtocolError

from .models import Mission, WorkItem


def mission_document(group_id: str, mission_id: str) -> dict[str, Any]:
    row = Mission.objects.filter(group_id=group_id, mission_id=mission_id).first()
    if row is None:
        raise ProtocolError(
            ErrorCode.NOT_FOUND, f"no mission {mission_id!r} in {group_id}", requirement="wire§4"
        )
    return row.to_state().as_dict()


def work_item_document(group_id: str, work_item_id: str) -> dict[str, Any]:
    row = WorkItem.objects.filter(group_id=group_id, work_item_id=work_item_id).first()
    if row is None:
        raise ProtocolError(
            ErrorCode.NOT_FOUND, f"no WorkItem {work_item_id!r} in {group_id}", requirement="wire§4"
        )
    return row.data
