"""Commands straight into ``submit_command`` from threads of this process: the write path
without HTTP, DRF, authentication or JSON parsing.

Each thread has its own database connection (Django's are per thread), taken the way the
settings say: on PostgreSQL that is a borrow from Django's psycopg pool (the product default),
held by the thread for the whole scenario, so the pool hardly matters here. The threads share
one GIL, so on two cores this measures how much Python the write path spends per command
as much as how PostgreSQL serialises the head row.
"""

from __future__ import annotations

from django.db import connection

from apps.ledger.write_path import submit_command
from missionweave.protocol.errors import ProtocolError

from .config import BenchConfig
from .envelopes import EnvelopePool
from .scenario import measure_commands
from .stats import Measurement
from .world import BenchWorld


class InProcessClient:
    def __init__(self, pool: EnvelopePool) -> None:
        self.pool = pool
        self.caller = pool.agent.caller
        self.first_error = ""

    def send(self) -> tuple[int, int]:
        document = self.pool.next()
        try:
            submit_command(group_id=document["group"], document=document, caller=self.caller)
        except ProtocolError as refusal:
            self.first_error = self.first_error or f"refused: {refusal.code} {refusal}"
            return 0, 1
        return 1, 0

    def close(self) -> None:
        connection.close()  # this thread's connection


def measure_inprocess(
    world: BenchWorld, *, clients: int, groups: int, config: BenchConfig
) -> Measurement:
    # Give the conducting thread's connection back first: with a pool whose max_size equals
    # the client count, holding it would leave one client thread waiting for a connection.
    connection.close()
    return measure_commands(
        "inprocess",
        world=world,
        clients=clients,
        groups=groups,
        config=config,
        make_client=InProcessClient,
        params={},
    )
