"""The shapes that flow through ``decide`` and ``evolve``.

``decide(view, command) -> Decision`` and ``evolve(key, aggregate, fact) -> aggregate`` are
pure. A *view* maps the state keys a command declared it needs onto the current aggregates
(``None`` for one that does not exist); the write path loads exactly those under the group
lock, and a rebuild folds ``evolve`` over the whole log.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

# ("mission", mission_id), ("membership", principal), later ("work_item", id), ...
StateKey = tuple[str, str]
View = Mapping[StateKey, Any]


@dataclass(frozen=True, slots=True)
class Command:
    """A command after envelope checks: what the decider sees (time comes in as an argument)."""

    id: str
    type: str
    group: str
    actor: str
    body: dict[str, Any]
    now: datetime
    #: the issuing agent's session epoch (execution leases are bound to it, R11.3-03)
    session_epoch: int | None = None
    #: the issuer's roles in this group (some rules depend on them, e.g. human review)
    actor_roles: frozenset[str] = frozenset()
    #: the envelope's supported extensions by URN (the offline binding, R11.5-07)
    extensions: Mapping[str, Any] = field(default_factory=dict)
    #: the group's head sequence before this command (a context package's event range must
    #: lie within it, R13.3-02)
    head_sequence: int = 0


@dataclass(frozen=True, slots=True)
class NewEvent:
    """An event the decider wants appended; the ledger gives it sequence, hash and time."""

    type: str
    payload: dict[str, Any]
    #: top-level payload keys holding a document the authority signs before the event is
    #: appended, when it carries no ``signature`` of its own (a manifest without its
    #: producer's, a context package: R13.1-03, R13.3-01). The pure core names them; the
    #: write path signs, as it signs capability tokens.
    authority_signs: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class FollowUp:
    """A command the authority submits to another group after this one commits.

    There is no cross-group transaction (R10.4-05): a link between groups travels as events in
    both logs, the second appended by the authority with a deterministic command id, so a retry
    is an idempotent replay.
    """

    group: str
    type: str
    body: dict[str, Any]
    command_id: str
    #: what to submit instead when the other group refuses this one (a compensation, so a
    #: refused link is reported back rather than lost: R10.4-06)
    on_refusal: FollowUp | None = None


@dataclass(frozen=True, slots=True)
class Decision:
    """What a command produces: events to append and the ``result`` of the response."""

    events: list[NewEvent]
    result: dict[str, Any] = field(default_factory=dict)
    status: int = 201
    follow_ups: tuple[FollowUp, ...] = ()
    #: claims of capability tokens to sign and return in ``result["capability_tokens"]``
    #: (R11.3-06): the pure core names them, the write path signs them with the authority key
    capabilities: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class Fact:
    """An appended event, as ``evolve`` sees it."""

    type: str
    payload: dict[str, Any]
    actor: str
    sequence: int
    command_id: str
    recorded_at: str
    group: str = ""

    @classmethod
    def of_event(cls, event: dict[str, Any]) -> Fact:
        """The fact a stored wire.md §6 event document records (for replays)."""
        return cls(
            type=event["type"],
            payload=event["payload"],
            actor=event["actor"],
            sequence=event["sequence"],
            command_id=event["command_id"],
            recorded_at=event["recorded_at"],
            group=event["group"],
        )
