"""The storage interface: spool while hashing, commit under a digest, read back in chunks.

Every backend spools an upload to a local file while it is hashed (:class:`Spool`), because
the digest is known only once the last byte has arrived and nothing may be kept under a
digest its bytes do not hash to (wire.md §4, ``ARTIFACT_HASH_MISMATCH``). Only then is the
spool committed under ``sha256/<hex>`` (R13.1-01): a rename on the filesystem, an upload to
the bucket. A backend failure surfaces as ``OSError`` (:class:`StorageError` for non-OS
backends), which the HTTP edge answers with 503, never a traceback — or, when the disk (or
a quota) has no room left (:func:`is_no_room`), 507 ``STORAGE_FULL``.
"""

from __future__ import annotations

import errno
import hashlib
import os
import time
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Protocol

from missionweave.protocol.canonical import DIGEST_PREFIX

#: reads and spool writes move this much at a time: large enough that per-chunk overhead
#: (a thread hop, a syscall, an ASGI message) is negligible, small enough to stay cheap
CHUNK_BYTES = 1024 * 1024
SPOOL_SUFFIX = ".part"


class StorageError(OSError):
    """A backend failure that is not the client's fault (the edge answers 503)."""


#: ``errno`` of a write that found no room: the disk, or the user's quota, is full
_NO_ROOM = frozenset({errno.ENOSPC, errno.EDQUOT})


def is_no_room(error: OSError) -> bool:
    """Whether ``error`` means the storage is full (507), not that it is away (503)."""
    return error.errno in _NO_ROOM


def object_key(digest: str) -> str:
    """``sha256/<hex>``: where an object lives, relative to the store's root or bucket."""
    return "sha256/" + digest.removeprefix(DIGEST_PREFIX)


class Spool:
    """A local file an upload is written to while it is hashed; removed by :meth:`discard`.

    Writes are whole lists of chunks, so the caller can hand over a megabyte of network
    messages at once without joining them (no copy) and the hash and the write happen in
    the same worker thread.
    """

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"{uuid.uuid4().hex}{SPOOL_SUFFIX}"
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        self._hash = hashlib.sha256()
        self.size = 0
        self._closed = False

    def write(self, chunks: Iterable[bytes]) -> None:
        for chunk in chunks:
            self._hash.update(chunk)
            view = memoryview(chunk)
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
            self.size += len(chunk)

    def digest(self) -> str:
        return DIGEST_PREFIX + self._hash.hexdigest()

    def finish(self) -> str:
        """Flush the bytes to disk (a committed object must survive a crash) and close;
        return the digest of everything written."""
        if not self._closed:
            os.fsync(self._fd)
            os.close(self._fd)
            self._closed = True
        return self.digest()

    def discard(self) -> None:
        """Close and remove the spool; safe to call twice and after :meth:`finish`."""
        if not self._closed:
            os.close(self._fd)
            self._closed = True
        self.path.unlink(missing_ok=True)


def clean_spools(folder: Path, older_than_s: float, *, apply: bool) -> int:
    """Spools untouched for ``older_than_s`` seconds (a crashed or abandoned upload: an
    upload in progress keeps its file's mtime fresh); removed when ``apply``; their count."""
    if not folder.is_dir():
        return 0
    cutoff = time.time() - older_than_s
    found = 0
    for path in folder.iterdir():
        try:
            if path.stat().st_mtime >= cutoff:
                continue
            found += 1
            if apply:
                path.unlink(missing_ok=True)
        except FileNotFoundError:
            continue  # committed or discarded meanwhile
    return found


class StoredObject(Protocol):
    """An object opened for reading: its size now, its bytes in chunks."""

    size: int

    def chunks(self, start: int = 0, stop: int | None = None) -> Iterator[bytes]:
        """Bytes ``[start, stop)`` in chunks of at most :data:`CHUNK_BYTES`."""
        ...

    def close(self) -> None: ...


class Storage(Protocol):
    """Where objects live. Every method is synchronous (the HTTP handler calls them from
    worker threads) and raises ``OSError`` on a backend failure."""

    #: ``fs`` or ``s3`` (CorruptionReport.location)
    kind: str
    #: where uploads are spooled while they are hashed
    spool_dir: Path

    def spool(self) -> Spool:
        """A new spool for one upload."""
        ...

    def commit(self, spool: Spool, digest: str) -> None:
        """Store the finished ``spool`` under ``digest`` (whose bytes it was verified to
        have), replacing whatever is there; the spool stays until discarded."""
        ...

    def open(self, digest: str) -> StoredObject | None:
        """The stored object, or ``None`` when there is none."""
        ...

    def exists(self, digest: str) -> bool: ...

    def delete(self, digest: str) -> None:
        """Remove the object; a missing one is not an error."""
        ...

    def location(self, digest: str) -> str:
        """Where the object is, for people (a path, an ``s3://`` URL). R13.1-06: a location
        is mutable and never the artifact's identity; what is read from it counts only once
        it hashes to the digest (``apps.artifacts.retrieval``)."""
        ...
