"""The demo's cast for ``manage.py demo``: the organisation of
:mod:`missionweave.demo.organisation` — two groups, a coordinator, three workers and a
reviewer agent — registered on the server, with a human admin and three more people (two
mission owners and a reviewer, so every human screen can be walked as someone who may act and
as someone who may not), and a few missions. All through the real services and the one write
path, so the demo exercises exactly what production does. The agents then act from their own
processes (``manage.py demo`` starts them); the seed acts as them in-process only to put
WorkItems in the places worth showing (:mod:`apps.demo.story`), through
``InProcessPersona``, the same persona class the agent processes, the tests and the benchmarks
use.

Seeding is idempotent: identities are created once, memberships are granted only when they
differ, and the seed missions use fixed command ids, so a second run is answered from the
idempotency records and appends nothing. Only the agents' sessions are opened afresh (a new
session epoch each run).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.contrib.auth import get_user_model
from django.db import transaction

from apps.artifacts.services import artifact_store
from apps.demo.personas import InProcessPersona
from apps.ledger.write_path import Caller, Outcome, submit_as_human, submit_command
from apps.registry import services
from apps.registry.models import ApiToken
from missionweave.demo import organisation
from missionweave.demo.contracts import mission_body
from missionweave.demo.organisation import GROUP, GROUPS, ORGANIZATION, AgentSpec
from missionweave.demo.personas import Persona, agent_card
from missionweave.protocol.canonical import sha256_digest
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.identifiers import user_principal
from missionweave.protocol.signing import public_key_text

ADMIN_USERNAME = "admin"
COORDINATOR = organisation.COORDINATOR.id
WORKERS = tuple(worker.id for worker in organisation.WORKERS)
#: each group's reviewer agent: the default reviewer the authority asks (R13.2-03 step 3)
REVIEWER = organisation.REVIEWER.id
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


#: a demo agent acting in-process: its key is kept in a file so later runs, and the agent's
#: own process, sign with it
DemoAgent = InProcessPersona


@dataclass
class DemoWorld:
    group: str
    admin_username: str
    password: str
    api_token: str
    coordinator: DemoAgent
    workers: list[DemoAgent]
    reviewer: DemoAgent
    keys_dir: Path
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


def demo_key(keys_dir: Path, agent_id: str) -> Ed25519PrivateKey:
    """The agent's private key, created once and kept (0600) so every run, and the agent's
    own process, signs with it."""
    path = key_path(keys_dir, agent_id)
    if not path.exists():
        Persona.fresh(agent_id).save_key(path)
    return Persona.from_key_file(agent_id, path).key


def key_path(keys_dir: Path, agent_id: str) -> Path:
    return keys_dir / f"{agent_id}.key"


def _register(spec: AgentSpec, keys_dir: Path) -> DemoAgent:
    key = demo_key(keys_dir, spec.id)
    card = agent_card(
        spec.id,
        spec.capabilities,
        max_concurrency=spec.max_concurrency,
        version=AGENT_CARD_VERSION,
    )
    try:
        services.agent_register(
            body={
                "id": spec.id,
                "organization": ORGANIZATION,
                "public_key": public_key_text(key.public_key()),
                "agent_card": card,
            }
        )
    except ProtocolError as clash:
        if clash.code != ErrorCode.ALREADY_EXISTS:
            raise
        raise OlderDemo(f"{spec.id}'s Agent Card differs from this version's") from None
    return DemoAgent(spec.id, key)


class OlderDemo(Exception):
    """The demo database was made by an older version of the demo (``make clean`` resets)."""


def demo_email(username: str) -> str:
    """Every demo person has an address, so notifications are emailed (issue 36): to files
    under ``var/mail`` unless ``EMAIL_URL`` names a server (``example.org`` is reserved)."""
    return f"{username}@example.org"


def _admin_user(password: str) -> Caller:
    user, _ = get_user_model().objects.get_or_create(username=ADMIN_USERNAME)
    user.email = user.email or demo_email(ADMIN_USERNAME)
    user.is_staff = True
    user.is_superuser = True
    user.is_active = True
    user.set_password(password)
    user.save()
    return Caller.for_user(user)


def _person_user(person: Person, password: str) -> None:
    """The person's login, with the demo password (set again each run, like the admin's)."""
    user, _ = get_user_model().objects.get_or_create(username=person.username)
    user.email = user.email or demo_email(person.username)
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


def _ensure_member(admin: Caller, principal: str, roles: Sequence[str], group: str = GROUP) -> None:
    """Grant only when missing or different: a grant to a member bumps its epoch (wire.md §2)."""
    current = services.membership_of(group, principal)
    if current is not None and sorted(current.roles) == sorted(roles):
        return
    services.membership_grant(
        group_id=group, admin=admin, body={"principal": principal, "roles": list(roles)}
    )


def _membership_epoch(principal: str) -> int:
    """The principal's current membership epoch in the demo group (0: none, refused later)."""
    membership = services.membership_of(GROUP, principal)
    return membership.epoch if membership is not None else 0


def _agent_submit(agent: DemoAgent, type_: str, body: dict[str, Any], command_id: str) -> Outcome:
    # The caller comes from the agent's session token, as for an API request, so a session
    # replaced since (another ``demo`` run) is STALE_SESSION here too.
    caller = services.authenticate_bearer(agent.token).caller
    document = agent.command(
        GROUP, type_, body, id=command_id, membership_epoch=_membership_epoch(agent.principal)
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
    agent.open_session()
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


def demo_seed(*, keys_dir: Path, password: str) -> DemoWorld:
    """Create (or find) the demo world and open fresh sessions for its agents."""
    admin = _admin_user(password)
    services.organization_create(body={"id": ORGANIZATION, "name": "Demo Organisation"})
    for group, name in GROUPS.items():
        services.group_create(body={"id": group, "organization": ORGANIZATION, "name": name})
    agents = {spec.id: _register(spec, keys_dir) for spec in organisation.AGENTS}
    for person in PEOPLE:
        _person_user(person, password)

    for group in GROUPS:
        # the people may approve and review in both groups: a child mission in the lab
        # waits for a mission owner's approval there (R10.2-16)
        _ensure_member(admin, admin.principal, ["admin", "mission_owner"], group)
        for person in PEOPLE:
            _ensure_member(admin, person.principal, person.roles, group)
    for spec in organisation.AGENTS:
        for group, roles in spec.roles.items():
            _ensure_member(admin, agents[spec.id].principal, roles, group)

    for agent in agents.values():
        agent.open_session()
    coordinator = agents[COORDINATOR]
    for mission_id, goal in SEED_MISSIONS:
        submit_as_agent(
            coordinator,
            "mission.create",
            mission_body(mission_id, goal),
            command_id=f"seed-{mission_id}",
        )
    return DemoWorld(
        GROUP,
        ADMIN_USERNAME,
        password,
        _admin_token(),
        coordinator,
        [agents[worker] for worker in WORKERS],
        agents[REVIEWER],
        keys_dir=keys_dir,
    )
