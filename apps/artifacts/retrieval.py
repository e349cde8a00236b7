"""Reading an object back verified against its digest before a byte is sent (R13.1-05).

A small object is read into memory once and hashed; a larger one is hashed in a first pass
and streamed in a second (``apps.artifacts.downloads``), which hashes again and holds back
its last chunk until the hash matches, so bytes changed between the passes never make a
complete response either.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from missionweave.protocol.canonical import DIGEST_PREFIX

from .storage import Storage, StoredObject


class Corrupted(Exception):
    """The stored object does not hash to its digest, or is missing."""

    def __init__(self, actual: str) -> None:
        super().__init__(actual or "missing")
        #: the digest of what was read; "" when there was no object
        self.actual = actual


@dataclass
class Verified:
    """A verified object: its bytes (small ones) or the open object to stream again."""

    size: int
    data: bytes | None = None
    stored: StoredObject | None = None

    def close(self) -> None:
        if self.stored is not None:
            self.stored.close()
            self.stored = None


def open_verified(storage: Storage, digest: str, *, in_memory_bytes: int) -> Verified:
    """The object ``digest``, verified; :class:`Corrupted` when it does not verify."""
    stored = storage.open(digest)
    if stored is None:
        raise Corrupted("")
    try:
        hasher = hashlib.sha256()
        if stored.size <= in_memory_bytes:
            data = b"".join(stored.chunks())
            hasher.update(data)
            verified = Verified(size=len(data), data=data)
        else:
            size = 0
            for chunk in stored.chunks():
                hasher.update(chunk)
                size += len(chunk)
            verified = Verified(size=size, stored=stored)
        actual = DIGEST_PREFIX + hasher.hexdigest()
        if actual != digest:
            raise Corrupted(actual)
    except BaseException:
        stored.close()
        raise
    if verified.data is not None:
        stored.close()
    return verified
