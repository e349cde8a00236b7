"""Garbage collection of blobs nothing references (R13.1-02: the bytes live outside the log,
so the log cannot keep them alive by itself).

A candidate is a blob stored, and uploaded by nobody, for ``older_than_s`` seconds, that no
group's log references (no ``GroupArtifact`` row in any group): a referenced blob is never
deleted. A dry run (the default) only reports; ``apply`` deletes each candidate's object and
then its rows. Spools untouched for an hour (crashed or abandoned uploads) are removed too.

Each deletion re-checks its candidate under ``SELECT … FOR UPDATE SKIP LOCKED`` of the blob
row: an upload of the same digest (``services.upload_record``) and a command naming it
(``directory.nameable``) lock that row, so the collector skips a blob in use and never
deletes one a reference or an upload is being committed for.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Exists, OuterRef, QuerySet
from django.utils import timezone

from .models import Blob, GroupArtifact, Upload
from .storage import Storage, clean_spools, configured_storage

logger = logging.getLogger(__name__)

SPOOL_MAX_IDLE_S = 3600.0


@dataclass
class CollectionReport:
    applied: bool
    cutoff: datetime
    #: (digest, size) of each candidate, oldest first
    candidates: list[tuple[str, int]] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    #: spools idle for an hour (removed when applied)
    spools: int = 0

    @property
    def candidate_bytes(self) -> int:
        return sum(size for _digest, size in self.candidates)

    def as_dict(self) -> dict[str, object]:
        return {
            "applied": self.applied,
            "cutoff": self.cutoff.isoformat(),
            "candidates": len(self.candidates),
            "candidate_bytes": self.candidate_bytes,
            "deleted": len(self.deleted),
            "spools": self.spools,
        }


def _unreferenced(cutoff: datetime) -> QuerySet[Blob]:
    return (
        Blob.objects.filter(stored_at__lt=cutoff)
        .exclude(Exists(GroupArtifact.objects.filter(digest=OuterRef("pk"))))
        .exclude(Exists(Upload.objects.filter(blob=OuterRef("pk"), uploaded_at__gte=cutoff)))
    )


def _delete_one(storage: Storage, digest: str, cutoff: datetime) -> bool:
    """Delete ``digest`` if it is still a candidate and nobody holds its row; whether it was."""
    with transaction.atomic():
        blob = (
            _unreferenced(cutoff)
            .filter(pk=digest)
            .select_for_update(skip_locked=True, of=("self",))
            .first()
        )
        if blob is None:
            return False
        storage.delete(digest)
        blob.delete()  # its Upload rows go with it
    return True


def collect(
    *,
    older_than_s: float,
    apply: bool = False,
    storage: Storage | None = None,
    now: datetime | None = None,
) -> CollectionReport:
    """Find (and with ``apply``, delete) the unreferenced blobs older than ``older_than_s``."""
    storage = storage or configured_storage()
    cutoff = (now or timezone.now()) - timedelta(seconds=older_than_s)
    report = CollectionReport(applied=apply, cutoff=cutoff)
    report.candidates = list(
        _unreferenced(cutoff).order_by("stored_at", "digest").values_list("digest", "size")
    )
    if apply:
        for digest, _size in report.candidates:
            if _delete_one(storage, digest, cutoff):
                report.deleted.append(digest)
    report.spools = clean_spools(storage.spool_dir, SPOOL_MAX_IDLE_S, apply=apply)
    if report.deleted or report.spools:
        logger.info("artifact collection: %s", report.as_dict())
    return report
