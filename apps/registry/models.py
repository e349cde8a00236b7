"""Identities (wire.md §2, §4, §5) and the membership projection."""

from __future__ import annotations

import hashlib
import secrets
from functools import lru_cache
from typing import Any, ClassVar

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from django.conf import settings
from django.db import models

from apps.ledger.agents import Standing
from apps.ledger.projections import ModelProjection
from apps.ledger.reads import Read
from apps.ledger.statements import hot_cursor
from missionweave.protocol.identifiers import agent_principal, is_agent
from missionweave.protocol.memberships import Membership as MembershipState
from missionweave.protocol.signing import parse_public_key


def token_digest(token: str) -> str:
    """Tokens are stored as their SHA-256 only: a leaked table grants nothing."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_token(prefix: str) -> str:
    return f"{prefix}_{secrets.token_urlsafe(32)}"


class Organization(models.Model):
    id = models.CharField(primary_key=True, max_length=128)
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.name

    def as_wire(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name}


class Agent(models.Model):
    """An agent principal (``agent:<id>``) with its current session epoch (wire.md §5)."""

    id = models.CharField(primary_key=True, max_length=128)
    organization = models.ForeignKey(Organization, on_delete=models.PROTECT, related_name="agents")
    session_epoch = models.PositiveBigIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.principal

    @property
    def principal(self) -> str:
        return agent_principal(self.id)

    @classmethod
    def standing_read(cls, agent_id: str) -> Read[Standing | None]:
        """The read of the agent's session epoch and unrevoked keys, which every agent
        command makes under the group lock (R11.3-10; ``apps.ledger.agents``): one fixed
        statement, sent with the command's other reads."""
        return Read(_STANDING, [agent_id], _standing)

    @classmethod
    def current_card_version(cls, principal: str) -> str | None:
        """The ``version`` of the current Agent Card of ``agent:<id>`` (``None`` for a person
        or an unknown agent): artifact manifests record it (R13.1-03)."""
        if not is_agent(principal):
            return None
        return (
            AgentCard.objects.filter(agent_id=principal.removeprefix("agent:"))
            .order_by("-recorded_at", "-pk")
            .values_list("version", flat=True)
            .first()
        )

    def current_card(self) -> AgentCard | None:
        return self.cards.order_by("-recorded_at", "-pk").first()

    def as_wire(self) -> dict[str, Any]:
        card = self.current_card()
        return {
            "id": self.id,
            "organization": self.organization_id,
            "public_keys": list(
                self.keys.filter(revoked_at__isnull=True).values_list("public_key", flat=True)
            ),
            "agent_card": card.card if card else None,
            "session_epoch": self.session_epoch,
        }


class AgentKey(models.Model):
    """An Ed25519 public key of an agent; a key is *current* until revoked."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="keys")
    public_key = models.CharField(max_length=43)
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["agent", "public_key"], name="agent_key_once")
        ]

    def __str__(self) -> str:
        return f"{self.agent_id}:{self.public_key[:8]}…"

    @classmethod
    def current_key_texts(cls, agent_id: str) -> tuple[str, ...]:
        """The text of each key a signature of the agent may verify under (those not
        revoked), oldest first."""
        with hot_cursor() as cursor:  # a fixed statement, read when the cache has none
            cursor.execute(
                "SELECT public_key FROM registry_agentkey "
                "WHERE agent_id = %s AND revoked_at IS NULL ORDER BY id",
                [agent_id],
            )
            return tuple(text for (text,) in cursor.fetchall())


_STANDING = (
    "SELECT a.session_epoch, k.public_key FROM registry_agent a "
    "LEFT JOIN registry_agentkey k ON k.agent_id = a.id AND k.revoked_at IS NULL "
    "WHERE a.id = %s ORDER BY k.id"
)


def _standing(rows: list[tuple[Any, ...]]) -> Standing | None:
    if not rows:
        return None
    return Standing(int(rows[0][0]), tuple(key for _epoch, key in rows if key is not None))


@lru_cache(maxsize=4096)
def parsed_key(text: str) -> Ed25519PublicKey:
    """A public key's text parsed once per process (its bytes never change)."""
    return parse_public_key(text)


class AgentCard(models.Model):
    """One version of an Agent Card (R11.1-11); versions are kept, the newest is current."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="cards")
    version = models.CharField(max_length=64)
    card = models.JSONField()
    recorded_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["agent", "version"], name="agent_card_version_once")
        ]

    def __str__(self) -> str:
        return f"{self.agent_id} card {self.version}"


class AgentSession(models.Model):
    """An authenticated agent session; only the one at the agent's current epoch is valid."""

    session_id = models.CharField(max_length=64, unique=True)
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="sessions")
    epoch = models.PositiveBigIntegerField()
    token_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField()
    expires_at = models.DateTimeField()

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["agent", "epoch"], name="one_session_per_epoch")
        ]

    def __str__(self) -> str:
        return f"{self.agent_id}@{self.epoch}"


class AgentPresence(models.Model):
    """An agent's latest Presence report (R11.1-11, ``missionweave.protocol.presence``): soft
    state outside every group's log, one row per agent, replaced by each report."""

    agent = models.OneToOneField(
        Agent, on_delete=models.CASCADE, primary_key=True, related_name="presence"
    )
    report = models.JSONField()
    reported_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.agent_id} presence"


class SessionNonce(models.Model):
    """Nonces of ``POST /sessions`` already seen, per agent (``REPLAYED_NONCE``)."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="nonces")
    nonce = models.CharField(max_length=128)
    seen_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["agent", "nonce"], name="nonce_once_per_agent")
        ]

    def __str__(self) -> str:
        return f"{self.agent_id}:{self.nonce}"


class ApiToken(models.Model):
    """A human's API token (``Authorization: Bearer``); commands are recorded as ``user:<name>``."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    token_hash = models.CharField(max_length=64, unique=True)
    label = models.CharField(max_length=100, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"token of {self.user}"


class Group(models.Model):
    """A Mission Group; its log and head row live in the ledger app."""

    id = models.CharField(primary_key=True, max_length=128)
    organization = models.ForeignKey(Organization, on_delete=models.PROTECT, related_name="groups")
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.name

    def as_wire(self) -> dict[str, Any]:
        return {"id": self.id, "organization": self.organization_id, "name": self.name}


class Membership(models.Model):
    """Projection of the membership events of a group's log (never written but by the projector)."""

    group = models.ForeignKey(
        Group, on_delete=models.PROTECT, related_name="memberships", db_index=False
    )
    principal = models.CharField(max_length=160)
    roles = models.JSONField(default=list)
    epoch = models.PositiveBigIntegerField()
    active = models.BooleanField(default=True)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["group", "principal"], name="membership_once")
        ]
        indexes: ClassVar = [models.Index(fields=["principal", "active"])]

    def __str__(self) -> str:
        return f"{self.principal} in {self.group_id}"

    def to_state(self) -> MembershipState:
        return MembershipState(
            principal=self.principal, roles=tuple(self.roles), epoch=self.epoch, active=self.active
        )

    projection: ClassVar[ModelProjection]


Membership.projection = ModelProjection(
    model=Membership,
    id_field="principal",
    to_state=Membership.to_state,
    to_fields=lambda state: {
        "roles": list(state.roles),
        "epoch": state.epoch,
        "active": state.active,
    },
)
