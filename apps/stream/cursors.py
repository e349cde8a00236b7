"""ACK cursors (wire.md §7; R16-06, R16-07, R16-08; MWP-WRK-030): store, read, report lag.

Each group named in an ``ACK`` frame is judged on its own: a refused group (not a member,
beyond the head) is answered with its own ``ERROR`` frame and leaves its cursor as it was,
while the other groups of the same frame are still stored. A frame that is malformed as a
whole (``cursors`` not a non-empty object, a bad group id, a value that is not a
non-negative integer) stores nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from apps.ledger.head import committed_head
from apps.registry.services import membership_of
from missionweave.protocol.errors import ErrorCode, ProtocolError

from .models import Cursor

WIRE_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
MAX_GROUPS_PER_ACK = 100

# One statement, race-free under concurrent ACKs from several sockets of the same principal:
# the row lock taken by ON CONFLICT DO UPDATE serialises them and the CASE keeps the larger
# value, so a cursor never moves backwards (wire§7, R16-06). ``updated_at`` only changes when
# the cursor moves. Portable SQL (no ``GREATEST``, no ``now()``): the embedded default runs
# it on SQLite, whose upsert has the same semantics under its database-wide write lock.
_UPSERT = """
INSERT INTO stream_cursor AS c (principal, group_id, sequence, updated_at)
VALUES (%s, %s, %s, %s)
ON CONFLICT (principal, group_id) DO UPDATE
SET sequence = CASE WHEN EXCLUDED.sequence > c.sequence THEN EXCLUDED.sequence
                    ELSE c.sequence END,
    updated_at = CASE WHEN EXCLUDED.sequence > c.sequence THEN EXCLUDED.updated_at
                      ELSE c.updated_at END
RETURNING sequence
"""


@dataclass
class AckOutcome:
    """The stored cursor of every accepted group, and one refusal per refused group."""

    stored: dict[str, int] = field(default_factory=dict)
    refused: list[tuple[str, ProtocolError]] = field(default_factory=list)


def parse_ack(frame: dict[str, Any]) -> dict[str, int]:
    """The ``cursors`` of an ACK frame, or ``MALFORMED`` (wire§7, wire§1)."""
    cursors = frame.get("cursors")
    if not isinstance(cursors, dict) or not cursors:
        raise ProtocolError(ErrorCode.MALFORMED, "ACK carries a non-empty cursors object")
    if len(cursors) > MAX_GROUPS_PER_ACK:
        raise ProtocolError(ErrorCode.MALFORMED, f"ACK names at most {MAX_GROUPS_PER_ACK} groups")
    for group_id, sequence in cursors.items():
        if not WIRE_ID.fullmatch(group_id):
            raise ProtocolError(ErrorCode.MALFORMED, f"{group_id!r} is not a group id")
        if isinstance(sequence, bool) or not isinstance(sequence, int) or sequence < 0:
            raise ProtocolError(
                ErrorCode.MALFORMED, f"the cursor of {group_id} is a non-negative integer"
            )
    return cursors


def acknowledge(principal: str, cursors: dict[str, int]) -> AckOutcome:
    """Store each group's cursor for ``principal`` (R16-07), judging every group on its own.

    The head is read without a lock: it only grows, so a value at or below the head read
    here is at or below every later head. Nothing here touches the log (R16-08, R0-16: an
    acknowledgement never deletes history).
    """
    outcome = AckOutcome()
    for group_id, sequence in cursors.items():
        if membership_of(group_id, principal) is None:
            outcome.refused.append(
                (
                    group_id,
                    ProtocolError(
                        ErrorCode.NOT_A_MEMBER,
                        f"{principal} is not a member of {group_id}",
                        requirement="wire§2",
                    ),
                )
            )
            continue
        head = committed_head(group_id) or 0
        if sequence > head:
            outcome.refused.append(
                (
                    group_id,
                    ProtocolError(
                        ErrorCode.ACK_BEYOND_HEAD,
                        f"cursor {sequence} is beyond the head {head} of {group_id}",
                        requirement="R16-06",
                    ),
                )
            )
            continue
        with transaction.atomic(), connection.cursor() as db:
            db.execute(_UPSERT, [principal, group_id, sequence, timezone.now()])
            outcome.stored[group_id] = db.fetchone()[0]
    return outcome


@dataclass(frozen=True)
class CursorLag:
    principal: str
    sequence: int
    lag: int
    updated_at: datetime


def group_cursors(group_id: str) -> tuple[int, list[CursorLag]]:
    """(head, every stored cursor of the group with its lag behind the head), for admins."""
    head = committed_head(group_id) or 0
    rows = Cursor.objects.filter(group_id=group_id).order_by("principal")
    return head, [
        CursorLag(row.principal, row.sequence, max(head - row.sequence, 0), row.updated_at)
        for row in rows
    ]
