"""What the store knows about its objects, who uploaded them, and which logs reference them.

The bytes themselves are never in the database (R13.1-02): a :class:`Blob` row says an object
with this digest is stored; the storage backend (``apps.artifacts.storage``) holds it under
that digest and nothing else (R13.1-01, R13.1-06: a location is never identity).
"""

from __future__ import annotations

from typing import ClassVar

from django.db import models
from django.utils import timezone

from apps.ledger.projections import ModelProjection, ProjectionJSONDecoder
from missionweave.protocol.artifacts.records import ArtifactRecord

#: ``sha256:`` + 64 hex digits (wire.md §1)
DIGEST_LENGTH = 71


class Blob(models.Model):
    """One stored object, keyed by the digest of its bytes (R13.1-01)."""

    digest = models.CharField(primary_key=True, max_length=DIGEST_LENGTH)
    size = models.PositiveBigIntegerField()
    stored_at = models.DateTimeField(default=timezone.now)
    #: set when a read found the stored bytes no longer hash to ``digest`` (R13.1-05); cleared
    #: when an upload of the right bytes replaces them
    corrupted_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return self.digest


class Upload(models.Model):
    """Who uploaded a blob: wire.md §4's "its uploader" may read it. A digest uploaded by
    several principals has one row each; ``uploaded_at`` is the latest upload of that
    principal, from which garbage collection counts a blob's age."""

    blob = models.ForeignKey(Blob, on_delete=models.CASCADE, related_name="uploads")
    principal = models.CharField(max_length=160)
    uploaded_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["blob", "principal"], name="upload_once_per_principal")
        ]
        indexes: ClassVar = [models.Index(fields=["principal"])]

    def __str__(self) -> str:
        return f"{self.blob_id} by {self.principal}"


class GroupArtifact(models.Model):
    """Projection of one group's log: this digest is referenced there (kind ``artifact``).

    Written only by the ledger's write path and rebuilds, through the registered projection;
    its existence is what lets a member of the group read the bytes (wire.md §4) and what
    keeps garbage collection away from them.
    """

    group = models.ForeignKey(
        "registry.Group", on_delete=models.PROTECT, related_name="+", db_index=False
    )
    digest = models.CharField(max_length=DIGEST_LENGTH)
    data = models.JSONField(decoder=ProjectionJSONDecoder)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(fields=["group", "digest"], name="artifact_once_per_group")
        ]
        indexes: ClassVar = [models.Index(fields=["digest"])]

    def __str__(self) -> str:
        return f"{self.digest} in {self.group_id}"

    projection: ClassVar[ModelProjection]


GroupArtifact.projection = ModelProjection(
    model=GroupArtifact,
    id_field="digest",
    to_state=lambda row: ArtifactRecord.from_dict(row.data),
    to_fields=lambda state: {"data": state.as_dict()},
)


class CorruptionReport(models.Model):
    """A stored object found not to hash to its digest, or missing (R13.1-05).

    At most one open report per digest: a detection while one is open refreshes
    ``last_seen_at`` and ``count`` instead of adding a row, so a popular corrupted artifact does
    not flood the table. An upload of the right bytes resolves it.
    """

    class Location(models.TextChoices):
        FILESYSTEM = "fs", "filesystem"
        S3 = "s3", "S3"

    digest = models.CharField(max_length=DIGEST_LENGTH, db_index=True)
    location = models.CharField(max_length=8, choices=Location.choices)
    #: where exactly (a path, an s3:// URL): for the person repairing it, never identity
    where = models.CharField(max_length=500, blank=True)
    #: the digest of what was read, or "" when the object was missing or could not be read
    #: whole (a range that came up short)
    actual = models.CharField(max_length=DIGEST_LENGTH, blank=True)
    #: the request that found it, e.g. ``GET by agent:w1``
    request = models.CharField(max_length=300, blank=True)
    detected_at = models.DateTimeField(default=timezone.now)
    last_seen_at = models.DateTimeField(default=timezone.now)
    count = models.PositiveIntegerField(default=1)
    resolved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints: ClassVar = [
            models.UniqueConstraint(
                fields=["digest"],
                condition=models.Q(resolved_at__isnull=True),
                name="one_open_corruption_report_per_digest",
            )
        ]

    def __str__(self) -> str:
        return f"{self.digest} corrupted ({self.location})"

    @property
    def expected(self) -> str:
        return self.digest
