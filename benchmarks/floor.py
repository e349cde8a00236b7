"""The floor: PostgreSQL alone running the write path's own SQL for one ``mission.create``.

The ceiling (``ceilings.run_pgbench``) is the least a gapless append costs: lock a head row,
advance it, insert a ~600-byte event. A command of the protocol writes more — its projection
row, its idempotency record, the reads under the lock — and PostgreSQL's time for that SQL
is no part of the write path's Python. The floor measures it: the two queries one
``submit_command`` sends (the lock with its reads, the writes with the ``COMMIT``) are
captured from the bench world itself, made repeatable, and run by pgbench with no Python at
all, in the same rounds and cells as the ceiling. A figure over the floor tells how much of
the time left is the server's Python (issue 15, docs/benchmarks.md "Interpretation").

Repeatable means: the new command id, mission id, event id and sequence are a number drawn
from a database sequence with the transaction's ``BEGIN`` (which the write path sends alone)
and quoted into the text as the write path quotes its literals, so every read keeps its
index; and the head row is rewritten to its own values instead of advanced, so the commands
the in-process and HTTP figures send after it still append at the real head. The events the
floor inserts sit far above every real head (``SEQUENCE_BASE``) and are not chained: the
bench database is reset before every run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.ledger.statements import statements_of
from apps.ledger.write_path import submit_command

from .ceilings import pgbench
from .envelopes import mission_create
from .stats import Measurement
from .world import BenchWorld

COUNTER = "mw_bench_floor"
#: the floor's event sequences start here, above any head a bench run reaches
SEQUENCE_BASE = 1_000_000_000_000
_HEAD_UPDATE = re.compile(r"UPDATE ledger_grouplog SET head_sequence = \d+, head_hash = '[^']*'")


@dataclass(frozen=True)
class CapturedCommand:
    """One ``mission.create``'s two multi-statement queries and the values they carry."""

    group: str
    reads: str
    writes: str
    command_id: str
    mission_id: str
    event_id: str
    sequence: int


def capture(world: BenchWorld) -> CapturedCommand:
    """Send two commands through the write path on the world's first group and agent and
    keep the queries of the second (the first warms the process's key cache, so the second
    sends exactly what every later command sends)."""
    agent, group = world.agents[0], world.groups[0]
    submit_command(group_id=group, document=mission_create(agent, group), caller=agent.caller)
    document = mission_create(agent, group)
    with CaptureQueriesContext(connection) as captured:
        outcome = submit_command(group_id=group, document=document, caller=agent.caller)
    queries = [q["sql"] for q in captured.captured_queries if len(statements_of(q["sql"])) > 1]
    if len(queries) != 2:
        raise RuntimeError(f"expected the reads and the writes as two queries, got {queries!r}")
    (event,) = outcome.body["events"]
    return CapturedCommand(
        group=group,
        reads=queries[0],
        writes=queries[1],
        command_id=document["id"],
        mission_id=outcome.body["result"]["mission"],
        event_id=event["event_id"],
        sequence=event["sequence"],
    )


def script(command: CapturedCommand, group: str) -> str:
    """A pgbench script of ``command``'s queries for ``group``: BEGIN with the next number of
    the counter (``:n``, quoted into the ids as literals, so every read keeps its index), then
    the reads and the writes each as one query (``\\;`` joins statements into one)."""
    replaced = {
        f"'{command.command_id}'": "'cmd-floor-:n'",
        f"'{command.mission_id}'": "'m-floor-:n'",
        f"'{command.event_id}'": "'evt_floor_:n'",
    }
    reads, writes = command.reads, command.writes
    for old, new in replaced.items():
        if old not in reads + writes:
            raise RuntimeError(f"{old} is not in the captured SQL")
        reads, writes = reads.replace(old, new), writes.replace(old, new)
    slot = f"VALUES ('{command.group}', {command.sequence}, "
    head = _HEAD_UPDATE.search(writes)
    if slot not in writes or head is None or not writes.rstrip().endswith("COMMIT"):
        raise RuntimeError("the captured writes are not an event insert, a head update, COMMIT")
    writes = writes.replace(slot, f"VALUES ('{command.group}', {SEQUENCE_BASE} + :n, ", 1)
    writes = writes.replace(
        head.group(0),
        "UPDATE ledger_grouplog SET head_sequence = head_sequence, head_hash = head_hash",
    )
    text = (
        f"BEGIN \\;\nSELECT nextval('{COUNTER}') AS n \\gset\n"
        + "\n".join(" \\;\n".join(statements_of(query)) + ";" for query in (reads, writes))
        + "\n"
    )
    return text.replace(f"'{command.group}'", f"'{group}'")


def write_scripts(command: CapturedCommand, groups: tuple[str, ...], directory: Path) -> None:
    """One script per group in ``directory`` (``floor-<index>.sql``), and the counter."""
    directory.mkdir(parents=True, exist_ok=True)
    for index, group in enumerate(groups):
        (directory / f"floor-{index:02d}.sql").write_text(script(command, group))
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE SEQUENCE IF NOT EXISTS {COUNTER}")


def run_floor(
    url: str, directory: Path, *, clients: int, groups: int, seconds: float
) -> Measurement:
    """pgbench running the scripts of the first ``groups`` groups at ``clients`` connections,
    each transaction's script (so its group) drawn at random, as the ceiling draws its group."""
    scripts = [f"{directory / f'floor-{index:02d}.sql'}@1" for index in range(groups)]
    arguments = [arg for script in scripts for arg in ("-f", script)]
    return pgbench(url, arguments, clients=clients, groups=groups, seconds=seconds, name="floor")
