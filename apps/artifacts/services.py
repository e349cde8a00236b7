"""Writes of the artifact store: record a verified upload, record a corruption.

Both run in a worker thread of the HTTP handler (``apps.artifacts.asgi``) and may be called
by any other code that stores bytes (:func:`artifact_store` for bytes already in hand).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from missionweave.protocol.errors import ErrorCode, ProtocolError

from .models import Blob, CorruptionReport, Upload
from .storage import CHUNK_BYTES, Spool, Storage, configured_storage

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Stored:
    digest: str
    size: int
    #: ``False`` when the blob was already stored (PUT answers 200 rather than 201)
    created: bool


def hash_mismatch(expected: str, actual: str) -> ProtocolError:
    """wire.md §4: bytes that do not hash to the digest they were sent under are not kept."""
    return ProtocolError(
        ErrorCode.ARTIFACT_HASH_MISMATCH,
        "the bytes do not hash to the digest in the path",
        requirement="R13.1-01",
        details={"expected": expected, "actual": actual},
    )


def too_large(limit: int) -> ProtocolError:
    return ProtocolError(
        ErrorCode.TOO_LARGE,
        f"an artifact is at most {limit} bytes",
        requirement="wire§1",
        details={"limit": limit},
    )


def _lock_or_create_blob(digest: str, size: int) -> tuple[Blob, bool]:
    """The blob row, locked until the transaction ends; created if there was none."""
    blob = Blob.objects.select_for_update().filter(pk=digest).first()
    if blob is not None:
        return blob, False
    try:
        with transaction.atomic():
            return Blob.objects.create(digest=digest, size=size), True
    except IntegrityError:
        # A concurrent upload of the same digest inserted it first (and has committed:
        # the unique index made this insert wait for it).
        return Blob.objects.select_for_update().get(pk=digest), False


def upload_record(*, storage: Storage, spool: Spool, digest: str, principal: str) -> Stored:
    """Store a finished ``spool`` verified to hash to ``digest`` and record who uploaded it.

    R13.1-01: the object is written under its digest only; R13.1-02: outside every log. The
    object is committed first, outside any transaction (an S3 upload takes seconds), then
    the blob row is locked and the object's presence checked again: garbage collection
    deletes an object only while holding that lock, so an object it removed in between is
    committed again here and a 200 never stands for bytes that are gone. An upload of the
    right bytes also repairs a blob found corrupted (R13.1-05) and resolves its report.
    """
    storage.commit(spool, digest)
    now = timezone.now()
    with transaction.atomic():
        blob, created = _lock_or_create_blob(digest, spool.size)
        if not created and not storage.exists(digest):
            storage.commit(spool, digest)
        Upload.objects.update_or_create(
            blob=blob, principal=principal, defaults={"uploaded_at": now}
        )
        if blob.corrupted_at is not None:
            Blob.objects.filter(pk=digest).update(corrupted_at=None, size=spool.size)
            repaired = CorruptionReport.objects.filter(
                digest=digest, resolved_at__isnull=True
            ).update(resolved_at=now)
            if repaired:
                logger.warning("artifact %s repaired by an upload of %s", digest, principal)
    return Stored(digest=digest, size=spool.size, created=created)


def artifact_store(
    *,
    principal: str,
    digest: str,
    chunks: Iterable[bytes],
    storage: Storage | None = None,
    max_bytes: int | None = None,
) -> Stored:
    """Store bytes already in hand (tests, seeding, in-process callers), with the same
    checks as ``PUT /api/v1/artifacts/{digest}``: ``TOO_LARGE`` past ``max_bytes``,
    ``ARTIFACT_HASH_MISMATCH`` when they do not hash to ``digest``; nothing is kept then."""
    storage = storage or configured_storage()
    spool = storage.spool()
    try:
        batch: list[bytes] = []
        pending = 0
        for chunk in chunks:
            pending += len(chunk)
            batch.append(chunk)
            if max_bytes is not None and spool.size + pending > max_bytes:
                raise too_large(max_bytes)
            if pending >= CHUNK_BYTES:
                spool.write(batch)
                batch, pending = [], 0
        spool.write(batch)
        actual = spool.finish()
        if actual != digest:
            raise hash_mismatch(digest, actual)
        return upload_record(storage=storage, spool=spool, digest=digest, principal=principal)
    finally:
        spool.discard()


def corruption_record(
    *, digest: str, actual: str, storage: Storage, request: str
) -> CorruptionReport:
    """R13.1-05: a stored object no longer hashes to its digest (``actual``; "" when it is
    missing). Marks the blob, and opens a report or refreshes the open one: at most one
    open report per digest, so repeated reads of one bad object do not flood the table.
    Logged at ERROR when the report opens, at WARNING when it is seen again."""
    now = timezone.now()
    fields = {
        "location": storage.kind,
        "where": storage.location(digest)[:500],
        "actual": actual,
        "request": request[:300],
        "last_seen_at": now,
    }
    with transaction.atomic():
        Blob.objects.filter(pk=digest, corrupted_at__isnull=True).update(corrupted_at=now)
        report = (
            CorruptionReport.objects.select_for_update()
            .filter(digest=digest, resolved_at__isnull=True)
            .first()
        )
        if report is None:
            try:
                with transaction.atomic():
                    report = CorruptionReport.objects.create(
                        digest=digest, detected_at=now, **fields
                    )
            except IntegrityError:  # a concurrent read opened it first
                report = CorruptionReport.objects.select_for_update().get(
                    digest=digest, resolved_at__isnull=True
                )
            else:
                logger.error(
                    "artifact %s is corrupted at %s: found %s (%s)",
                    digest,
                    fields["where"],
                    actual or "no object",
                    request,
                )
                return report
        CorruptionReport.objects.filter(pk=report.pk).update(count=F("count") + 1, **fields)
    logger.warning("artifact %s still corrupted (%s)", digest, request)
    return report
