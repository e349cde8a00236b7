"""Test personas and helpers: alice (admin, staff), olga (mission owner), cora (coordinator),
and agents w1, w2 with real Ed25519 keys. Everything goes through the real services and the
one write path; nothing writes projection rows directly.
"""

from __future__ import annotations

import itertools
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from apps.artifacts.services import artifact_store
from apps.demo.personas import InProcessPersona
from apps.ledger.write_path import Caller
from apps.registry import services
from missionweave.protocol.canonical import sha256_digest
from missionweave.protocol.examples import INCIDENT_REPORTS
from missionweave.protocol.identifiers import user_principal
from missionweave.protocol.signing import generate_private_key, public_key_text
from missionweave.protocol.timefmt import format_timestamp

_counter = itertools.count(1)


def now_text(offset_s: float = 0) -> str:
    return format_timestamp(datetime.now(UTC) + timedelta(seconds=offset_s))


def unique(prefix: str) -> str:
    return f"{prefix}-{next(_counter)}-{secrets.token_hex(3)}"


def agent_card(name: str = "worker", version: str = "1") -> dict[str, Any]:
    return {
        "name": name,
        "version": version,
        "capabilities": [{"id": "text.summarise", "version": "1"}],
        "max_concurrency": 2,
    }


#: the one persona class of the demo, the tests and the benchmarks (issue 14 §8), here with
#: its in-process session and caller
AgentPersona = InProcessPersona


@dataclass
class HumanPersona:
    username: str
    token: str
    staff: bool
    membership_epochs: dict[str, int] = field(default_factory=dict)

    @property
    def principal(self) -> str:
        return user_principal(self.username)

    @property
    def caller(self) -> Caller:
        return Caller(principal=self.principal, kind="user", is_staff=self.staff)

    def command(
        self, group: str, type_: str, body: dict[str, Any], **overrides: Any
    ) -> dict[str, Any]:
        document = {
            "id": overrides.pop("id", None) or unique("cmd"),
            "type": type_,
            "group": group,
            "actor": self.principal,
            "membership_epoch": self.membership_epochs.get(group, 1),
            "issued_at": now_text(),
            "body": body,
        }
        document.update(overrides)
        return document


def human(username: str, *, staff: bool = False) -> HumanPersona:
    return HumanPersona(username, services.api_token_create(username=username, staff=staff), staff)


def agent(agent_id: str, organization: str) -> AgentPersona:
    key = generate_private_key()
    services.agent_register(
        body={
            "id": agent_id,
            "organization": organization,
            "public_key": public_key_text(key.public_key()),
            "agent_card": agent_card(agent_id),
        }
    )
    return AgentPersona(agent_id, key)


def organization(org_id: str = "org-acme") -> str:
    services.organization_create(body={"id": org_id, "name": org_id.title()})
    return org_id


def group(group_id: str, org_id: str) -> str:
    services.group_create(body={"id": group_id, "organization": org_id, "name": group_id})
    return group_id


def grant(
    admin: HumanPersona, group_id: str, persona: AgentPersona | HumanPersona, *roles: str
) -> int:
    outcome = services.membership_grant(
        group_id=group_id,
        admin=admin.caller,
        body={"principal": persona.principal, "roles": list(roles)},
    )
    epoch = outcome.body["result"]["epoch"]
    persona.membership_epochs[group_id] = epoch
    if "coordinator" in roles:
        store_example_inputs(persona.principal)
    return epoch


def store_bytes(principal: str, data: bytes) -> str:
    """Upload ``data`` to the artifact store as ``principal`` (what ``PUT /artifacts/{d}``
    does); the digest."""
    digest = sha256_digest(data)
    artifact_store(principal=principal, digest=digest, chunks=[data])
    return digest


def store_example_inputs(principal: str) -> None:
    """The bytes the example contract's ``inputs`` name, uploaded by a coordinator: a
    contract may name only artifacts this group's log cites or its sender uploaded (wire.md
    §9)."""
    store_bytes(principal, INCIDENT_REPORTS)


def mission_body(mission_id: str | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "mission": mission_id or unique("m"),
        "goal": "Summarise the incident reports of November",
        "budgets": {"money": 5.0, "tokens": 200000},
        **extra,
    }


@dataclass
class World:
    """One organisation, one group, an admin, a mission owner and two working agents."""

    org: str
    group: str
    alice: HumanPersona  # staff admin
    olga: HumanPersona  # mission_owner
    w1: AgentPersona  # coordinator
    w2: AgentPersona  # worker


def build_world(group_id: str = "g-research") -> World:
    org = organization()
    group(group_id, org)
    alice = human("alice", staff=True)
    olga = human("olga")
    w1 = agent("w1", org)
    w2 = agent("w2", org)
    grant(alice, group_id, olga, "mission_owner")
    grant(alice, group_id, w1, "coordinator")
    grant(alice, group_id, w2, "worker")
    w1.open_session()
    w2.open_session()
    return World(org, group_id, alice, olga, w1, w2)
