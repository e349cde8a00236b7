"""The event log (wire.md §6): one table of events, one head row per group, command records.

The sequence comes from the head row, locked for the length of the appending transaction,
never from a database sequence: a sequence object hands out numbers that a rolled-back
transaction never uses, which would leave gaps, and commit order would not be sequence order.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from django.db import models

from missionweave.protocol.canonical import ZERO_HASH


class GroupLog(models.Model):
    """The head of a group's log: the last sequence and hash. Locking it serialises appends."""

    group = models.OneToOneField(
        "registry.Group", primary_key=True, on_delete=models.PROTECT, related_name="log"
    )
    head_sequence = models.PositiveBigIntegerField(default=0)
    head_hash = models.CharField(max_length=71, default=ZERO_HASH)
    #: the online floor (R16-08, R16-10): events 1..archived_through live in
    #: :class:`ArchivedEvent`, the online log :class:`Event` holds the later ones
    archived_through = models.PositiveBigIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.group_id}@{self.head_sequence}"


class EventColumns(models.Model):
    """The columns of a stored event, shared by the online log and the archive (byte for byte
    the same rows: archiving moves history, never rewrites it)."""

    sequence = models.PositiveBigIntegerField()
    #: unique per group (the ``…event_id_once_per_group`` constraints, issue 15 §6): ``evt_``
    #: and a random UUID, so unique across groups by construction, but a log sharded by group
    #: can enforce only a key that holds the group (docs/deploy.md)
    event_id = models.CharField(max_length=64)
    type = models.CharField(max_length=100)
    command_id = models.CharField(max_length=128)
    actor = models.CharField(max_length=160)
    recorded_at = models.DateTimeField()
    hash = models.CharField(max_length=71)
    #: the wire.md §6 event exactly as hashed and served (canonical JSON, ``hash`` included)
    document = models.TextField()

    class Meta:
        abstract = True

    def as_wire(self) -> dict[str, Any]:
        return json.loads(self.document)


class Event(EventColumns):
    """An appended event. Immutable: a database trigger refuses UPDATE and DELETE."""

    group = models.ForeignKey(
        "registry.Group", on_delete=models.PROTECT, related_name="events", db_index=False
    )

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["group", "sequence"], name="gapless_sequence_slot"),
            models.UniqueConstraint(fields=["group", "event_id"], name="event_id_once_per_group"),
        ]
        #: a group's events of a few types, newest first, without reading the rest of its log
        #: (the memberships screen's audit list, issue 13)
        indexes: ClassVar = [
            models.Index(fields=["group", "type", "sequence"], name="event_group_type")
        ]

    def __str__(self) -> str:
        return f"{self.group_id}#{self.sequence} {self.type}"


class ArchivedEvent(EventColumns):
    """An event moved out of the online log by ``POST /groups/{g}/archive`` (R16-08).

    Same columns and content as :class:`Event`, byte for byte: archiving moves history, it
    never deletes or rewrites it. Immutable like the online log (a trigger refuses UPDATE
    and DELETE), and the online log's trigger lets a row go only once its identical copy is
    here (migration ``0005_archive``).
    """

    group = models.ForeignKey(
        "registry.Group", on_delete=models.PROTECT, related_name="archived_events", db_index=False
    )

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["group", "sequence"], name="archived_sequence_slot"),
            models.UniqueConstraint(
                fields=["group", "event_id"], name="archived_event_id_once_per_group"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.group_id}#{self.sequence} {self.type} (archived)"


class CommandRecord(models.Model):
    """An accepted command and its response, for idempotent replays (wire.md §3 step 5)."""

    group = models.ForeignKey(
        "registry.Group", on_delete=models.PROTECT, related_name="commands", db_index=False
    )
    actor = models.CharField(max_length=160)
    command_id = models.CharField(max_length=128)
    content_digest = models.CharField(max_length=71)
    status = models.PositiveSmallIntegerField()
    response = models.JSONField()
    accepted_at = models.DateTimeField()

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(
                fields=["group", "actor", "command_id"], name="command_id_once_per_actor"
            )
        ]

    def __str__(self) -> str:
        return f"{self.group_id}:{self.actor}:{self.command_id}"


class PendingFollowUp(models.Model):
    """A cross-group follow-up not yet carried to its group (an outbox, R10.4-05).

    Written in the same transaction as the command that produced it, deleted once the other
    group has it (or has refused it and the compensation ran). The write path runs it right
    after commit; a Celery beat task resends whatever a crash left here. Its command id is
    deterministic, so a resend is an idempotent replay.

    Keyed by its source group like that group's own rows (on PostgreSQL its primary key is
    ``(source_group, id)``, migration ``0007_group_leading_keys``): it is written in the
    source group's transaction.
    """

    source_group = models.CharField(max_length=128)
    source_command = models.CharField(max_length=128)
    target_group = models.CharField(max_length=128)
    follow_up = models.JSONField()
    created_at = models.DateTimeField()
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True, default="")

    class Meta:
        indexes: ClassVar = [models.Index(fields=["created_at"])]

    def __str__(self) -> str:
        return f"{self.source_group}:{self.source_command} → {self.target_group}"


class Snapshot(models.Model):
    """A signed snapshot of a group's projections after event ``sequence`` (wire.md §7).

    ``document`` is the canonical JSON exactly as signed and served (R16-10, R16-11), so
    ``GET /snapshots/{sequence}`` answers it byte for byte.
    """

    group = models.ForeignKey(
        "registry.Group", on_delete=models.PROTECT, related_name="snapshots", db_index=False
    )
    sequence = models.PositiveBigIntegerField()
    digest = models.CharField(max_length=71)
    document = models.TextField()
    created_at = models.DateTimeField()

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["group", "sequence"], name="one_snapshot_per_sequence")
        ]

    def __str__(self) -> str:
        return f"{self.group_id}@{self.sequence} {self.digest}"


class SignedHead(models.Model):
    """A head the authority signed (wire.md §4; R16-11; issue 33 §2), kept as served.

    At most one per sequence of a group, and each names the one signed before it
    (``previous_digest``, empty for the first), at most once: the authority's heads form one
    chain, and a second head for a sequence, or a second successor of a head, can only come
    from a history that was rewritten (:mod:`missionweave.protocol.heads`). Append-only: a
    trigger refuses UPDATE and DELETE (migration ``0011_signed_heads``).
    """

    group = models.ForeignKey(
        "registry.Group", on_delete=models.PROTECT, related_name="signed_heads", db_index=False
    )
    sequence = models.PositiveBigIntegerField()
    hash = models.CharField(max_length=71)
    previous_digest = models.CharField(max_length=71, blank=True, default="")
    #: the canonical JSON exactly as signed and served
    document = models.TextField()

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(
                fields=["group", "sequence"], name="one_signed_head_per_sequence"
            ),
            models.UniqueConstraint(
                fields=["group", "previous_digest"], name="one_successor_per_signed_head"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.group_id}@{self.sequence} signed"
