"""The wire between a slot and its handler's own process (``isolation = "process"``, R11.1-12).

Length-prefixed JSON: a 4-byte big-endian length, then one UTF-8 JSON object. Never pickle:
the worker must not unpickle anything a hostile handler's process sends, and JSON decodes to
plain data only. Values JSON has no form for are tagged objects of one key:

- ``bytes`` as ``{"$bytes": base64}`` (file contents, outputs, checkpoint states);
- ``datetime`` as ``{"$datetime": ISO 8601}`` (``progress.estimate``);
- a ``Checkpoint`` as ``{"$checkpoint": {...}}``, which only the worker sends (``resume_from``,
  what ``ctx.checkpoint`` returns, the checkpoint of ``Preempted`` and ``Blocked``): a decoder
  for what the child sends refuses it;
- a mapping that happens to look like one of these as ``{"$dict": {...}}``, so nothing a
  handler sends is mistaken for a tag.

Every message is bounded (``MAX_MESSAGE``) before it is read, and anything that is not what
this module writes is a ``WireError``: the caller fails the item, the worker goes on.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import socket
import struct
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from .blocking import Blocked
from .preemption import Preempted
from .slots import (
    BudgetExceeded,
    Checkpoint,
    IsolationError,
    SlotClosed,
    SlotError,
)

#: the largest message either side accepts: outputs travel in one message
MAX_MESSAGE = 64 * 1024 * 1024
#: deeper than any honest mission context or checkpoint state
MAX_DEPTH = 64
_HEADER = struct.Struct(">I")
_BYTES, _DATETIME, _CHECKPOINT, _DICT = "$bytes", "$datetime", "$checkpoint", "$dict"
_TAGS = frozenset({_BYTES, _DATETIME, _CHECKPOINT, _DICT})

#: what a call on the worker's side may raise and the child raises again, by name
ERRORS: dict[str, type[Exception]] = {
    cls.__name__: cls
    for cls in (
        SlotClosed,
        BudgetExceeded,
        IsolationError,
        SlotError,
        ValueError,
        TypeError,
        KeyError,
        LookupError,
        PermissionError,
        FileNotFoundError,
        FileExistsError,
        IsADirectoryError,
        NotADirectoryError,
        OSError,
        RuntimeError,
    )
}


class WireError(Exception):
    """A message that is not what the protocol allows (too big, not JSON, a bad shape)."""


# --- values ---------------------------------------------------------------------------------


def encode(value: Any, depth: int = 0) -> Any:
    """``value`` as plain JSON data (see the module doc); ``WireError`` for anything else."""
    if depth > MAX_DEPTH:
        raise WireError("value nested too deeply")
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise WireError("a number is finite")
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return {_BYTES: base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, datetime):
        return {_DATETIME: value.isoformat()}
    if isinstance(value, Checkpoint):
        return {_CHECKPOINT: _checkpoint_fields(value, depth)}
    if isinstance(value, Mapping):
        plain: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise WireError("mapping keys are strings")
            plain[key] = encode(item, depth + 1)
        return {_DICT: plain} if len(plain) == 1 and next(iter(plain)) in _TAGS else plain
    if isinstance(value, list | tuple):
        return [encode(item, depth + 1) for item in value]
    raise WireError(f"a {type(value).__name__} cannot cross the wire")


def decode(value: Any, *, checkpoints: bool, depth: int = 0) -> Any:
    """The value ``encode`` made; ``checkpoints=False`` refuses ``$checkpoint`` (the worker
    never takes a checkpoint object from the child: it writes them itself)."""
    if depth > MAX_DEPTH:
        raise WireError("value nested too deeply")
    if isinstance(value, list):
        return [decode(item, checkpoints=checkpoints, depth=depth + 1) for item in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        tag, inner = next(iter(value.items()))
        if tag == _BYTES:
            return _bytes(inner)
        if tag == _DATETIME:
            return _datetime(inner)
        if tag == _CHECKPOINT:
            if not checkpoints:
                raise WireError("a checkpoint is the worker's to send")
            return _checkpoint(inner, depth)
        if tag == _DICT:
            if not isinstance(inner, dict):
                raise WireError("$dict holds an object")
            value = inner
    return {
        key: decode(item, checkpoints=checkpoints, depth=depth + 1) for key, item in value.items()
    }


def _bytes(inner: object) -> bytes:
    if not isinstance(inner, str):
        raise WireError("$bytes holds base64 text")
    try:
        return base64.b64decode(inner.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError) as error:
        raise WireError(f"$bytes is not base64: {error}") from None


def _datetime(inner: object) -> datetime:
    if not isinstance(inner, str):
        raise WireError("$datetime holds ISO 8601 text")
    try:
        return datetime.fromisoformat(inner)
    except ValueError as error:
        raise WireError(f"$datetime: {error}") from None


def _checkpoint_fields(checkpoint: Checkpoint, depth: int) -> dict[str, Any]:
    return {
        "ref": checkpoint.ref,
        "sequence": checkpoint.sequence,
        "group": checkpoint.group,
        "work_item": checkpoint.work_item,
        "ownership_epoch": checkpoint.ownership_epoch,
        "state": encode(checkpoint.state, depth + 1),
        "state_digest": checkpoint.state_digest,
        "artifacts": list(checkpoint.artifacts),
    }


def _checkpoint(inner: object, depth: int) -> Checkpoint:
    if not isinstance(inner, dict):
        raise WireError("$checkpoint holds an object")
    try:
        state = decode(inner["state"], checkpoints=False, depth=depth + 1)
        return Checkpoint(
            ref=str(inner["ref"]),
            sequence=int(inner["sequence"]),
            group=str(inner["group"]),
            work_item=str(inner["work_item"]),
            ownership_epoch=int(inner["ownership_epoch"]),
            state=state,
            state_digest=str(inner["state_digest"]),
            artifacts=tuple(str(a) for a in inner["artifacts"]),
        )
    except (KeyError, TypeError, ValueError) as error:
        raise WireError(f"a bad checkpoint: {error}") from None


# --- errors ---------------------------------------------------------------------------------


def error_document(error: BaseException) -> dict[str, Any]:
    """What the worker sends back when a call on the real context raised."""
    document: dict[str, Any] = {"type": type(error).__name__, "message": str(error)[:4000]}
    if isinstance(error, Preempted | Blocked):
        document["checkpoint"] = error.checkpoint
    if isinstance(error, Blocked):
        document["resolution"] = error.required_resolution
    if isinstance(error, KeyError) and error.args:
        document["message"] = str(error.args[0])[:4000]
    elif document["type"] not in ERRORS and not isinstance(error, Preempted | Blocked):
        document["type"] = "RuntimeError"
    return document


def rebuild_error(document: Mapping[str, Any]) -> BaseException:
    """The exception ``error_document`` described, as the same class (the child's side)."""
    kind, message = document.get("type"), str(document.get("message", ""))
    checkpoint = document.get("checkpoint")
    if not isinstance(checkpoint, Checkpoint):
        checkpoint = None
    if kind == "Preempted":
        return Preempted(checkpoint)
    if kind == "Blocked":
        return Blocked(checkpoint, str(document.get("resolution") or ""))
    cls = ERRORS.get(str(kind), RuntimeError)
    return cls(message)


# --- framing --------------------------------------------------------------------------------


def send(sock: socket.socket, message: Mapping[str, Any]) -> None:
    """One message, whole; ``WireError`` when it cannot be encoded or is too big."""
    try:
        data = json.dumps(encode(message), allow_nan=False, separators=(",", ":")).encode()
    except (ValueError, RecursionError) as error:
        raise WireError(f"cannot encode a message: {error}") from None
    if len(data) > MAX_MESSAGE:
        raise WireError(f"a message of {len(data)} bytes is over the {MAX_MESSAGE} limit")
    sock.sendall(_HEADER.pack(len(data)) + data)


def receive(sock: socket.socket, *, checkpoints: bool) -> dict[str, Any] | None:
    """The next message, or ``None`` when the other side closed between messages."""
    header = _read(sock, _HEADER.size, eof_ok=True)
    if header is None:
        return None
    (length,) = _HEADER.unpack(header)
    if length > MAX_MESSAGE:
        raise WireError(f"a message of {length} bytes is over the {MAX_MESSAGE} limit")
    body = _read(sock, length, eof_ok=False)
    assert body is not None
    try:
        raw = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise WireError(f"a message is not JSON: {error}") from None
    if not isinstance(raw, dict):
        raise WireError("a message is a JSON object")
    decoded = decode(raw, checkpoints=checkpoints)
    assert isinstance(decoded, dict)
    return decoded


def _read(sock: socket.socket, size: int, *, eof_ok: bool) -> bytes | None:
    chunks: list[bytes] = []
    left = size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            if eof_ok and left == size:
                return None
            raise WireError("the other side closed in the middle of a message")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
