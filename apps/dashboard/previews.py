"""What a reviewer sees of an artifact: bytes the server verified, shown as what they are.

:func:`preview_of` reads the object once, hashing every byte against the digest while it
keeps the first :data:`PREVIEW_BYTES` (R13.1-05: nothing is shown before the whole object is
known to match). An object that does not match, or that the store has lost, is ``corrupted``:
reported like any corrupted read, shown as a red badge and never as bytes. The media type is
the one the group's manifest records (R13.1-03); without one (or with the authority's
``application/octet-stream``, which only says nobody named a type) the bytes are sniffed,
conservatively (``preview_formats``). :func:`artifact_page` adds what the group's log says
about the artifact (R13.1-04): its manifest, sources, derived artifacts and citations.

Who may look: an active member of the group whose log cites the digest (wire.md §4, the
``GroupArtifact`` row); for anyone else the artifact does not exist here
(:class:`ArtifactNotFound`), exactly as for a digest never cited — a digest is not a key
(wire.md §9).
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from typing import Any

from django.db.models import Exists, OuterRef, Subquery
from django.utils.safestring import mark_safe

from apps.artifacts.models import Blob, GroupArtifact
from apps.artifacts.retrieval import Corrupted
from apps.artifacts.services import corruption_record
from apps.artifacts.storage import Storage, configured_storage
from apps.registry.models import Membership
from missionweave.protocol.artifacts.manifests import DEFAULT_MEDIA_TYPE
from missionweave.protocol.artifacts.records import ArtifactRecord
from missionweave.protocol.canonical import DIGEST_PREFIX, is_digest
from missionweave.protocol.identifiers import AUTHORITY

from . import preview_formats as formats
from .preview_formats import Diff, Table

logger = logging.getLogger(__name__)

#: a preview shows at most this much of an object; the rest is one download away
PREVIEW_BYTES = 512 * 1024
#: a diff compares at most this much of each side
DIFF_BYTES = 256 * 1024

TEXT = "text"
MARKDOWN = "markdown"
JSON = "json"
CSV = "csv"
IMAGE = "image"
BINARY = "binary"
CORRUPTED = "corrupted"
MISSING = "missing"
UNAVAILABLE = "unavailable"

_MARKDOWN_TYPES = frozenset({"text/markdown", "text/x-markdown"})
_CSV_DELIMITERS = {"text/csv": ",", "text/tab-separated-values": "\t"}


class ArtifactNotFound(LookupError):
    """Not cited in this group's log, or the principal is not an active member of it: the
    same answer for both (wire.md §4)."""


@dataclass(frozen=True, slots=True)
class Preview:
    """One artifact as a page shows it (``dashboard/partials/artifact-preview.html``)."""

    group: str
    digest: str
    #: text, markdown, json, csv, image, binary — or corrupted, missing, unavailable
    kind: str
    #: the stored size (``None`` when not stored)
    size: int | None = None
    #: the media type shown: the manifest's, or what sniffing found
    media_type: str = ""
    #: whether ``media_type`` is the manifest's (else sniffed from the bytes)
    declared: bool = False
    #: the manifest's producer (``agent:…``/``user:…``) and its version
    producer: str | None = None
    producer_version: str | None = None
    #: whose key signed the manifest: the producer or ``authority``; ``None`` without one
    signed_by: str | None = None
    #: what is shown for text, markdown-as-text and json
    text: str = ""
    #: markdown rendered: a ``SafeString`` (safe by construction:
    #: ``preview_formats.render_markdown``), "" for every other kind
    html: str = ""
    table: Table | None = None
    #: the first source and the changes from it to this artifact (R13.1-04)
    diff: Diff | None = None
    diff_source: str = ""
    #: why there is no diff although a source was asked for
    diff_note: str = ""
    #: the source was named by the caller (the page opens the diff), not taken from the manifest
    diff_asked: bool = False
    #: the preview shows the first ``shown_bytes`` of ``size``
    truncated: bool = False
    shown_bytes: int = 0
    #: why the bytes are shown the way they are (``not valid JSON: shown as text``)
    note: str = ""

    @property
    def short_digest(self) -> str:
        """``sha256:`` and the first 12 hex digits: enough to tell artifacts apart on screen."""
        return self.digest[: len(DIGEST_PREFIX) + 12]

    @property
    def verified(self) -> bool:
        return self.kind not in {CORRUPTED, MISSING, UNAVAILABLE}

    @property
    def signed_by_producer(self) -> bool:
        return self.signed_by is not None and self.signed_by != AUTHORITY

    @property
    def signed_by_authority(self) -> bool:
        return self.signed_by == AUTHORITY


@dataclass(frozen=True, slots=True)
class ArtifactPage:
    """What the artifact page shows beside the preview: the group's record (R13.1-04)."""

    preview: Preview
    record: ArtifactRecord

    @property
    def manifest(self) -> dict[str, Any] | None:
        return self.record.manifest

    @property
    def sources(self) -> list[str]:
        return list((self.record.manifest or {}).get("sources", []))

    @property
    def tool_versions(self) -> list[tuple[str, str]]:
        return sorted(((self.record.manifest or {}).get("tool_versions") or {}).items())

    @property
    def citations(self) -> list[dict[str, Any]]:
        """Newest first: the reviewer usually wants the latest use."""
        return list(reversed(self.record.citations))

    @property
    def uncounted_citations(self) -> int:
        """Citations in the log beyond those the projection keeps (``MAX_CITATIONS``)."""
        return max(0, self.record.cited - len(self.record.citations))


@dataclass(frozen=True, slots=True)
class _Cited:
    record: ArtifactRecord
    #: the stored blob's size, ``None`` when nothing is stored under the digest
    size: int | None


def _cited(group_id: str, digests: list[str], principal: str) -> dict[str, _Cited]:
    """The cited ``digests`` of ``group_id`` that ``principal`` may see (an active member),
    with the stored size of each: one query."""
    member = Membership.objects.filter(group_id=group_id, principal=principal, active=True)
    size = Blob.objects.filter(pk=OuterRef("digest")).values("size")[:1]
    rows = (
        GroupArtifact.objects.filter(group_id=group_id, digest__in=digests)
        .filter(Exists(member))
        .annotate(stored_size=Subquery(size))
    )
    return {
        row.digest: _Cited(GroupArtifact.projection.to_state(row), row.stored_size) for row in rows
    }


def _read_verified_prefix(storage: Storage, digest: str, keep: int) -> tuple[bytes, int]:
    """The first ``keep`` bytes of the object and its size, in one read that hashes every
    byte; :class:`Corrupted` when the object is missing or does not hash to ``digest``.

    One pass rather than ``retrieval.open_verified``'s two for a large object: the prefix
    kept is part of exactly the bytes hashed, so it cannot have changed in between."""
    stored = storage.open(digest)
    if stored is None:
        raise Corrupted("")
    try:
        hasher = hashlib.sha256()
        head = bytearray()
        size = 0
        for chunk in stored.chunks():
            hasher.update(chunk)
            size += len(chunk)
            if len(head) < keep:
                head += chunk[: keep - len(head)]
    finally:
        stored.close()
    actual = DIGEST_PREFIX + hasher.hexdigest()
    if actual != digest:
        raise Corrupted(actual)
    return bytes(head), size


def _read(digest: str, keep: int, principal: str) -> tuple[bytes, int]:
    storage = configured_storage()
    try:
        return _read_verified_prefix(storage, digest, keep)
    except Corrupted as found:
        corruption_record(
            digest=digest,
            actual=found.actual,
            storage=storage,
            request=f"dashboard preview by {principal}",
        )
        raise


def verified_head(digest: str, keep: int, *, principal: str) -> tuple[bytes, int]:
    """The first ``keep`` bytes of ``digest`` and its size, every byte hashed first (R13.1-05):
    for a comparison that needs the bytes rather than a preview (``resubmission_reads``).
    :class:`Corrupted` (and recorded) when they do not match, ``OSError`` when unreadable."""
    return _read(digest, keep, principal)


def _base_type(media_type: object) -> str:
    if not isinstance(media_type, str):
        return ""
    return media_type.split(";", 1)[0].strip().lower()


@dataclass(frozen=True, slots=True)
class _Shown:
    kind: str
    media_type: str
    text: str = ""
    html: str = ""
    table: Table | None = None
    note: str = ""


def _sniffed(head: bytes, complete: bool) -> _Shown:
    """No type named: an image by its magic bytes, UTF-8 text (JSON if it parses as an
    object or array), else binary. Never Markdown or CSV: those are only taken at their word."""
    image = formats.image_type(head)
    if image is not None:
        return _Shown(IMAGE, image)
    text = formats.decode_text(head, complete=complete)
    if text is None:
        return _Shown(BINARY, DEFAULT_MEDIA_TYPE)
    if complete and formats.looks_like_json(text):
        return _Shown(JSON, "application/json", text=formats.pretty_json(text) or text)
    return _Shown(TEXT, "text/plain", text=text)


def _as_text(media_type: str, head: bytes, complete: bool, note: str = "") -> _Shown:
    text = formats.decode_text(head, complete=complete)
    if text is None:
        return _Shown(BINARY, media_type, note="not UTF-8 text: shown as a download")
    return _Shown(TEXT, media_type, text=text, note=note)


def _declared(media_type: str, head: bytes, complete: bool) -> _Shown:
    """The manifest names ``media_type``: shown as that, or as text or a download when the
    bytes are not what it says."""
    if media_type in formats.IMAGE_TYPES:
        if formats.image_type(head) is None:
            return _Shown(BINARY, media_type, note=f"the bytes are not a {media_type} image")
        return _Shown(IMAGE, media_type)
    if media_type in _MARKDOWN_TYPES:
        shown = _as_text(media_type, head, complete)
        if shown.kind != TEXT:
            return shown
        if len(head) > formats.MARKDOWN_BYTES:
            size = formats.MARKDOWN_BYTES // 1024
            return _Shown(TEXT, media_type, text=shown.text, note=f"over {size} KiB: not rendered")
        html = mark_safe(formats.render_markdown(shown.text))  # noqa: S308 - safe by construction
        return _Shown(MARKDOWN, media_type, html=html)
    if media_type in _CSV_DELIMITERS:
        shown = _as_text(media_type, head, complete)
        if shown.kind != TEXT:
            return shown
        delimiter = _CSV_DELIMITERS[media_type]
        table = formats.csv_table(shown.text, complete=complete, delimiter=delimiter)
        if table is None:
            return _Shown(TEXT, media_type, text=shown.text, note="not valid CSV: shown as text")
        return _Shown(CSV, media_type, table=table)
    if formats.is_json_type(media_type):
        shown = _as_text(media_type, head, complete)
        if shown.kind != TEXT:
            return shown
        if not complete:
            return _Shown(TEXT, media_type, text=shown.text, note="too large to format")
        pretty = formats.pretty_json(shown.text)
        if pretty is None:
            return _Shown(TEXT, media_type, text=shown.text, note="not valid JSON: shown as text")
        return _Shown(JSON, media_type, text=pretty)
    if formats.is_text_type(media_type):
        return _as_text(media_type, head, complete)
    return _Shown(BINARY, media_type)


def _shown(manifest: dict[str, Any] | None, head: bytes, complete: bool) -> tuple[_Shown, bool]:
    declared = _base_type((manifest or {}).get("media_type"))
    if declared in formats.UNNAMED_TYPES:
        return _sniffed(head, complete), False
    return _declared(declared, head, complete), True


def _source_text(group_id: str, source: str, principal: str) -> tuple[str | None, str]:
    """The text of ``source`` for a diff, or ``None`` and why not."""
    cited = _cited(group_id, [source], principal).get(source)
    if cited is None:
        return None, "the source is not cited in this group's log"
    if cited.size is None:
        return None, "the source's bytes are not stored"
    if cited.size > DIFF_BYTES:
        return None, f"the source is over {DIFF_BYTES // 1024} KiB: too large to compare here"
    try:
        data, size = _read(source, DIFF_BYTES, principal)
    except Corrupted:
        return None, "the source is corrupted: not compared"
    except OSError:
        logger.exception("artifact storage unavailable for the source %s", source)
        return None, "the source could not be read just now"
    text = formats.decode_text(data, complete=size <= DIFF_BYTES)
    if text is None:
        return None, "the source is not text"
    return text, ""


def _diff(
    group_id: str, *, shown: _Shown, head: bytes, size: int, source: str, principal: str
) -> tuple[Diff | None, str]:
    if size > DIFF_BYTES:
        return None, f"over {DIFF_BYTES // 1024} KiB: too large to compare here"
    text = formats.decode_text(head, complete=True)
    if shown.kind in {IMAGE, BINARY} or text is None:
        return None, "this artifact is not text"
    old, why = _source_text(group_id, source, principal)
    if old is None:
        return None, why
    diff = formats.unified_diff(old, text)
    if diff is None:
        return None, f"over {formats.DIFF_LINES} lines: too long to compare here"
    return diff, ""


def _preview(group_id: str, cited: _Cited, principal: str, source: str | None) -> Preview:
    record = cited.record
    manifest = record.manifest or {}
    producer = manifest.get("producer") or {}
    badge: dict[str, Any] = {
        "group": group_id,
        "digest": record.digest,
        "size": cited.size,
        "producer": producer.get("agent"),
        "producer_version": producer.get("version"),
        "signed_by": record.signed_by,
        "media_type": _base_type(manifest.get("media_type")),
        "declared": bool(manifest),
    }
    if cited.size is None:
        return Preview(kind=MISSING, **badge)
    try:
        head, size = _read(record.digest, PREVIEW_BYTES, principal)
    except Corrupted:
        return Preview(kind=CORRUPTED, **badge)
    except OSError:
        logger.exception("artifact storage unavailable for a preview of %s", record.digest)
        return Preview(kind=UNAVAILABLE, **badge)
    complete = size <= PREVIEW_BYTES
    shown, declared = _shown(record.manifest, head, complete)
    diff: Diff | None = None
    diff_note = ""
    # The manifest's first source is compared only where a comparison can mean something;
    # a source asked for by name is always tried, and the page says why when it cannot be.
    diff_source = source or next(iter(manifest.get("sources") or ()), "")
    if source is None and shown.kind in {IMAGE, BINARY}:
        diff_source = ""
    if diff_source and is_digest(diff_source):
        diff, diff_note = _diff(
            group_id, shown=shown, head=head, size=size, source=diff_source, principal=principal
        )
    badge.update(size=size, media_type=shown.media_type, declared=declared)
    return Preview(
        kind=shown.kind,
        text=shown.text,
        html=shown.html,
        table=shown.table,
        note=shown.note,
        diff=diff,
        diff_source=diff_source if is_digest(diff_source) else "",
        diff_note=diff_note,
        diff_asked=source is not None,
        truncated=not complete and shown.kind not in {IMAGE, BINARY},
        shown_bytes=min(size, PREVIEW_BYTES),
        **badge,
    )


def preview_of(group_id: str, digest: str, *, principal: str, source: str | None = None) -> Preview:
    """``digest`` as ``group_id``'s page shows it to ``principal``, verified (R13.1-05).

    ``source`` names the artifact to diff against; by default the manifest's first source.
    :class:`ArtifactNotFound` when ``principal`` is not an active member of ``group_id`` or its
    log does not cite ``digest`` (wire.md §4)."""
    cited = _cited(group_id, [digest], principal).get(digest) if is_digest(digest) else None
    if cited is None:
        raise ArtifactNotFound(digest)
    return _preview(group_id, cited, principal, source)


def artifact_page(group_id: str, digest: str, *, principal: str) -> ArtifactPage:
    """The artifact page's content: the preview and the group's record of the artifact."""
    cited = _cited(group_id, [digest], principal).get(digest) if is_digest(digest) else None
    if cited is None:
        raise ArtifactNotFound(digest)
    return ArtifactPage(_preview(group_id, cited, principal, None), cited.record)


def downloadable(group_id: str, digest: str, *, principal: str) -> str:
    """The media type the manifest declares for ``digest`` ("" without one), when
    ``principal`` may download it from ``group_id``'s pages and bytes are stored under it;
    :class:`ArtifactNotFound` otherwise (wire.md §4). One query; the bytes are not read."""
    cited = _cited(group_id, [digest], principal).get(digest) if is_digest(digest) else None
    if cited is None or cited.size is None:
        raise ArtifactNotFound(digest)
    return _base_type((cited.record.manifest or {}).get("media_type"))
