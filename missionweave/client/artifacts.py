"""Artifacts on the agent's side: what an upload sends, how a download is verified, and the
manifest ``artifact.publish`` carries (wire.md §4, §9; R13.1-01, R13.1-03, R13.1-05).

An artifact is named by its digest (R13.1-01), so an upload must know the digest before the
first byte goes out: a file is read twice, once to hash it and once to send it, and never held
in memory. A download is hashed as it arrives and handed over only when the hash matches
(R13.1-05): a proxy, a broken disk or a man in the middle can change bytes in transit even
though the authority verified them before sending. Written to a path, it goes to a temporary
file beside the target and is renamed over it only once verified, so no reader ever sees a
partial or unverified file under the target's name.
"""

from __future__ import annotations

import hashlib
import io
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, BinaryIO

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from missionweave.protocol.artifacts.manifests import artifact_uri
from missionweave.protocol.canonical import DIGEST_PREFIX, sha256_digest
from missionweave.protocol.signing import sign_document

from .errors import ArtifactMismatch, ClientError

#: bytes read from a file, or handed to the hash, at a time
CHUNK_BYTES = 1024 * 1024
OCTET_STREAM = "application/octet-stream"
DEFAULT_CLASSIFICATION = "internal"


def _software_version() -> str:
    """What ``producer.version`` says when the agent names no software of its own."""
    try:
        return f"missionweave-client/{metadata.version('missionweave')}"
    except metadata.PackageNotFoundError:
        return "missionweave-client/unknown"


SOFTWARE_VERSION = _software_version()


@dataclass(frozen=True)
class Payload:
    """What an upload sends: digest and size known before the request (the digest is the
    URL), and the bytes produced afresh for each attempt (a retry resends them all)."""

    digest: str
    size: int
    chunks: Callable[[], Iterable[bytes]]


def payload_of(data: bytes | bytearray | memoryview | os.PathLike[str]) -> Payload:
    """The payload of bytes in hand or of a file (read twice, never held in memory).

    A ``str`` is refused rather than guessed at: it could be content or a path."""
    if isinstance(data, bytes | bytearray | memoryview):
        content = bytes(data)
        return Payload(sha256_digest(content), len(content), lambda: [content])
    if not isinstance(data, os.PathLike):
        raise TypeError(f"upload takes bytes or a path (os.PathLike), not {type(data).__name__}")
    path = Path(data)
    hasher = hashlib.sha256()
    size = 0
    with path.open("rb") as file:
        while chunk := file.read(CHUNK_BYTES):
            hasher.update(chunk)
            size += len(chunk)
    digest = DIGEST_PREFIX + hasher.hexdigest()
    return Payload(digest, size, lambda: _file_chunks(path, size))


def _file_chunks(path: Path, size: int) -> Iterator[bytes]:
    """Exactly the ``size`` bytes that were hashed. A file that grew or shrank since is
    refused here: the request would otherwise carry other bytes than its digest names (the
    authority would refuse them too, but only after the whole body was sent)."""
    sent = 0
    with path.open("rb") as file:
        while sent < size:
            chunk = file.read(min(CHUNK_BYTES, size - sent))
            if not chunk:
                break
            sent += len(chunk)
            yield chunk
        if sent != size or file.read(1):
            raise ClientError(f"{path} changed while it was being uploaded")


def receive_verified(chunks: Iterable[bytes], digest: str, sink: BinaryIO) -> int:
    """Write ``chunks`` to ``sink`` while hashing them; their size, once they hash to
    ``digest``. ``ArtifactMismatch`` otherwise: the caller then discards what ``sink`` got."""
    hasher = hashlib.sha256()
    size = 0
    for chunk in chunks:
        hasher.update(chunk)
        sink.write(chunk)
        size += len(chunk)
    actual = DIGEST_PREFIX + hasher.hexdigest()
    if actual != digest:
        raise ArtifactMismatch(digest, actual, size)
    return size


def receive_bytes(chunks: Iterable[bytes], digest: str) -> bytes:
    """The verified bytes, in memory."""
    buffer = io.BytesIO()
    receive_verified(chunks, digest, buffer)
    return buffer.getvalue()


def receive_file(chunks: Iterable[bytes], digest: str, target: Path) -> Path:
    """The verified bytes at ``target``: written to a temporary file in the same folder
    (so the rename cannot cross filesystems), flushed to disk, then renamed over ``target``.
    On any failure — a mismatch, a connection lost halfway — the temporary file is removed
    and ``target`` is left as it was."""
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as file:
            receive_verified(chunks, digest, file)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target


def build_manifest(
    *,
    digest: str,
    size: int,
    media_type: str,
    schema: str | None,
    producer: str,
    version: str,
    agent_card_version: str,
    mission: str,
    work_item: str,
    sources: Sequence[str],
    tool_versions: Mapping[str, str],
    created_at: str,
    classification: str,
) -> dict[str, Any]:
    """Every field of wire.md §9's manifest (R13.1-03). ``uri`` is where the authority
    serves the bytes: a location only, never identity (R13.1-06)."""
    return {
        "digest": digest,
        "media_type": media_type,
        "schema": schema,
        "producer": {
            "agent": producer,
            "version": version,
            "agent_card_version": agent_card_version,
        },
        "mission": mission,
        "work_item": work_item,
        "sources": list(sources),
        "tool_versions": dict(tool_versions),
        "created_at": created_at,
        "classification": classification,
        "size": size,
        "uri": artifact_uri(digest),
    }


def signed_manifest(key: Ed25519PrivateKey, manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The manifest with the producer's ``signature``: Ed25519 over the canonical manifest
    without it, as the authority checks it (wire.md §9)."""
    return sign_document(key, manifest)
