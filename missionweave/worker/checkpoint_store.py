"""Durable checkpoints and kept results of a WorkItem, outside any slot (R11.3-13, R11.5-01,
R11.5-06; MWP-WRK-015).

Why: a slot's directory is scratch that release removes (``slot_files.py``), but a checkpoint
must outlive the slot that wrote it, and the process too, without a later copy.

- **Checkpoints**: written durably (fsync, atomic rename, fsync of the directory) under
  ``root/checkpoints/<item key>``, keyed by Group and WorkItem, never reachable through the
  file methods. They outlive the slot on purpose: a preempted or crashed item resumes from
  its last checkpoint in a new slot (``ctx.resume_from``, R11.5-01). A checkpoint sent to
  the authority has its state stored there too, and another machine resumes from it
  (``resume.py``: the runtime hands it over as ``Assignment.resume_from``).
- **Kept results**: the output bytes of a result finished while the authority could not
  be reached (``kept.py``) are written durably under ``root/results/<item key>``, named by
  their digest. Like checkpoints they outlive the slot and are never reachable through a
  slot's file methods.

The pool (``slots.SlotPool``) chooses the directories; this module only reads and writes in
them.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import shutil
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from missionweave.protocol.canonical import canonical_bytes, digest, is_digest, sha256_digest

from .slot_files import _DIR_FLAGS

if TYPE_CHECKING:  # ``slots`` imports this module: the item is only a type here
    from .slots import ItemRef

CHECKPOINT_FORMAT = "mwp-worker-checkpoint-v1"


@dataclass(frozen=True)
class Checkpoint:
    """A durable checkpoint of one WorkItem (R11.3-13(2)). ``state`` is what the handler
    passed: ``bytes``, or a JSON object (a fresh ``dict`` for each reader)."""

    ref: str
    sequence: int
    group: str
    work_item: str
    ownership_epoch: int
    state: bytes | dict[str, Any]
    state_digest: str
    artifacts: tuple[str, ...] = ()

    def wire(self) -> dict[str, Any]:
        """The ``checkpoint`` object of ``work.checkpoint`` (wire.md: ref, state_digest,
        artifacts), for the runtime to sign."""
        return {
            "ref": self.ref,
            "state_digest": self.state_digest,
            "artifacts": list(self.artifacts),
        }


class CheckpointStore:
    """The durable checkpoints of one WorkItem, numbered 1, 2, ... (``<sequence>.json``).

    Keyed by (Group, WorkItem) rather than by slot so a checkpoint is durable the moment it is
    written and survives the slot (and a crash of the process) without a later copy: the next
    slot of the same item finds it here (R11.3-13(5), R11.5-01).
    """

    def __init__(self, directory: Path) -> None:
        self._dir = directory
        self._lock = threading.Lock()

    def latest(self) -> Checkpoint | None:
        sequences = self._sequences()
        if not sequences:
            return None
        document = json.loads((self._dir / f"{sequences[-1]:012d}.json").read_bytes())
        return _checkpoint_from(document)

    def write(
        self, item: ItemRef, state: bytes | Mapping[str, Any], artifacts: Sequence[str]
    ) -> Checkpoint:
        if isinstance(state, bytes | bytearray):
            kind, stored = "bytes", base64.b64encode(state).decode()
            state_digest = sha256_digest(bytes(state))
        elif isinstance(state, Mapping):
            plain = json.loads(json.dumps(state))  # a JSON object, detached from the caller
            canonical_bytes(plain)  # refuses what RFC 8785 cannot represent (NaN, huge ints)
            kind, stored, state_digest = "json", plain, digest(plain)
        else:
            raise TypeError("checkpoint state is bytes or a JSON object")
        artifacts = tuple(artifacts)
        if not all(is_digest(value) for value in artifacts):
            raise ValueError("checkpoint artifacts are sha256:<64 hex> digests")
        with self._lock:
            self._dir.mkdir(mode=0o700, parents=False, exist_ok=True)
            sequences = self._sequences()
            sequence = (sequences[-1] if sequences else 0) + 1
            document = {
                "format": CHECKPOINT_FORMAT,
                "ref": f"{item.work_item}/e{item.ownership_epoch}/c{sequence}",
                "sequence": sequence,
                "group": item.group,
                "work_item": item.work_item,
                "ownership_epoch": item.ownership_epoch,
                "kind": kind,
                "state": stored,
                "state_digest": state_digest,
                "artifacts": list(artifacts),
            }
            _write_durably(self._dir, f"{sequence:012d}.json", json.dumps(document).encode())
        return _checkpoint_from(document)

    def discard(self) -> None:
        """Forget every checkpoint of the item (once the authority has its submission)."""
        with self._lock:
            shutil.rmtree(self._dir, ignore_errors=True)

    def _sequences(self) -> list[int]:
        try:
            names = os.listdir(self._dir)
        except FileNotFoundError:
            return []
        return sorted(int(n[:-5]) for n in names if n.endswith(".json") and n[:-5].isdigit())


class ResultFiles:
    """The output bytes of one finished WorkItem, kept until its submission is decided
    (``kept.py``). Each file is named by the digest of its bytes, so reading it back checks
    it is the same output; written like a checkpoint (fsync, atomic rename)."""

    def __init__(self, directory: Path) -> None:
        self._dir = directory

    def write(self, data: bytes) -> str:
        """Store ``data`` durably; its ``sha256:`` digest."""
        found = sha256_digest(data)
        self._dir.mkdir(mode=0o700, parents=False, exist_ok=True)
        _write_durably(self._dir, found.removeprefix("sha256:"), data)
        return found

    def read(self, wanted: str) -> bytes:
        """The bytes of ``wanted``; ``ValueError`` unless they are still exactly those."""
        if not is_digest(wanted):
            raise ValueError(f"{wanted!r} is not a sha256 digest")
        data = (self._dir / wanted.removeprefix("sha256:")).read_bytes()
        if sha256_digest(data) != wanted:
            raise ValueError(f"the kept bytes of {wanted} do not match their digest")
        return data

    def discard(self) -> None:
        shutil.rmtree(self._dir, ignore_errors=True)


def _checkpoint_from(document: dict[str, Any]) -> Checkpoint:
    state = document["state"]
    return Checkpoint(
        ref=document["ref"],
        sequence=document["sequence"],
        group=document["group"],
        work_item=document["work_item"],
        ownership_epoch=document["ownership_epoch"],
        state=base64.b64decode(state) if document["kind"] == "bytes" else state,
        state_digest=document["state_digest"],
        artifacts=tuple(document["artifacts"]),
    )


def _write_durably(directory: Path, name: str, data: bytes) -> None:
    """Write, fsync, rename over, fsync the directory: after a crash the file is either the
    old one or the whole new one, never a torn write that a resume would read."""
    temporary = directory / f".{name}.{secrets.token_hex(4)}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, directory / name)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    directory_fd = os.open(directory, _DIR_FLAGS)
    try:
        os.fsync(directory_fd)
    finally:
        os.close(directory_fd)
