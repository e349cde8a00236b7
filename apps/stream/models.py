"""Durable ACK cursors of the websocket stream (wire.md §7, R16-06..R16-08, MWP-WRK-030)."""

from __future__ import annotations

from typing import ClassVar

from django.db import models


class Cursor(models.Model):
    """A principal's acknowledged position in one group: the highest contiguous sequence it
    reports as durably processed (R16-06), as last sent in an ``ACK`` frame (R16-07).

    This is delivery bookkeeping, not a projection of the log: it is written by the stream's
    ``ACK`` handler (``apps.stream.cursors.acknowledge``), never by the write path, is not
    rebuilt from events, and no event records it. It only ever moves forward (a conditional
    conditional upsert), never past the group's head, and acknowledging never deletes or
    trims the group's history (R16-08): it only tells admins who is behind and by how much.
    """

    principal = models.CharField(max_length=160)
    group = models.ForeignKey(
        "registry.Group", on_delete=models.PROTECT, related_name="cursors", db_index=False
    )
    sequence = models.PositiveBigIntegerField(default=0)
    updated_at = models.DateTimeField()

    class Meta:
        #: group first (issue 15 §6, docs/deploy.md); still the conflict target of the
        #: cursor upsert (``ON CONFLICT (principal, group_id)`` infers it by its column set)
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["group", "principal"], name="cursor_once")
        ]

    def __str__(self) -> str:
        return f"{self.principal}@{self.group_id}:{self.sequence}"
