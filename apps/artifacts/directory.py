"""What the write path asks the store, installed into the ledger (``apps.ledger.artifacts``)
by this app's ``ready()``.

:func:`nameable`: which digests a command's sender may name in a group (wire.md §9, "A
digest is not a key"), the rule applied to what :func:`routes` found; one it may not name
loads as nothing, exactly like one never stored, so the refusal reveals nothing.
:func:`read_verified`: the bytes of a small stored object, verified against its digest
(R13.1-05), for the checks that read an output (R13.2-03).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import NamedTuple

from django.db import connection
from django.db.models import Exists, OuterRef

from missionweave.protocol.artifacts.naming import nameable_digests
from missionweave.protocol.artifacts.records import StoredArtifact
from missionweave.protocol.context import RECEIVED

from .models import Blob, GroupArtifact, Upload
from .retrieval import Corrupted, open_verified
from .services import corruption_record
from .storage import configured_storage


class Found(NamedTuple):
    """What the store says of one stored digest a command names, for its sender in a group:
    its size and the three routes of ``naming.nameable_digests`` (wire.md §9)."""

    size: int
    cited: bool
    uploaded: bool
    forwarded: bool


def nameable(group_id: str, actor: str, digests: Collection[str]) -> dict[str, StoredArtifact]:
    """``{digest: StoredArtifact}`` for the stored ``digests`` that ``actor`` may name in
    ``group_id`` (wire.md §9, "A digest is not a key"): the store answers, per digest, whether
    this group's log cites it, whether ``actor`` uploaded it and whether it arrived here by
    ``context.forward`` (R13.3-05, R13.3-07; :func:`routes`), and the protocol's rule
    (``naming.nameable_digests``) decides. The authority has no route of its own: what it
    names (a submission's artifacts, a contract's inputs) this log already cites."""
    found = routes(group_id, actor, digests)
    allowed = nameable_digests(
        found,
        cited={digest for digest, it in found.items() if it.cited},
        uploaded={digest for digest, it in found.items() if it.uploaded},
        forwarded={digest for digest, it in found.items() if it.forwarded},
    )
    return {digest: StoredArtifact(digest=digest, size=found[digest].size) for digest in allowed}


def routes(group_id: str, actor: str, digests: Collection[str]) -> dict[str, Found]:
    """What the store says of each of ``digests`` that is stored (wire.md §9); the others
    are left out.

    One query, whatever the number of digests: the blob rows by primary key, each route an
    ``EXISTS`` held to the named digests — on the ``(group, digest)`` key of
    ``GroupArtifact`` and the ``blob`` key of ``Upload`` — never a pass over a group's
    citations or a principal's uploads. The citations are read under the group's head lock,
    which every write of them holds. A citation staged by an earlier command of the same run
    is not seen yet, which changes no answer: the commands of a run are one sender's (a
    client's token names one principal, wire.md §3; the authority's are all its own), and the
    route that let it name the digest then still holds.

    Inside a transaction (the write path's) the blob rows are locked against garbage
    collection until it commits: collection skips locked rows and re-checks for a reference
    before deleting, so a digest this command is about to reference cannot be deleted
    between this check and the command's projection row (R13.1-02: what a log references
    stays stored).
    """
    wanted = {digest for digest in digests if isinstance(digest, str)}
    if not wanted:
        return {}
    # Each subquery is held to the named digests too, so whichever plan PostgreSQL picks (a
    # lookup per blob row, or one hashed pass) reads only their rows.
    here = GroupArtifact.objects.filter(group_id=group_id, digest__in=wanted, digest=OuterRef("pk"))
    sent = Upload.objects.filter(principal=actor, blob_id__in=wanted, blob=OuterRef("pk"))
    blobs = Blob.objects.filter(pk__in=wanted).annotate(
        cited=Exists(here),
        uploaded=Exists(sent),
        # arrived by a forward: its first citation here is the context.received the forward
        # left (a record keeps its latest MAX_CITATIONS; a digest cited more often than that
        # answers by ``cited`` alone, as every forwarded digest also does)
        forwarded=Exists(here.filter(data__citations__0__event=RECEIVED)),
    )
    if connection.in_atomic_block:
        # FOR NO KEY UPDATE: blocks the collector's FOR UPDATE, not readers of the rows.
        # In digest order, so two commands naming the same digests cannot deadlock.
        blobs = blobs.order_by("digest").select_for_update(no_key=True, of=("self",))
    rows = blobs.values_list("digest", "size", "cited", "uploaded", "forwarded")
    return {digest: Found(*answers) for digest, *answers in rows}


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
