"""Moving old events out of the online log into the archive (wire.md §4, §7; R16-08, R16-10).

Design, chosen for being the simplest that keeps history verifiable and exportable:

- ``GroupLog.archived_through`` is the group's *online floor* F: events 1..F are in
  ``ArchivedEvent``, events F+1..head in ``Event``. Every event is in exactly one of the two.
- :func:`archive` takes the group lock, raises the floor to S, copies events F+1..S into
  ``ArchivedEvent`` (byte-identical rows) and deletes them from ``Event``: one transaction, so
  a reader sees either all of them online or all of them archived.
- The database holds the floor's rules itself (migration ``0010_archive_floor``): an online
  event may be deleted only at or below the floor with its identical copy archived, an
  archived row may be inserted only at or below it, and no event may be inserted at or below
  it, so an archived sequence is never taken again. The archive refuses UPDATE and DELETE
  outright. On PostgreSQL the move is ``ledger_archive_through``, a function owned by the
  schema owner: the application's role has no INSERT on the archive, no DELETE on the log and
  no UPDATE of the floor (:mod:`apps.ledger.db_roles`), so history is only ever moved, through
  that one door, never rewritten.
- Archiving needs a signed snapshot at some sequence ≥ S (``SNAPSHOT_REQUIRED`` otherwise),
  so a reader whose position is now archived can restore that snapshot and continue online
  (``CURSOR_TOO_OLD`` carries its reference).

Readers of the whole history go through :mod:`apps.ledger.history`, which reads the archive
then the online log.
"""

from __future__ import annotations

from typing import Any

from django.db import connection, transaction

from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.snapshots import url_of

from . import head as heads
from .models import ArchivedEvent, Event, GroupLog, Snapshot

_COLUMNS = (
    "group_id",
    "sequence",
    "event_id",
    "type",
    "command_id",
    "actor",
    "recorded_at",
    "hash",
    "document",
)


def archive(group_id: str, through: int) -> int:
    """Move events 1..``through`` of ``group_id`` to the archive; the floor afterwards.

    Idempotent: a ``through`` at or below the current floor changes nothing. Otherwise a
    snapshot at some sequence ≥ ``through`` must exist (R16-10, ``SNAPSHOT_REQUIRED``).
    Holds the group lock, so no append interleaves with the move.
    """
    with transaction.atomic():
        heads.lock_existing_head(group_id)
        floor = GroupLog.objects.values_list("archived_through", flat=True).get(group_id=group_id)
        if through <= floor:
            return floor
        if not Snapshot.objects.filter(group_id=group_id, sequence__gte=through).exists():
            raise ProtocolError(
                ErrorCode.SNAPSHOT_REQUIRED,
                f"archiving {group_id} through {through} needs a snapshot at ≥ {through}",
                requirement="R16-10",
                details={"group": group_id, "through": through, "snapshot": latest(group_id)},
            )
        _move(group_id, floor, through)
        return through


def _move(group_id: str, floor: int, through: int) -> None:
    """Raise the floor to ``through`` and move events ``floor``+1..``through`` (the lock held).

    The floor goes up first: the database lets an event be archived, and leave the log, only
    at or below it.
    """
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT ledger_archive_through(%s, %s)", [group_id, through])
        return
    GroupLog.objects.filter(group_id=group_id).update(archived_through=through)
    columns = ", ".join(_COLUMNS)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {ArchivedEvent._meta.db_table} ({columns}) "  # noqa: S608 (constant names)
            f"SELECT {columns} FROM {Event._meta.db_table} "
            "WHERE group_id = %s AND sequence > %s AND sequence <= %s",
            [group_id, floor, through],
        )
    Event.objects.filter(group_id=group_id, sequence__gt=floor, sequence__lte=through).delete()


def _reference(row: tuple[int, str], group_id: str) -> dict[str, Any]:
    sequence, digest = row
    return {"sequence": sequence, "digest": digest, "url": url_of(group_id, sequence)}


def latest(group_id: str) -> dict[str, Any] | None:
    """The reference ``{sequence, digest, url}`` of the group's latest snapshot, if any."""
    row = (
        Snapshot.objects.filter(group_id=group_id)
        .order_by("-sequence")
        .values_list("sequence", "digest")
        .first()
    )
    return None if row is None else _reference(row, group_id)


def cursor_too_old(group_id: str, after: int) -> ProtocolError:
    """``CURSOR_TOO_OLD`` (wire.md §4, §7; R16-10) for a reader at ``after`` below the floor.

    ``details.snapshot`` names the latest snapshot, whose sequence is ≥ the floor because
    archiving through F needs one at ≥ F: restoring it and reading on from its sequence
    needs only online events.
    """
    floor = (
        GroupLog.objects.filter(group_id=group_id)
        .values_list("archived_through", flat=True)
        .first()
    )
    return ProtocolError(
        ErrorCode.CURSOR_TOO_OLD,
        f"events after {after} of {group_id} are archived (the online log starts after {floor});"
        " restore the snapshot and continue from its sequence",
        requirement="R16-10",
        details={"group": group_id, "archived_through": floor, "snapshot": latest(group_id)},
    )
