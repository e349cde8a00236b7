"""Where one command's time goes: each step of the path timed alone, one thread, no contention.

The load figures say how fast; this says why. Each step runs ``repeat`` times back to back
and reports its mean wall time and, for the whole command, how much of it was this
process's CPU (the rest is waiting on PostgreSQL and Redis). The SQL statements of one
``submit_command`` are counted with Django's query capture.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from apps.ledger.broadcast import announce_head
from apps.ledger.statements import statements_of
from apps.ledger.write_path import submit_command
from apps.registry.services import authenticate_bearer
from missionweave.protocol import strictjson
from missionweave.protocol.commands import PUBLIC_COMMAND_TYPES
from missionweave.protocol.envelope import check_signature, parse_envelope
from missionweave.protocol.signing import parse_public_key, public_key_text

from .ceilings import HASH, PAYLOAD
from .envelopes import mission_create
from .world import BenchWorld

CLIENT, HTTP, WRITE_PATH, FLOOR = "client", "HTTP layer", "write path", "floor"


@dataclass(frozen=True)
class Step:
    name: str
    where: str  # client, HTTP layer (before submit_command), write path (inside it), floor
    mean_us: float
    cpu_us: float  # this process's CPU time per call (announce_head uses another thread)


@dataclass
class Breakdown:
    repeat: int
    steps: list[Step] = field(default_factory=list)
    queries: list[str] = field(default_factory=list)  # the SQL of one submit_command

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def time(self, name: str, where: str, step: Callable[[int], object], repeat: int = 0) -> None:
        """Run ``step(i)`` for i in 0..repeat-1 and record its mean wall and CPU time."""
        repeat = repeat or self.repeat
        wall, cpu = time.perf_counter(), time.process_time()
        for index in range(repeat):
            step(index)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        self.steps.append(Step(name, where, wall / repeat * 1e6, cpu / repeat * 1e6))


def _raw_append(group: int) -> None:
    """The gapless append in hand-written SQL through the same Django connection."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT head FROM bench_head WHERE g = %s FOR UPDATE", [group])
        (head,) = cursor.fetchone()
        cursor.execute(
            "UPDATE bench_head SET head = %s, hash = %s WHERE g = %s", [head + 1, HASH, group]
        )
        cursor.execute(
            "INSERT INTO bench_event (g, seq, event_id, recorded_at, document) "
            "VALUES (%s, %s, gen_random_uuid()::text, clock_timestamp(), %s)",
            [group, head + 1, PAYLOAD],
        )


def _reconnect(_: int) -> None:
    connection.close()
    connection.ensure_connection()


def _time_connections(b: Breakdown, repeat: int) -> None:
    """What each request pays for its database connection under ASGI (one thread per
    request): a new PostgreSQL connection without a pool, a borrow and return with one."""
    params = connection.get_connection_params()  # without the "pool" option
    b.time(
        "open + close a new PostgreSQL connection (per request with MWP_DB_POOL=0)",
        HTTP,
        lambda i: connection.Database.connect(**params).close(),
        repeat=max(1, repeat // 10),
    )
    if connection.pool is not None:
        _reconnect(0)  # the pool holds an idle connection from here on
        b.time(
            "Django connection from the pool + back (per request, the default)",
            HTTP,
            _reconnect,
        )


def measure_breakdown(world: BenchWorld, *, repeat: int, raw_sql: bool = True) -> Breakdown:
    """Time each step of one command on the first agent and group of ``world``."""
    agent, group = world.agents[0], world.groups[0]
    key = parse_public_key(public_key_text(agent.key.public_key()))
    b = Breakdown(repeat)
    envelopes = [mission_create(agent, group) for _ in range(repeat)]
    bodies = [json.dumps(envelope).encode() for envelope in envelopes]

    b.time("sign a mission.create envelope", CLIENT, lambda i: mission_create(agent, group))
    _time_connections(b, repeat)
    b.time(
        "authenticate_bearer (session token lookup)",
        HTTP,
        lambda i: authenticate_bearer(agent.token),
    )
    b.time("strict JSON parse of the request body", HTTP, lambda i: strictjson.parse(bodies[i]))
    b.time(
        "parse envelope + verify Ed25519 signature",
        WRITE_PATH,
        lambda i: check_signature(
            parse_envelope(envelopes[i], path_group=group, known_types=PUBLIC_COMMAND_TYPES),
            [key],
        ),
    )
    b.time(
        "announce_head (after-commit hint, from a thread without an event loop)",
        WRITE_PATH,
        lambda i: announce_head(group, i),
    )
    fresh = [mission_create(agent, group) for _ in range(repeat)]
    b.time(
        "submit_command, whole (1 thread, 1 group)",
        WRITE_PATH,
        lambda i: submit_command(group_id=group, document=fresh[i], caller=agent.caller),
    )
    if raw_sql:
        b.time(
            "raw SQL gapless append (same connection, bench tables)",
            FLOOR,
            lambda i: _raw_append(1),
        )
    with CaptureQueriesContext(connection) as captured:
        submit_command(group_id=group, document=mission_create(agent, group), caller=agent.caller)
    b.queries = [line for query in captured.captured_queries for line in _listed(query["sql"])]
    return b


def _listed(sql: str) -> list[str]:
    """One query as listed lines: itself, or a heading and each of its statements indented
    (``statements.sent_as_one`` and ``reads.run_together`` send several as one query)."""
    parts = statements_of(sql)
    if len(parts) < 2:
        return [_shorten(sql)]
    return [f"-- one query of {len(parts)} statements:", *(f"  {_shorten(p)}" for p in parts)]


def _shorten(sql: str, limit: int = 110) -> str:
    sql = " ".join(sql.split())
    return sql if len(sql) <= limit else sql[: limit - 1] + "…"
