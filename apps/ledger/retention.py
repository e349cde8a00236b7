"""Archiving by retention: old events leave the online log on a schedule (R16-08, R16-10).

Beat runs :func:`archive_due_groups` every ``MWP_ARCHIVE_INTERVAL_S`` seconds
(``apps.ledger.tasks.archive_groups``). For each group it raises the online floor
(:mod:`apps.ledger.archive`) past the events recorded more than ``MWP_ARCHIVE_RETENTION_S``
seconds ago by the database clock, keeping at least the newest ``MWP_ARCHIVE_KEEP_EVENTS``
online. Nothing is deleted (R16-08): archived events stay in ``ArchivedEvent`` byte for byte,
and :func:`apps.ledger.history.history` (export, verification, rebuilds) still reads them.

How far, for one group (:func:`archive_group`):

- The *target* T is the end of the longest old prefix of the online log: the event before
  the first one recorded at or after the cutoff (``now − retention``). A prefix, not "every
  old event", so an event younger than the retention is never archived even if the clock
  ever stepped back; capped at ``head − keep_events``.
- ``archive()`` needs a signed snapshot at some sequence ≥ T (R16-10), so a reader whose
  cursor is now archived can restore it and read on online (``CURSOR_TOO_OLD``). If the latest
  snapshot is already ≥ T, archive through T. Otherwise take one first, as the authority
  (``take_as_authority``, at the head, so ≥ T and good for the next runs too): a retention is a
  promise about age, and waiting for ``snapshot_groups`` (every ``MWP_SNAPSHOT_EVERY_EVENTS``
  events) would keep a quiet group's old events online forever.
- One exception keeps an idle group idle: a snapshot at S is always recorded by its own
  ``snapshot.created`` at S + 1 (:mod:`apps.ledger.snapshots`). When T = S + 1, archiving that
  one record would need a new snapshot, whose record would need another one a retention later,
  for ever. So then the floor stops at S and the record stays online.

The floor therefore never passes a snapshot, and ``archive()`` never refuses.

Concurrency: a duplicate run (two beats, a redelivered message) is a no-op. Each group is
handled in one transaction under a PostgreSQL advisory lock of its own, taken with *try*: a
second run skips a group another run is working on, and a run that comes after reads the
raised floor and finds nothing left to do. ``archive()`` itself holds the group lock, so
writers are never interleaved with the move.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Max, Min

from .archive import archive
from .head import authority_now
from .models import Event, GroupLog, Snapshot
from .snapshots import ChainBroken, take_as_authority

logger = logging.getLogger(__name__)

# The class half of the advisory lock key (ASCII "MWPR"), so it collides with no other user
# of advisory locks; the object half is the hash of the group id.
_ADVISORY_CLASS = 0x4D575052


def _try_group_lock(group_id: str) -> bool:
    """Try to take this group's retention lock until the end of the transaction.

    On SQLite the (IMMEDIATE) transaction already holds the database's write lock, so two runs
    are serialised anyway and the second sees the first's floor.
    """
    if connection.vendor != "postgresql":
        return True
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_try_advisory_xact_lock(%s, hashtext(%s))", [_ADVISORY_CLASS, group_id]
        )
        return bool(cursor.fetchone()[0])


def archivable_through(group_id: str, *, cutoff: datetime, head: int, keep_events: int) -> int:
    """The last sequence of the longest online prefix recorded before ``cutoff``, at most
    ``head − keep_events`` (the target; may be at or below the floor)."""
    first_young = Event.objects.filter(group_id=group_id, recorded_at__gte=cutoff).aggregate(
        first=Min("sequence")
    )["first"]
    through = head if first_young is None else min(head, first_young - 1)
    return min(through, head - keep_events)


def archive_group(group_id: str, *, cutoff: datetime, keep_events: int = 0) -> int | None:
    """Archive the events of ``group_id`` recorded before ``cutoff``; the new floor, or
    ``None`` when nothing moved (nothing due, or another run holds the group)."""
    with transaction.atomic():
        if not _try_group_lock(group_id):
            return None
        floor, head = GroupLog.objects.values_list("archived_through", "head_sequence").get(
            group_id=group_id
        )
        through = archivable_through(group_id, cutoff=cutoff, head=head, keep_events=keep_events)
        if through <= floor:
            return None
        latest = Snapshot.objects.filter(group_id=group_id).aggregate(last=Max("sequence"))["last"]
        if latest is not None and through == latest + 1:
            # Only the latest snapshot's own snapshot.created is old beyond it: stop at S.
            through = latest
            if through <= floor:
                return None
        elif latest is None or latest < through:
            take_as_authority(group_id)
        return archive(group_id, through)


def retention_cutoff(retention_s: float) -> datetime:
    """Events recorded before this moment (database clock minus the retention) are old."""
    return authority_now() - timedelta(seconds=retention_s)


def candidate_groups(cutoff: datetime) -> list[str]:
    """Groups with at least one online event recorded before ``cutoff``."""
    return list(
        Event.objects.filter(recorded_at__lt=cutoff)
        .order_by("group_id")
        .values_list("group_id", flat=True)
        .distinct()
    )


def archive_due_groups(
    retention_s: float | None = None, keep_events: int | None = None
) -> dict[str, int]:
    """Archive every group's events older than the retention; ``{group: new floor}`` of the
    groups whose floor moved. A retention of 0 turns archiving off (nothing is read).

    Defaults: ``MWP_ARCHIVE_RETENTION_S`` and ``MWP_ARCHIVE_KEEP_EVENTS``. A group whose log
    does not chain gets no snapshot signed over it and is not archived; the other groups
    still are, and then :class:`ChainBroken` names the broken ones, so the task fails loudly
    (like ``snapshot_groups``) without one bad group holding every other group back.
    """
    retention = settings.MWP_ARCHIVE_RETENTION_S if retention_s is None else retention_s
    keep = settings.MWP_ARCHIVE_KEEP_EVENTS if keep_events is None else keep_events
    if retention <= 0:
        return {}
    cutoff = retention_cutoff(retention)
    moved: dict[str, int] = {}
    broken: list[str] = []
    for group_id in candidate_groups(cutoff):
        try:
            floor = archive_group(group_id, cutoff=cutoff, keep_events=keep)
        except ChainBroken:
            logger.exception("not archiving %s: its log does not chain", group_id)
            broken.append(group_id)
            continue
        if floor is not None:
            logger.info("archived %s through %d (older than %g s)", group_id, floor, retention)
            moved[group_id] = floor
    if broken:
        raise ChainBroken(f"not archived, the log does not chain: {', '.join(broken)}")
    return moved
