"""A slot's scratch directory, reachable only from inside (R11.1-12, R0-08; MWP-WRK-011).

Why: two slots run side by side in one process (``slots.py``), and neither may read or change
the other's files, not even by a path that a handler builds or plants. One directory per slot
(``root/slots/<id>``, mode 0700). Every path is walked component by component from the slot
directory with ``O_NOFOLLOW`` and ``dir_fd``: absolute paths, ``..``, symlinks (at any depth,
so a swap between check and use cannot redirect it) and hard-linked files are refused. The
directory is scratch: release removes it. Checkpoints and kept results live beside it, never
inside it (``checkpoint_store.py``), so no file method reaches them.

A handler in a process of its own (``isolation_child.py``) runs the same ``_SlotFiles`` on its
current directory, so the checks are the same in both isolation modes.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from .slot_errors import IsolationError

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a FIFO planted in the slot must not hang the handler; regular files ignore it
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
# no O_TRUNC: a planted hard link must be refused before anything of it is changed
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


class _SlotFiles:
    """The slot's directory, reachable only by relative paths that stay inside it."""

    def __init__(self, root: Path) -> None:
        self._root = root

    def read_bytes(self, name: str) -> bytes:
        parts = _relative_parts(name)
        with self._parent(parts, create=False) as parent:
            fd = self._open(parts[-1], _READ_FLAGS, parent)
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise IsolationError(f"{name!r} is not a regular file")
            if info.st_nlink > 1:
                # a hard link is another name for a file that may live in another slot
                raise IsolationError(f"{name!r} is hard-linked elsewhere")
            return handle.read()

    def write_bytes(self, name: str, data: bytes) -> None:
        parts = _relative_parts(name)
        with self._parent(parts, create=True) as parent:
            fd = self._open(parts[-1], _WRITE_FLAGS, parent, mode=0o600)
        with os.fdopen(fd, "wb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_nlink > 1:
                raise IsolationError(f"{name!r} is not a private regular file")
            handle.truncate(0)
            handle.write(data)

    def delete(self, name: str) -> None:
        parts = _relative_parts(name)
        with self._parent(parts, create=False) as parent:
            os.unlink(parts[-1], dir_fd=parent)

    def names(self) -> list[str]:
        found: list[str] = []
        for directory, _dirs, files, _fd in os.fwalk(self._root):  # never follows symlinks
            base = PurePosixPath(os.path.relpath(directory, self._root))
            found.extend(str(base / name) if str(base) != "." else name for name in files)
        return sorted(found)

    @contextlib.contextmanager
    def _parent(self, parts: list[str], *, create: bool) -> Iterator[int]:
        fd = os.open(self._root, _DIR_FLAGS)
        try:
            for part in parts[:-1]:
                if create:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(part, 0o700, dir_fd=fd)
                child = self._open(part, _DIR_FLAGS, fd)
                os.close(fd)
                fd = child
            yield fd
        finally:
            os.close(fd)

    @staticmethod
    def _open(part: str, flags: int, dir_fd: int, mode: int = 0o600) -> int:
        try:
            return os.open(part, flags, mode, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno in {errno.ELOOP, errno.ENOTDIR} and _is_symlink(part, dir_fd):
                raise IsolationError(f"{part!r} is a symlink: refused") from exc
            raise


def _is_symlink(part: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(part, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _relative_parts(name: object) -> list[str]:
    """The components of a path that names something inside the slot, or ``IsolationError``."""
    if not isinstance(name, str) or not name or "\x00" in name:
        raise IsolationError("a slot path is a non-empty string")
    path = PurePosixPath(name)
    if path.is_absolute():
        raise IsolationError(f"{name!r} is absolute: slot paths are relative to the slot")
    parts = list(path.parts)
    if not parts or ".." in parts:
        raise IsolationError(f"{name!r} leaves the slot directory")
    return parts
