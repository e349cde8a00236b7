"""Presence reports (R11.1-11; wire.md §4 ``POST /presence``): kept, and read for screens.

Presence is soft state outside every group's log (like sessions): a report changes no
projection and no fact any command depends on, so it is not a command and appends no event.
A worker reports every few tens of seconds; one event per report per group would flood the
logs with what is only ever read as "now". The authority keeps the latest report per agent,
dated by its own clock when it arrived.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.utils import timezone

from missionweave.protocol.presence import validate_presence
from missionweave.protocol.timefmt import format_timestamp

from .models import AgentPresence


def report_presence(agent_id: str, body: object) -> dict[str, Any]:
    """Keep ``body`` as ``agent_id``'s current capacity; the stored document."""
    report = validate_presence(body)
    now = timezone.now()
    AgentPresence.objects.update_or_create(
        agent_id=agent_id, defaults={"report": report, "reported_at": now}
    )
    return {"agent": f"agent:{agent_id}", **report, "reported_at": format_timestamp(now)}


def presences(agent_ids: Iterable[str]) -> dict[str, tuple[dict[str, Any], datetime]]:
    """The latest report and its time for each of these agents that ever reported."""
    rows = AgentPresence.objects.filter(agent_id__in=list(agent_ids))
    return {row.agent_id: (row.report, row.reported_at) for row in rows}
