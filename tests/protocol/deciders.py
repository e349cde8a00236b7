"""Given/when/then for the pure deciders: given events, when a command, then events or error."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest

from missionweave.protocol import decider
from missionweave.protocol.artifacts.records import StoredArtifact
from missionweave.protocol.commands import COMMANDS
from missionweave.protocol.errors import ProtocolError
from missionweave.protocol.facts import Command, Decision, Fact, StateKey
from missionweave.protocol.timefmt import format_timestamp

NOW = datetime(2026, 11, 30, 10, 0, 0, tzinfo=UTC)
GROUP = "g-research"


@dataclass
class Scenario:
    """The state of one group, built by folding events with ``decider.apply``."""

    state: dict[StateKey, Any] = field(default_factory=dict)
    sequence: int = 0
    #: what the artifact store holds for the sender: ``None`` stands for a store holding
    #: every digest a command names (size 0), for the tests whose subject is not the store
    stored: dict[str, StoredArtifact] | None = None
    #: what the store and the registry answer for keys outside the log (card versions…)
    outside: dict[StateKey, Any] = field(default_factory=dict)

    def given(
        self, *events: tuple[str, dict[str, Any]], actor: str = "user:alice", at: datetime = NOW
    ) -> Scenario:
        """Append ``events`` as recorded at ``at`` (evolve reads it, e.g. ``blocked_at``)."""
        recorded_at = format_timestamp(at)
        for type_, payload in events:
            self.sequence += 1
            fact = Fact(
                type_, payload, actor, self.sequence, f"c{self.sequence}", recorded_at, GROUP
            )
            decider.apply(self.state, fact)
        return self

    def when(
        self,
        type_: str,
        body: dict[str, Any],
        *,
        actor: str = "user:alice",
        roles: frozenset[str] = frozenset(),
        session_epoch: int | None = None,
        now: datetime = NOW,
        extensions: dict[str, Any] | None = None,
        command_id: str | None = None,
    ) -> Decision:
        """Validate, then decide against exactly the keys the command declares it reads
        (loaded in rounds, as the write path does)."""
        spec = COMMANDS[type_]
        spec.validate(body)
        command = Command(
            command_id or f"cmd-{self.sequence + 1}",
            type_,
            GROUP,
            actor,
            body,
            now,
            session_epoch,
            roles,
            extensions or {},
            head_sequence=self.sequence,
        )
        view: dict[StateKey, Any] = {}
        for _ in range(8):
            missing = spec.keys(command, view) - view.keys()
            if not missing:
                break
            view.update({key: self._load(key) for key in missing})
        return decider.decide(view, command)

    def _load(self, key: StateKey) -> Any:
        if key in self.outside:
            return self.outside[key]
        kind, ident = key
        if kind == "stored_artifact":
            if self.stored is None:
                return StoredArtifact(ident, 0)
            return self.stored.get(ident)
        if kind in ("agent_card", "artifact_bytes"):
            return None
        if kind == "agent_keys":
            return []
        return self.state.get(key)

    def then(
        self, decision: Decision, *, actor: str = "user:alice", at: datetime = NOW
    ) -> list[tuple[str, dict]]:
        """Append the decided events (as the ledger would, recorded at ``at``); return them."""
        events = [(event.type, event.payload) for event in decision.events]
        self.given(*events, actor=actor, at=at)
        return events

    def refused(self, type_: str, body: dict[str, Any], **kwargs: Any) -> ProtocolError:
        with pytest.raises(ProtocolError) as caught:
            self.when(type_, body, **kwargs)
        return caught.value
