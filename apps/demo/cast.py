"""The demo's cast for ``manage.py demo``: one group with a human admin, three more people
(two mission owners and a reviewer, so every human screen can be walked as someone who may
act and as someone who may not), a coordinator agent, workers and a reviewer agent, open
sessions, a few missions, and the two ways they submit commands (signed by an agent, or as a
person) — all through the real services and the one write path, so the demo exercises
exactly what production does. Their artifacts go into
the same store ``PUT /api/v1/artifacts/{digest}`` fills (:func:`upload_as`). The story they act
out is :mod:`apps.demo.story`.

Seeding is idempotent: identities are created once, memberships are granted only when they
differ, and the seed missions use fixed command ids, so a second run is answered from the
idempotency records and appends nothing. Only the agents' sessions are opened afresh (a new
session epoch each run), because the live loop needs a session that is current now.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from apps.artifacts.services import artifact_store
from apps.ledger.write_path import Caller, Outcome, submit_as_human, submit_command
from apps.registry import services
from apps.registry.models import ApiToken
from apps.work import sessions
from missionweave.protocol.canonical import canonical_bytes, sha256_digest
from missionweave.protocol.envelope import signed_envelope
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.identifiers import agent_principal, user_principal
from missionweave.protocol.signing import (
    b64url_decode,
    b64url_encode,
    generate_private_key,
    private_key_from_seed,
    private_key_seed,
    public_key_text,
    sign,
)
from missionweave.protocol.timefmt import format_timestamp

ORGANIZATION = "org-demo"
GROUP = "g-demo"
ADMIN_USERNAME = "admin"
COORDINATOR = "demo-coordinator"
WORKERS = ("demo-worker-1", "demo-worker-2")
#: the group's reviewer agent: the default reviewer the authority asks (R13.2-03 step 3)
REVIEWER = "demo-reviewer"
#: every demo agent's Agent Card version, which its manifests name (R13.1-03)
AGENT_CARD_VERSION = "1"
DEMO_TOKEN_LABEL = "demo"  # noqa: S105 - a label, not a secret

SEED_MISSIONS = (
    ("demo-m-incidents", "Summarise the incident reports of November"),
    ("demo-m-onboarding", "Translate the onboarding guide into French and German"),
    ("demo-m-pricing", "Compare the pricing pages of our three main competitors"),
    ("demo-m-access", "Audit who can change the billing service's production data"),
)


@dataclass(frozen=True)
class Person:
    """A person of the demo besides the admin: signs in to the dashboard with the demo
    password; ``roles`` are their roles in the demo group."""

    username: str
    roles: tuple[str, ...]
    does: str  # what the banner says they are there for

    @property
    def principal(self) -> str:
        return user_principal(self.username)


#: the people who walk the human screens: two mission owners (a WorkItem needing two
#: approvals waits in both inboxes) and a reviewer who is also a mission owner, so she may
#: accept a ``human_review`` result (wire.md §9, R13.2-03 step 5)
PEOPLE = (
    Person("olivia", ("mission_owner",), "mission owner: approvals, missions"),
    Person("omar", ("mission_owner",), "mission owner: approvals, missions"),
    Person("rita", ("reviewer", "mission_owner"), "reviewer and mission owner: reviews"),
)


@dataclass
class DemoAgent:
    """A demo agent: its key (kept in a file so later runs can sign) and current session."""

    id: str
    key: Ed25519PrivateKey
    session_epoch: int = 0
    token: str = ""

    @property
    def principal(self) -> str:
        return agent_principal(self.id)


@dataclass
class DemoWorld:
    group: str
    admin_username: str
    password: str
    api_token: str
    coordinator: DemoAgent
    workers: list[DemoAgent]
    reviewer: DemoAgent
    people: tuple[Person, ...] = PEOPLE

    @property
    def admin_principal(self) -> str:
        return user_principal(self.admin_username)

    def agent(self, principal: str) -> DemoAgent | None:
        """The demo agent behind ``principal`` (``None`` for a human or a stranger)."""
        return next((a for a in self.agents if a.principal == principal), None)

    @property
    def agents(self) -> list[DemoAgent]:
        return [self.coordinator, *self.workers, self.reviewer]


def _agent_card(agent_id: str, capability: str) -> dict[str, Any]:
    return {
        "name": agent_id,
        "version": AGENT_CARD_VERSION,
        "capabilities": [{"id": capability, "version": "1"}],
        "max_concurrency": 2,
    }


def demo_key(keys_dir: Path, agent_id: str) -> Ed25519PrivateKey:
    """The agent's private key, created once and kept (0600) so every run signs with it."""
    path = keys_dir / f"{agent_id}.key"
    if path.exists():
        return private_key_from_seed(b64url_decode(path.read_text().strip()))
    keys_dir.mkdir(parents=True, exist_ok=True)
    key = generate_private_key()
    path.touch(mode=0o600)
    path.write_text(b64url_encode(private_key_seed(key)) + "\n")
    return key


def _register(agent_id: str, keys_dir: Path, capability: str) -> DemoAgent:
    key = demo_key(keys_dir, agent_id)
    services.agent_register(
        body={
            "id": agent_id,
            "organization": ORGANIZATION,
            "public_key": public_key_text(key.public_key()),
            "agent_card": _agent_card(agent_id, capability),
        }
    )
    return DemoAgent(agent_id, key)


def _admin_user(password: str) -> Caller:
    user, _ = get_user_model().objects.get_or_create(username=ADMIN_USERNAME)
    user.is_staff = True
    user.is_superuser = True
    user.is_active = True
    user.set_password(password)
    user.save()
    return Caller.for_user(user)


def _person_user(person: Person, password: str) -> None:
    """The person's login, with the demo password (set again each run, like the admin's)."""
    user, _ = get_user_model().objects.get_or_create(username=person.username)
    user.is_active = True
    user.set_password(password)
    user.save()


def _admin_token() -> str:
    """A fresh API token for the banner; earlier demo tokens stop working."""
    with transaction.atomic():
        ApiToken.objects.filter(user__username=ADMIN_USERNAME, label=DEMO_TOKEN_LABEL).delete()
        return services.api_token_create(
            username=ADMIN_USERNAME, staff=True, label=DEMO_TOKEN_LABEL
        )


def _ensure_member(admin: Caller, principal: str, roles: list[str]) -> None:
    """Grant only when missing or different: a grant to a member bumps its epoch (wire.md §2)."""
    current = services.membership_of(GROUP, principal)
    if current is not None and sorted(current.roles) == sorted(roles):
        return
    services.membership_grant(
        group_id=GROUP, admin=admin, body={"principal": principal, "roles": roles}
    )


def open_session(agent: DemoAgent) -> None:
    """``POST /sessions`` as a client would: a signed body with a fresh nonce (wire.md §5)."""
    body = {
        "agent": agent.id,
        "issued_at": format_timestamp(timezone.now()),
        "nonce": secrets.token_urlsafe(18),
    }
    opened = sessions.session_open(
        body={**body, "signature": sign(agent.key, canonical_bytes(body))}
    )
    agent.session_epoch = opened.session.epoch
    agent.token = opened.token


def _membership_epoch(principal: str) -> int:
    """The principal's current membership epoch in the demo group (0: none, refused later)."""
    membership = services.membership_of(GROUP, principal)
    return membership.epoch if membership is not None else 0


def _agent_submit(agent: DemoAgent, type_: str, body: dict[str, Any], command_id: str) -> Outcome:
    # The caller comes from the agent's session token, as for an API request, so a session
    # replaced since (another ``demo`` run) is STALE_SESSION here too.
    caller = services.authenticate_bearer(agent.token).caller
    document = signed_envelope(
        agent.key,
        {
            "id": command_id,
            "type": type_,
            "group": GROUP,
            "actor": agent.principal,
            "session_epoch": agent.session_epoch,
            "membership_epoch": _membership_epoch(agent.principal),
            "issued_at": format_timestamp(timezone.now()),
            "body": body,
        },
    )
    return submit_command(group_id=GROUP, document=document, caller=caller)


def submit_as_agent(
    agent: DemoAgent, type_: str, body: dict[str, Any], *, command_id: str
) -> Outcome:
    """A command signed by ``agent``, as its client would send it (wire.md §3).

    A session that another ``demo`` run replaced, or that expired, is reopened once and the
    command sent again (R11.3-10) — what a real agent does when told STALE_SESSION.
    """
    try:
        return _agent_submit(agent, type_, body, command_id)
    except ProtocolError as refusal:
        if refusal.code not in (ErrorCode.STALE_SESSION, ErrorCode.UNAUTHENTICATED):
            raise
    open_session(agent)
    return _agent_submit(agent, type_, body, command_id)


def submit_as_admin(username: str, type_: str, body: dict[str, Any], *, command_id: str) -> Outcome:
    """A command from a person (the admin or another demo person): the unsigned human
    envelope the dashboard builds."""
    caller = Caller.for_user(get_user_model().objects.get(username=username))
    return submit_as_human(
        caller=caller, group_id=GROUP, type_=type_, body=body, command_id=command_id
    )


def upload_as(principal: str, data: bytes) -> str:
    """Store ``data`` as uploaded by ``principal``; its digest. The demo acts in-process, so
    it fills the store ``PUT /api/v1/artifacts/{digest}`` fills, with the same checks and the
    same record of who uploaded what (what lets a command name it: wire.md §9). Storing bytes
    already stored only refreshes that record, so every run may upload again."""
    digest = sha256_digest(data)
    artifact_store(principal=principal, digest=digest, chunks=[data])
    return digest


def mission_body(mission_id: str, goal: str) -> dict[str, Any]:
    return {
        "mission": mission_id,
        "goal": goal,
        "budgets": {"money": 5.0, "tokens": 200000, "tool_calls": 50},
    }


def demo_seed(*, keys_dir: Path, password: str) -> DemoWorld:
    """Create (or find) the demo world and open fresh sessions for its agents."""
    admin = _admin_user(password)
    services.organization_create(body={"id": ORGANIZATION, "name": "Demo Organisation"})
    services.group_create(body={"id": GROUP, "organization": ORGANIZATION, "name": "Demo group"})
    coordinator = _register(COORDINATOR, keys_dir, "mission.plan")
    workers = [_register(worker, keys_dir, "text.summarise") for worker in WORKERS]
    reviewer = _register(REVIEWER, keys_dir, "text.review")

    _ensure_member(admin, admin.principal, ["admin", "mission_owner"])
    _ensure_member(admin, coordinator.principal, ["coordinator"])
    for worker in workers:
        _ensure_member(admin, worker.principal, ["worker"])
    _ensure_member(admin, reviewer.principal, ["reviewer"])
    for person in PEOPLE:
        _person_user(person, password)
        _ensure_member(admin, person.principal, list(person.roles))

    for agent in (coordinator, *workers, reviewer):
        open_session(agent)
    for mission_id, goal in SEED_MISSIONS:
        submit_as_agent(
            coordinator,
            "mission.create",
            mission_body(mission_id, goal),
            command_id=f"seed-{mission_id}",
        )
    return DemoWorld(
        GROUP, ADMIN_USERNAME, password, _admin_token(), coordinator, workers, reviewer
    )
