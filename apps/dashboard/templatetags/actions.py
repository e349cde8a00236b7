"""``{% may_issue group "mission.create" as allowed %}``: whether the signed-in person's roles
may issue a command in a group now (issue 36 §5), asked of the write path's own rules
(``preview.permitted``), so a link to a form shows only to those it is for."""

from __future__ import annotations

import json
from typing import Any

from django import template

from apps.ledger import preview
from apps.ledger.models import Event
from apps.ledger.write_path import Caller
from missionweave.protocol.timefmt import parse_timestamp

register = template.Library()


@register.simple_tag(takes_context=True)
def may_issue(context: dict[str, Any], group: str, command: str) -> bool:
    user = getattr(context.get("request"), "user", None)
    if user is None or not user.is_authenticated:
        return False
    return command in preview.permitted(Caller.for_user(user), group, [command])


@register.simple_tag
def cancellation(group: str, item: Any) -> dict[str, Any] | None:
    """Who cancelled a cancelled WorkItem, when and why (R10.2-14; issue 36 §5), read from
    its ``work.cancelled`` event: the projection keeps the event's sequence in the item's
    history, so it is one row by key, never a scan of the log."""
    if getattr(item, "state", "") != "cancelled":
        return None
    sequence = next(
        (seq for seq, type_, _actor in reversed(item.history) if type_ == "work.cancelled"), None
    )
    if sequence is None:
        return None
    row = Event.objects.filter(group_id=group, sequence=sequence).values_list("document", flat=True)
    document = json.loads(row[0]) if row else {}
    payload = document.get("payload", {})
    try:
        recorded_at = parse_timestamp(document.get("recorded_at"))
    except ValueError:
        recorded_at = None
    return {
        "actor": document.get("actor", ""),
        "recorded_at": recorded_at,
        "reason": payload.get("reason", ""),
        "sequence": sequence,
    }
