"""An agent's Presence in words (R11.1-11): "2 of 3 slots free, seen 10 s ago".

The latest report (``apps.registry.presence``) and its age; a resource the agent declared is
told the same way ("GPU: 0 of 1 free"). No codes, no principal: the name is shown beside it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from django.utils import timezone

from apps.registry.presence import presences
from missionweave.protocol.identifiers import is_agent
from missionweave.wording import counted

from .inbox_entries import relative_text


def _amount(value: float) -> str:
    return f"{value:g}"


def presence_words(report: Mapping[str, Any], reported_at: datetime, now: datetime) -> str:
    free, slots = report["slots_free"], report["slots"]
    words = [f"{free} of {counted(slots, 'slot')} free"]
    for name, amounts in sorted((report.get("resources") or {}).items()):
        label = name.replace("_", " ")
        words.append(f"{label}: {_amount(amounts['free'])} of {_amount(amounts['total'])} free")
    return f"{', '.join(words)}, seen {relative_text(reported_at, now)}"


def presence_of(principals: Iterable[str]) -> dict[str, str]:
    """Presence in words for each agent among ``principals`` that ever reported."""
    agents = {p.removeprefix("agent:"): p for p in principals if is_agent(p)}
    now = timezone.now()
    return {
        agents[agent_id]: presence_words(report, at, now)
        for agent_id, (report, at) in presences(agents).items()
    }
