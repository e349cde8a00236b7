"""Essential questions in a WorkItem's conversation: who settles one (R10.1-02..04).

R10.1-02 has a worker raise essential ambiguity in the conversation before it accepts, and
R10.1-03 keeps it from accepting while that ambiguity stands. R10.1-04 says who ends it: the
Coordinator, with a corrected contract (a new revision, which clears every open question) or
a replacement WorkItem — or, here, with an answer in the conversation. So a reply settles an
open question only when it comes from the item's coordinator or a mission owner (the
MissionOwner speaks for the mission, R11.1-07) and never from the principal who asked it,
whatever that principal's roles: an asker who could answer itself could accept anything.

Anyone else's reply — another worker's, the asker's own follow-up — is *kept*, not refused:
the conversation is open to every member but observers (wire.md §9), and a worker adding what
it found is useful to whoever does settle the question. The decider records the verdict on the
event (``resolves``) so the evolver, which knows no roles, only applies it.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from .items import WorkItem

#: the roles whose reply settles an essential question (R10.1-04, R11.1-07)
SETTLERS = frozenset({"coordinator", "mission_owner"})


def asker_of(item: WorkItem, question: str) -> str | None:
    """Who asked the open question ``question`` (``None``: not open, or asked before askers
    were recorded)."""
    return item.question_askers.get(question)


def may_settle(item: WorkItem, question: str, *, actor: str, roles: Collection[str]) -> bool:
    """Whether ``actor`` replying to ``question`` settles it: the question is open, the actor
    holds a settling role, and is not the one who asked."""
    if question not in item.open_questions:
        return False
    return bool(SETTLERS.intersection(roles)) and actor != asker_of(item, question)


def verdict(item: WorkItem, body: dict[str, Any], *, actor: str, roles: Collection[str]) -> dict:
    """What a ``work.message`` adds to its event: ``resolves`` when it replies to an open
    question (true or false), nothing otherwise."""
    question = body.get("in_reply_to")
    if question is None or question not in item.open_questions:
        return {}
    return {"resolves": may_settle(item, question, actor=actor, roles=roles)}
