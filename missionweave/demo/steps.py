"""A step an agent of the demo takes: one command, sent through the SDK.

The coordinator and the reviewer decide their steps from what their ``GroupView`` shows and
send them with ``send``; the authority judges each one. A refusal is reported as a line and
the agent goes on (the log says what happened; the next beat decides again) — except a
refusal the step ``expect``\\ s, which is part of the story (a race another agent won), and
a "not yet" (``WAIT``: a person's reservation, checks still owed), reported as waiting.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from missionweave.client import AgentClient
from missionweave.client.errors import ApiError

#: refusals that mean "not yet": a person's reservation holds the decision, or the authority's
#: checks are still owed (issue 34); the next beat decides again
WAIT = frozenset({"REVIEW_RESERVED", "CHECKS_PENDING"})


@dataclass(frozen=True)
class Step:
    group: str
    type: str
    body: dict[str, Any]
    #: bytes the agent stores first, so the command may name them (wire.md §9)
    uploads: tuple[bytes, ...] = ()
    #: a refusal code that is part of the story, reported as such
    expect: str | None = None

    @property
    def target(self) -> str:
        return str(self.body.get("work_item") or self.body.get("mission") or "")


def send(client: AgentClient, step: Step) -> str:
    """Send ``step``; a line saying what the authority answered."""
    for data in step.uploads:
        client.upload(data)
    where = f"{step.group} {step.type} {step.target}"
    try:
        result = client.submit(step.group, step.type, step.body)
    except ApiError as refusal:
        if refusal.code == step.expect:
            return f"{client.agent_id}: {where}: too late ({refusal.code})"
        if refusal.code in WAIT:
            return f"{client.agent_id}: {where}: waits ({refusal.code}: {refusal.message})"
        return f"{client.agent_id}: refused {where}: {refusal.code} {refusal.message}"
    events = ", ".join(event["type"] for event in result.events)
    return f"{client.agent_id}: {where} -> {events}"
