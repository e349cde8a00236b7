"""Locking a group's head row and appending events after it (the hot path, in plain SQL).

The head row is locked with ``SELECT … FOR UPDATE`` for the whole transaction, so commit
order equals sequence order: a reader that sees sequence N+1 committed can never later see
N appear. The same statement reads the database clock, which stamps ``recorded_at``.

Each group has its own head row and its own sequence from 1 (R0-17): no lock, counter or
order spans two groups.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Any

from django.db import connection
from django.utils import timezone

from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.events import sealed
from missionweave.protocol.facts import Fact, NewEvent
from missionweave.protocol.timefmt import format_timestamp

from .models import GroupLog
from .reads import Read, run_one
from .statements import current, hot_cursor

# Hand-written like the head statements: for one row, Django's bulk_create spends about as
# much CPU compiling the INSERT as the statement costs (~0.1 ms per command, measured).
_INSERT_EVENT = (
    "INSERT INTO ledger_event (group_id, sequence, event_id, type, command_id, actor, "
    "recorded_at, hash, document) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)"
)


@dataclass
class Head:
    """The locked head of a group's log, advanced in memory as events are appended."""

    group_id: str
    sequence: int
    hash: str
    now: datetime
    start_sequence: int = 0
    appended: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.start_sequence = self.sequence


def lock_head(group_id: str) -> Head | None:
    """Lock the head row of ``group_id`` (``None`` if the group does not exist)."""
    return run_one(lock_read(group_id))


def lock_read(group_id: str) -> Read[Head | None]:
    """The statement that locks the head row of ``group_id``, to run first among the reads
    sent with it (``reads.run_together``): the server runs them in order, so each read after
    it sees the group as the lock holder does."""
    if current().vendor == "postgresql":
        return Read(_LOCK, [group_id], partial(_locked, group_id, None))
    # SQLite: the IMMEDIATE transaction already holds the database's write lock.
    return Read(_READ_HEAD, [group_id], partial(_locked, group_id, timezone.now()))


_LOCK = (
    "SELECT head_sequence, head_hash, clock_timestamp() FROM ledger_grouplog "
    "WHERE group_id = %s FOR UPDATE"
)
_READ_HEAD = "SELECT head_sequence, head_hash FROM ledger_grouplog WHERE group_id = %s"


def _locked(group_id: str, now: datetime | None, rows: list[tuple[Any, ...]]) -> Head | None:
    if not rows:
        return None
    row = rows[0]
    return Head(group_id, row[0], row[1], row[2] if now is None else now)


def authority_now() -> datetime:
    """The authority clock: the database's, as ``lock_head`` reads it under the lock."""
    if connection.vendor == "postgresql":
        with hot_cursor() as cursor:
            cursor.execute("SELECT clock_timestamp()")
            return cursor.fetchone()[0]
    return timezone.now()


def no_such_group(group_id: str) -> ProtocolError:
    """``NOT_FOUND`` for a group id that names no group (wire.md §4)."""
    return ProtocolError(
        ErrorCode.NOT_FOUND,
        f"no group {group_id!r}",
        requirement="wire§4",
        details={"group": group_id},
    )


def lock_existing_head(group_id: str) -> Head:
    """``lock_head`` for a group that must exist: ``NOT_FOUND`` otherwise."""
    head = lock_head(group_id)
    if head is None:
        raise no_such_group(group_id)
    return head


def committed_head(group_id: str) -> int | None:
    """The group's committed head sequence, without a lock (``None``: no such group)."""
    return (
        GroupLog.objects.filter(group_id=group_id).values_list("head_sequence", flat=True).first()
    )


def committed_position(group_id: str) -> tuple[int, str] | None:
    """The group's committed head sequence and its hash, without a lock (``None``: no such
    group)."""
    return (
        GroupLog.objects.filter(group_id=group_id).values_list("head_sequence", "head_hash").first()
    )


def seal(
    head: Head, new_events: list[NewEvent], *, command_id: str, actor: str
) -> tuple[list[Fact], list[tuple[Any, ...]]]:
    """Give ``new_events`` their sequence, time and hash and advance ``head`` in memory:
    the facts to project and the rows to insert (``insert_events``), nothing written yet."""
    recorded_at = format_timestamp(head.now)
    recorded_at_db = current().ops.adapt_datetimefield_value(head.now)
    facts: list[Fact] = []
    rows: list[tuple[Any, ...]] = []
    for new in new_events:
        sequence = head.sequence + 1
        document = {
            "event_id": f"evt_{uuid.uuid4().hex}",
            "group": head.group_id,
            "sequence": sequence,
            "type": new.type,
            "command_id": command_id,
            "actor": actor,
            "recorded_at": recorded_at,
            "payload": new.payload,
            "prev_hash": head.hash,
        }
        document["hash"], stored = sealed(document)
        rows.append(
            (
                head.group_id,
                sequence,
                document["event_id"],
                new.type,
                command_id,
                actor,
                recorded_at_db,
                document["hash"],
                stored.decode("utf-8"),
            )
        )
        facts.append(
            Fact(new.type, new.payload, actor, sequence, command_id, recorded_at, head.group_id)
        )
        head.sequence, head.hash = sequence, document["hash"]
        head.appended.append(document)
    return facts, rows


def insert_events(rows: list[tuple[Any, ...]]) -> None:
    """Insert the rows ``seal`` made: one ``executemany`` (in a flush: one multi-row INSERT)."""
    if rows:
        with hot_cursor() as cursor:
            cursor.executemany(_INSERT_EVENT, rows)


def save_head(head: Head) -> None:
    """Persist the advanced head (once per transaction, however many commands it held)."""
    if head.sequence == head.start_sequence:
        return
    with hot_cursor() as cursor:
        cursor.execute(
            "UPDATE ledger_grouplog SET head_sequence = %s, head_hash = %s WHERE group_id = %s",
            [head.sequence, head.hash, head.group_id],
        )
