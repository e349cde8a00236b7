"""What the write path asks the store, installed into the ledger (``apps.ledger.artifacts``)
by this app's ``ready()``.

:func:`nameable`: which digests a command's sender may name (wire.md §9, "A digest is not a
key"); one it may not name loads as nothing, exactly like one never stored, so the refusal
reveals nothing. :func:`read_verified`: the bytes of a small stored object, verified against
its digest (R13.1-05), for the checks that read an output (R13.2-03).
"""

from __future__ import annotations

from collections.abc import Collection

from django.db import connection
from django.db.models import Exists, OuterRef, Q

from apps.registry.models import Membership
from missionweave.protocol.artifacts.records import StoredArtifact
from missionweave.protocol.identifiers import AUTHORITY

from .access import may_read
from .models import Blob, Upload
from .retrieval import Corrupted, open_verified
from .services import corruption_record
from .storage import configured_storage


def nameable(group_id: str, actor: str, digests: Collection[str]) -> dict[str, StoredArtifact]:
    """``{digest: StoredArtifact}`` for the stored ``digests`` that ``actor`` may name in
    ``group_id``: all of them for the authority; otherwise those ``actor`` may read
    (wire.md §4) and those uploaded by a current member of ``group_id``. One query.

    Inside a transaction (the write path's) the blob rows are locked against garbage
    collection until it commits: collection skips locked rows and re-checks for a reference
    before deleting, so a digest this command is about to reference cannot be deleted
    between this check and the command's projection row (R13.1-02: what a log references
    stays stored).
    """
    wanted = {digest for digest in digests if isinstance(digest, str)}
    if not wanted:
        return {}
    blobs = Blob.objects.filter(pk__in=wanted)
    if actor != AUTHORITY:
        uploaded_by_member = Upload.objects.filter(
            blob=OuterRef("pk"),
            principal__in=Membership.objects.filter(group_id=group_id, active=True).values(
                "principal"
            ),
        )
        blobs = blobs.filter(may_read(actor) | Q(Exists(uploaded_by_member)))
    if connection.in_atomic_block:
        # FOR NO KEY UPDATE: blocks the collector's FOR UPDATE, not readers of the rows.
        # In digest order, so two commands naming the same digests cannot deadlock.
        blobs = blobs.order_by("digest").select_for_update(no_key=True, of=("self",))
    return {
        digest: StoredArtifact(digest=digest, size=size)
        for digest, size in blobs.values_list("digest", "size")
    }


def read_verified(digest: str, max_bytes: int) -> bytes | None:
    """The bytes stored under ``digest``, verified against it (R13.1-05); ``None`` when there
    is no blob or object, when they are larger than ``max_bytes``, or when they no longer
    match (reported like any corrupted read)."""
    blob = Blob.objects.filter(pk=digest).values_list("size", flat=True).first()
    if blob is None or blob > max_bytes:
        return None
    storage = configured_storage()
    try:
        verified = open_verified(storage, digest, in_memory_bytes=max_bytes)
    except Corrupted as found:
        corruption_record(
            digest=digest, actual=found.actual, storage=storage, request="read by the write path"
        )
        return None
    try:
        return verified.data
    finally:
        verified.close()
