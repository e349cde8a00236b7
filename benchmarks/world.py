"""The benchmark's principals: one organisation, N groups, M coordinator agents with sessions.

Everything is created through the real services (memberships through the write path), the
way an operator would, so the measured commands meet the same rows a real server holds.
Every agent is a coordinator of every group, so any client may write into any group.
"""

from __future__ import annotations

from dataclasses import dataclass

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from apps.demo.personas import InProcessPersona
from apps.registry import services
from missionweave.protocol.signing import generate_private_key, public_key_text

ORGANIZATION = "org-bench"
ADMIN = "bench-admin"


#: the benchmarks' agents are the demo's and the tests' persona class (issue 14 §8)
BenchAgent = InProcessPersona


@dataclass(frozen=True)
class BenchWorld:
    groups: tuple[str, ...]
    agents: tuple[BenchAgent, ...]
    admin_token: str


def build_world(*, groups: int, agents: int, prefix: str = "bench") -> BenchWorld:
    """Create the organisation, groups and agents, grant roles and open one session each."""
    services.organization_create(body={"id": ORGANIZATION, "name": "Benchmarks"})
    admin_token = services.api_token_create(username=ADMIN, staff=True, label="benchmarks")
    admin = services.authenticate_bearer(admin_token).caller
    group_ids = tuple(f"{prefix}-g{index:02d}" for index in range(groups))
    for gid in group_ids:
        services.group_create(body={"id": gid, "organization": ORGANIZATION, "name": gid})
    bench_agents = tuple(register_agent(f"{prefix}-a{index:02d}") for index in range(agents))
    for agent in bench_agents:
        for gid in group_ids:
            outcome = services.membership_grant(
                group_id=gid,
                admin=admin,
                body={"principal": agent.principal, "roles": ["coordinator"]},
            )
            agent.membership_epochs[gid] = outcome.body["result"]["epoch"]
        agent.open_session()
    return BenchWorld(group_ids, bench_agents, admin_token)


def register_agent(
    agent_id: str,
    *,
    organization: str = ORGANIZATION,
    capability: str = "bench.load",
    max_concurrency: int = 16,
    key: Ed25519PrivateKey | None = None,
) -> BenchAgent:
    """Register an agent through the service (a fresh key unless one is given)."""
    key = key or generate_private_key()
    services.agent_register(
        body={
            "id": agent_id,
            "organization": organization,
            "public_key": public_key_text(key.public_key()),
            "agent_card": {
                "name": agent_id,
                "version": "1",
                "capabilities": [{"id": capability, "version": "1"}],
                "max_concurrency": max_concurrency,
            },
        }
    )
    return BenchAgent(agent_id, key)
