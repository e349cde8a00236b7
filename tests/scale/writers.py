"""The agents that load the servers: coordinators of every load group, with open sessions,
each sending ``mission.create`` commands.

Built through the services and the write path like every test world (``tests/factories``);
the envelopes are the benchmark's (``benchmarks/envelopes.py``), one fresh command id and
mission id each, spread over the groups at random (seeded per client).
"""

from __future__ import annotations

from benchmarks.envelopes import EnvelopePool
from tests import factories
from tests.factories import AgentPersona
from tests.scale.failover_load import LoadClient


def load_writers(prefix: str, *, groups: int, agents: int) -> tuple[list[str], list[AgentPersona]]:
    """An organisation with ``groups`` groups and ``agents`` coordinators of all of them."""
    org = factories.organization(f"org-{prefix}")
    admin = factories.human(f"alice-{prefix}", staff=True)
    group_ids = [factories.group(f"g-{prefix}-{n:02d}", org) for n in range(groups)]
    writers = [factories.agent(f"{prefix}-a{n:02d}", org) for n in range(agents)]
    for group in group_ids:
        for writer in writers:
            factories.grant(admin, group, writer, "coordinator")
    for writer in writers:
        writer.open_session()
    return group_ids, writers


def load_clients(
    writers: list[AgentPersona], groups: list[str], *, per_client: int
) -> list[LoadClient]:
    """One client per writer, sending ``per_client`` commands."""
    clients = []
    for index, writer in enumerate(writers):
        assert writer.token, "open the session first"
        envelopes = EnvelopePool(writer, groups, seed=index)
        clients.append(LoadClient(token=writer.token, envelopes=envelopes, count=per_client))
    return clients
