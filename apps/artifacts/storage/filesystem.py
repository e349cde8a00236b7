"""Objects as files: ``<root>/sha256/ab/cd/<hex>``, spools in ``<root>/tmp`` (same filesystem).

Committing links the finished spool to a fresh name in the spool folder and renames that over
the object's path: ``rename(2)`` is atomic, so a reader sees the old object or the new one,
never a half-written file, and two concurrent uploads of one digest both succeed and leave
one object (their bytes are identical: both were verified against the digest). Objects are
made read-only, so nothing in this process can edit one in place (R13.1-01: immutable).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

from missionweave.protocol.canonical import DIGEST_PREFIX

from .base import CHUNK_BYTES, Spool

READ_ONLY = 0o400


class StoredFile:
    """An open object file; both verification passes read the same open file (``pread``)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self.size = os.fstat(fd).st_size

    def chunks(self, start: int = 0, stop: int | None = None) -> Iterator[bytes]:
        stop = self.size if stop is None else min(stop, self.size)
        offset = start
        while offset < stop:
            data = os.pread(self._fd, min(CHUNK_BYTES, stop - offset), offset)
            if not data:  # truncated since it was opened: the caller's hash will not match
                return
            offset += len(data)
            yield data

    def close(self) -> None:
        os.close(self._fd)


def _fsync_folder(folder: Path) -> None:
    """A rename is durable once the folder holding the new name is flushed."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class FilesystemStorage:
    kind = "fs"

    def __init__(self, root: Path, *, spool_dir: Path | None = None) -> None:
        self.root = Path(root)
        self.spool_dir = Path(spool_dir) if spool_dir else self.root / "tmp"

    def path(self, digest: str) -> Path:
        hex_ = digest.removeprefix(DIGEST_PREFIX)
        return self.root / "sha256" / hex_[:2] / hex_[2:4] / hex_

    def spool(self) -> Spool:
        return Spool(self.spool_dir)

    def commit(self, spool: Spool, digest: str) -> None:
        final = self.path(digest)
        final.parent.mkdir(parents=True, exist_ok=True)
        # A second name for the spool's file, so the spool itself stays (the upload may have
        # to commit again if garbage collection removed the object meanwhile).
        staged = self.spool_dir / f"{uuid.uuid4().hex}.commit"
        os.link(spool.path, staged)
        try:
            os.chmod(staged, READ_ONLY)
            os.replace(staged, final)
        finally:
            staged.unlink(missing_ok=True)
        _fsync_folder(final.parent)

    def open(self, digest: str) -> StoredFile | None:
        try:
            fd = os.open(self.path(digest), os.O_RDONLY)
        except (FileNotFoundError, NotADirectoryError):
            return None
        try:
            return StoredFile(fd)
        except BaseException:
            os.close(fd)
            raise

    def exists(self, digest: str) -> bool:
        return self.path(digest).is_file()

    def delete(self, digest: str) -> None:
        self.path(digest).unlink(missing_ok=True)

    def location(self, digest: str) -> str:
        return str(self.path(digest))
