"""What a run of commands under one lock of a group has decided, written in bulk at its end.

The write path judges the commands of one request in order under the group's head lock: one
command, a ``commands:batch``, a sweep's reassignments (issue 15 §1–§3). Nothing a command
changes is written while the run goes on. Its events, projection changes and idempotency
record are staged here, and the commands after it read the staged aggregates and records
instead of the database, exactly as they would read the rows had they been written. A
refused command stages nothing, so it leaves no trace without a savepoint, and a run costs
one statement per table at its end (``flush``), however many commands it held.

On PostgreSQL the flush is sent as one query (``statements.sent_as_one``): the events, the
projection rows, the records and the head row folded into one data-modifying ``WITH``
(``folded``), and the ``COMMIT``, in one round trip and one call through the driver, where
each used to cost one or more; a table's rows, when a batch or a sweep stages many, go by
``COPY`` just before a query of the statements one after another.

Reads the stage cannot answer from memory go to the database, which holds every row but the
staged ones: the projection rows of keys not read yet (``view``), the records of command ids
not seen yet (``recorded``), and the one query that is not a read by key, the WorkItems a
member owns (``owned``), for which the staged WorkItems are written first.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import Any

from missionweave.protocol.facts import StateKey

from . import agents, projections, records
from . import head as heads
from .agents import Standing
from .models import CommandRecord
from .reads import run_one, run_together
from .records import Pair, Recorded
from .statements import commits_here, current, hot_cursor, insert_rows, sent_as_one


@dataclass(frozen=True, slots=True)
class Plan:
    """What a run of commands will read by key, known from its verified envelopes."""

    records: frozenset[Pair] = frozenset()  # (actor, command id)
    agents: frozenset[str] = frozenset()  # the agents whose standing is checked
    keys: frozenset[StateKey] = frozenset()  # projection rows (``view``)


def lock_and_read(
    group_id: str, plan: Plan, *, head: heads.Head | None
) -> tuple[heads.Head, Stage]:
    """Lock the group's head (unless ``head`` is already locked by the caller) and read what
    ``plan`` names, in one round trip on PostgreSQL (``reads.run_together``): the head and a
    stage that answers those reads from memory. ``NOT_FOUND`` for a group that does not
    exist."""
    stage = Stage(group_id)
    standings = sorted(plan.agents)
    record_reads = records.recorded_reads(group_id, plan.records)
    answers = run_together(
        [
            *([] if head is not None else [heads.lock_read(group_id)]),
            *(agents.directory().standing_read(agent_id) for agent_id in standings),
            *record_reads,
            *projections.view_reads(group_id, plan.keys),
        ]
    )
    if head is None:
        head = answers.pop(0)
        if head is None:
            raise heads.no_such_group(group_id)
    stage.standings.update(zip(standings, answers[: len(standings)], strict=True))
    answers = answers[len(standings) :]
    stage.records.update(dict.fromkeys(plan.records))
    for found in answers[: len(record_reads)]:
        stage.records.update(found)
    for aggregates in answers[len(record_reads) :]:
        stage.remember(aggregates)
    return head, stage


@dataclass
class Stage:
    """The staged run of one group (see the module docstring)."""

    group_id: str
    #: each aggregate read or changed in this run, as of the last accepted command
    #: (``None``: none exists)
    known: dict[StateKey, Any] = field(default_factory=dict)
    #: the keys whose row exists in the database
    stored: set[StateKey] = field(default_factory=set)
    #: the keys whose row the flush writes
    dirty: set[StateKey] = field(default_factory=set)
    event_rows: list[tuple[Any, ...]] = field(default_factory=list)
    record_rows: list[dict[str, Any]] = field(default_factory=list)
    #: (actor, command id) → its record, read or staged (``None``: none)
    records: dict[tuple[str, str], Recorded | None] = field(default_factory=dict)
    #: agent id → its session epoch and keys, read once per run under the lock (R11.3-10)
    standings: dict[str, Standing | None] = field(default_factory=dict)

    def view(self, keys: Iterable[StateKey]) -> dict[StateKey, Any]:
        """The aggregates at ``keys``: staged or read before in this run, else loaded."""
        wanted = list(keys)
        missing = [key for key in wanted if key not in self.known]
        if missing:
            self.remember(projections.load_view(self.group_id, missing))
        return {key: self.known[key] for key in wanted}

    def remember(self, aggregates: dict[StateKey, Any]) -> None:
        """Keep aggregates just read from the database (``None``: no row)."""
        self.known.update(aggregates)
        self.stored.update(key for key, aggregate in aggregates.items() if aggregate is not None)

    def owned(self, kind: str, owner: str, states: Collection[str]) -> tuple[str, ...]:
        """``projections.owned_ids`` with this run's changes of ``kind`` written first."""
        if any(key[0] == kind for key in self.dirty):
            self.flush_projections()
        return projections.owned_ids(self.group_id, kind, owner, states)

    def recorded(self, actor: str, command_id: str) -> Recorded | None:
        """The record of ``command_id`` from ``actor``: staged in this run, else read."""
        key = (actor, command_id)
        if key not in self.records:
            self.records[key] = records.recorded(self.group_id, actor, command_id)
        return self.records[key]

    def standing(self, agent_id: str) -> Standing | None:
        """The agent's session epoch and keys, read once per run."""
        if agent_id not in self.standings:
            self.standings[agent_id] = run_one(agents.directory().standing_read(agent_id))
        return self.standings[agent_id]

    def accept(
        self,
        *,
        state: dict[StateKey, Any],
        changed: Iterable[StateKey],
        event_rows: list[tuple[Any, ...]],
        record: dict[str, Any],
    ) -> None:
        """Stage an accepted command: its aggregates, its events and its record."""
        for key in changed:
            self.known[key] = state[key]
            self.dirty.add(key)
        self.event_rows.extend(event_rows)
        self.record_rows.append(record)
        self.records[(record["actor"], record["command_id"])] = Recorded(
            record["content_digest"], record["status"], record["response"]
        )

    def flush_projections(self) -> None:
        """Write the staged projection rows now (the events and records wait)."""
        projections.save_aggregates(self.group_id, self.known, self.dirty, existing=self.stored)
        self.stored |= self.dirty
        self.dirty.clear()

    def flush(self, head: heads.Head) -> None:
        """Write everything staged and the advanced head: one round trip on PostgreSQL.

        When the stage's transaction is the outermost one, the ``COMMIT`` rides in the same
        round trip (``statements.commits_here``; the reads' round trip began it): nothing may
        be written in it after the flush, and Django's own commit on leaving the block then
        finds nothing to do."""
        db = current()
        commit = commits_here(db)
        with sent_as_one():
            heads.insert_events(self.event_rows)
            self.flush_projections()
            insert_rows(CommandRecord, self.record_rows)
            heads.save_head(head)
            if commit:
                with hot_cursor() as cursor:
                    cursor.execute("COMMIT")
        self.event_rows.clear()
        self.record_rows.clear()
