"""``Persona``: an agent of the simulated organisation — who it is, the key it signs with and
the session and membership epochs its envelopes carry.

One class serves the demo's agent processes (which talk to the authority through
``Persona.client()``, the SDK), the tests and the benchmarks (which also open sessions and
submit in-process, through the subclass in ``apps/demo/personas.py``). What an agent *is*
therefore lives in one place: its principal, how it signs a session request (wire.md §5) and
a command envelope (wire.md §3, R2-07), and its Agent Card (wire.md §2).

Pure: the protocol core, the client SDK and the standard library only (import-linter's
"Agent-side code" contract).
"""

from __future__ import annotations

import secrets
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from missionweave.client import AgentClient
from missionweave.protocol.canonical import canonical_bytes
from missionweave.protocol.envelope import signed_envelope
from missionweave.protocol.identifiers import agent_principal
from missionweave.protocol.signing import (
    b64url_decode,
    b64url_encode,
    generate_private_key,
    private_key_from_seed,
    private_key_seed,
    sign,
)
from missionweave.protocol.timefmt import format_timestamp


def now_text() -> str:
    return format_timestamp(datetime.now(UTC))


@dataclass
class Persona:
    """An agent with its key and, once a session is open, its token and epochs."""

    id: str
    key: Ed25519PrivateKey
    token: str = ""
    session_epoch: int = 0
    membership_epochs: dict[str, int] = field(default_factory=dict)

    @classmethod
    def fresh(cls, agent_id: str) -> Persona:
        """A new agent with a new key (not yet registered anywhere)."""
        return cls(agent_id, generate_private_key())

    @classmethod
    def from_key_file(cls, agent_id: str, path: Path) -> Persona:
        """The agent whose base64url Ed25519 seed is in ``path`` (see ``save_key``)."""
        return cls(agent_id, private_key_from_seed(b64url_decode(path.read_text().strip())))

    @property
    def principal(self) -> str:
        return agent_principal(self.id)

    def save_key(self, path: Path) -> Path:
        """Write the key's seed to ``path``, readable by its owner only (0600)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(mode=0o600)
        path.chmod(0o600)
        path.write_text(b64url_encode(private_key_seed(self.key)) + "\n")
        return path

    def session_body(
        self, *, nonce: str | None = None, issued_at: str | None = None
    ) -> dict[str, Any]:
        """``POST /sessions``'s signed body (wire.md §5): a fresh nonce, signed by the key."""
        body = {
            "agent": self.id,
            "issued_at": issued_at or now_text(),
            "nonce": nonce or secrets.token_urlsafe(18),
        }
        return {**body, "signature": sign(self.key, canonical_bytes(body))}

    def command(
        self, group: str, type_: str, body: dict[str, Any], **overrides: Any
    ) -> dict[str, Any]:
        """A signed command envelope (wire.md §3) under the current session and the group's
        membership epoch; ``overrides`` replace envelope fields before signing."""
        document = {
            "id": overrides.pop("id", None) or f"cmd-{uuid.uuid4().hex}",
            "type": type_,
            "group": group,
            "actor": self.principal,
            "session_epoch": self.session_epoch,
            "membership_epoch": self.membership_epochs.get(group, 1),
            "issued_at": now_text(),
            "body": body,
        }
        document.update(overrides)
        return signed_envelope(self.key, document)

    def client(self, authority_url: str, **options: Any) -> AgentClient:
        """The SDK's client acting as this agent (it opens and renews its own session)."""
        return AgentClient(authority_url, self.id, self.key, **options)


def agent_card(
    agent_id: str, capabilities: tuple[str, ...], *, max_concurrency: int, version: str = "1"
) -> dict[str, Any]:
    """An Agent Card (wire.md §2): what ``POST /agents`` registers and manifests cite."""
    return {
        "name": agent_id,
        "version": version,
        "capabilities": [{"id": capability, "version": "1"} for capability in capabilities],
        "max_concurrency": max_concurrency,
    }
