"""What the WorkItem page shows of its conversation and its priority, and which forms a viewer
gets there (issue 35 §4, §5).

The conversation (R10.1-02..04): every message, the essential questions marked open or settled
and by whom, and for each open question whether the viewer's reply would settle it — asked of
the protocol core (``protocol.work.questions.may_settle``), never re-decided here: only the
coordinator or a mission owner who did not ask it settles a question; anyone else's reply is
kept as a message. The priority (R0-12, R11.1-07): the urgency and deadline asked for now,
every change with who made it and why, and the "Escalate" form for those the command table
lets change it. The write path decides every form again when it is sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from apps.ledger import preview
from apps.ledger.write_path import Caller
from missionweave.protocol import states as S
from missionweave.protocol.contracts import URGENCIES
from missionweave.protocol.memberships import Membership
from missionweave.protocol.work.items import WorkItem
from missionweave.protocol.work.priorities import REPRIORITIZE
from missionweave.protocol.work.questions import may_settle

MESSAGE = "work.message"


@dataclass(frozen=True)
class Said:
    """One message of the conversation, with what became of it."""

    sequence: int
    message: str
    actor: str
    recorded_at: Any
    text: str
    essential: bool
    in_reply_to: str | None
    #: an essential question nobody has settled yet
    open: bool
    #: a reply that settled the question it answers (``resolves``), or ``None`` (not a reply
    #: to an open question, or recorded before the verdict existed)
    resolves: bool | None
    #: for a settled question: who settled it (``None``: a corrected contract did)
    settled_by: str | None = None
    #: for an open question: whether the viewer's reply would settle it
    viewer_settles: bool = False


@dataclass(frozen=True)
class Talk:
    """The conversation as one viewer sees it."""

    messages: tuple[Said, ...]
    #: the viewer may post (any member but an observer, wire.md §9)
    may_post: bool

    @property
    def open_questions(self) -> tuple[Said, ...]:
        return tuple(said for said in self.messages if said.open)

    @property
    def principals(self) -> set[str]:
        return {said.actor for said in self.messages} | {
            said.settled_by for said in self.messages if said.settled_by
        }


def talk_of(
    item: WorkItem,
    messages: Sequence[Any],
    *,
    caller: Caller,
    membership: Membership | None,
) -> Talk:
    """``messages`` (``work.Message``, oldest first) with their fate for ``caller``."""
    may = preview.permitted_by(caller, membership, (MESSAGE,))
    roles = membership.roles if membership is not None else ()
    settled_by = {m.in_reply_to: m.actor for m in messages if m.in_reply_to and m.resolves}
    said = tuple(
        Said(
            sequence=m.sequence,
            message=m.message,
            actor=m.actor,
            recorded_at=m.recorded_at,
            text=m.text,
            essential=m.essential,
            in_reply_to=m.in_reply_to,
            open=m.open,
            resolves=m.resolves,
            settled_by=settled_by.get(m.message),
            viewer_settles=m.open
            and may_settle(item, m.message, actor=caller.principal, roles=roles),
        )
        for m in messages
    )
    return Talk(said, MESSAGE in may)


@dataclass(frozen=True)
class Priority:
    """The urgency and deadline the item asks for now, and how they came to be."""

    urgency: str
    deadline: str | None
    changes: tuple[dict[str, Any], ...]  # newest first
    may_escalate: bool

    @property
    def urgencies(self) -> tuple[str, ...]:
        return URGENCIES

    @property
    def principals(self) -> set[str]:
        return {str(change.get("by")) for change in self.changes}


def priority_of(item: WorkItem, *, caller: Caller, membership: Membership | None) -> Priority:
    """R0-12, R11.1-07: the current values (the contract's) and the changes kept on the item;
    the form only while the item can still run and the viewer's roles allow the command."""
    may = REPRIORITIZE in preview.permitted_by(caller, membership, (REPRIORITIZE,))
    return Priority(
        urgency=str(item.contract.get("urgency") or "normal"),
        deadline=item.contract.get("deadline"),
        changes=tuple(reversed(item.priority_changes)),
        may_escalate=may and item.state not in S.TERMINAL,
    )
