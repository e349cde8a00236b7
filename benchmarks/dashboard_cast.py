"""The dashboard benchmark's cast: one group, its people and its agents, through the services.

People (Django users, members through the membership commands of the write path): the
mission owner who creates the big mission and accepts results, a second mission owner (an
execution approval of quorum 2 needs two distinct owners, R10.2-06) and a human reviewer.
Agents: a coordinator that plans and offers, and a few workers. Every command any of them
sends goes through :mod:`apps.ledger.write_path`, signed by the agent's key or in the
unsigned human envelope the dashboard builds.
"""

from __future__ import annotations

import itertools
import secrets
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.utils import timezone

from apps.artifacts.services import artifact_store
from apps.ledger.write_path import Caller, Outcome, submit_as_human, submit_command
from apps.registry import services
from missionweave.protocol.canonical import sha256_digest
from missionweave.protocol.envelope import signed_envelope
from missionweave.protocol.identifiers import user_principal
from missionweave.protocol.signing import generate_private_key
from missionweave.protocol.timefmt import format_timestamp

from .world import BenchAgent, register_agent

ORGANIZATION = "org-dash"
GROUP = "dash-g"
ADMIN = "dash-admin"
OWNER = "dash-owner"
CO_OWNER = "dash-co-owner"
REVIEWER = "dash-reviewer"
COORDINATOR = "dash-coordinator"
WORKER_COUNT = 6
#: the first worker's agent id (the agent pages measure it)
WORKER_1 = "dash-worker-01"
#: a worker may hold this many WorkItems at once (its Agent Card)
WORKER_CONCURRENCY = 500

_serial = itertools.count(1)


def command_id(prefix: str) -> str:
    return f"{prefix}-{next(_serial)}-{secrets.token_hex(3)}"


@dataclass
class Cast:
    """Who acts in the benchmark's group."""

    group: str
    coordinator: BenchAgent
    workers: list[BenchAgent]
    humans: dict[str, Caller] = field(default_factory=dict)  # username -> caller

    def worker(self, principal: str) -> BenchAgent:
        return next(w for w in self.workers if w.principal == principal)

    def agent(self, principal: str) -> BenchAgent | None:
        return next(
            (a for a in (self.coordinator, *self.workers) if a.principal == principal), None
        )


def _person(username: str, *, staff: bool = False) -> Caller:
    user, _ = get_user_model().objects.get_or_create(username=username)
    if staff and not user.is_staff:
        user.is_staff = True
        user.save(update_fields=["is_staff"])
    return Caller.for_user(user)


def build_cast(group: str = GROUP) -> Cast:
    """The organisation, the group, every member and an open session for each agent."""
    services.organization_create(body={"id": ORGANIZATION, "name": "Dashboard benchmark"})
    token = services.api_token_create(username=ADMIN, staff=True, label="dashboard benchmark")
    admin = services.authenticate_bearer(token).caller
    services.group_create(body={"id": group, "organization": ORGANIZATION, "name": group})
    coordinator = register_agent(
        COORDINATOR,
        organization=ORGANIZATION,
        capability="mission.plan",
        max_concurrency=1,
        key=generate_private_key(),
    )
    workers = [
        register_agent(
            f"dash-worker-{index:02d}",
            organization=ORGANIZATION,
            capability="text.summarise",
            max_concurrency=WORKER_CONCURRENCY,
        )
        for index in range(1, WORKER_COUNT + 1)
    ]
    cast = Cast(group, coordinator, workers)
    grants: list[tuple[str, list[str]]] = [(coordinator.principal, ["coordinator"])]
    grants += [(worker.principal, ["worker"]) for worker in workers]
    for username, role in ((OWNER, "mission_owner"), (CO_OWNER, "mission_owner")):
        cast.humans[username] = _person(username)
        grants.append((user_principal(username), [role]))
    cast.humans[REVIEWER] = _person(REVIEWER)
    grants.append((user_principal(REVIEWER), ["reviewer"]))
    for principal, roles in grants:
        outcome = services.membership_grant(
            group_id=group, admin=admin, body={"principal": principal, "roles": roles}
        )
        agent = cast.agent(principal)
        if agent is not None:
            agent.membership_epochs[group] = outcome.body["result"]["epoch"]
    for agent in (coordinator, *workers):
        agent.open_session()
    return cast


def as_agent(cast: Cast, agent: BenchAgent, type_: str, body: dict[str, Any]) -> Outcome:
    """``agent``'s signed command, as its client would send it (wire.md §3)."""
    document = signed_envelope(
        agent.key,
        {
            "id": command_id("cmd"),
            "type": type_,
            "group": cast.group,
            "actor": agent.principal,
            "session_epoch": agent.session_epoch,
            "membership_epoch": agent.membership_epochs[cast.group],
            "issued_at": format_timestamp(timezone.now()),
            "body": body,
        },
    )
    return submit_command(group_id=cast.group, document=document, caller=agent.caller)


def as_person(cast: Cast, username: str, type_: str, body: dict[str, Any]) -> Outcome:
    """A person's command in the envelope the dashboard builds (``actions.submit_form``)."""
    return submit_as_human(
        caller=cast.humans[username],
        group_id=cast.group,
        type_=type_,
        body=body,
        command_id=command_id("human"),
    )


def upload(principal: str, data: bytes) -> str:
    """Store ``data`` as uploaded by ``principal`` (what ``PUT /api/v1/artifacts/{d}`` does)."""
    digest = sha256_digest(data)
    artifact_store(principal=principal, digest=digest, chunks=[data])
    return digest
