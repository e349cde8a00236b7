"""The event document of wire.md §6 and its hash chain."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .canonical import ZERO_HASH, canonical_bytes, digest, sha256_digest, without

EVENT_FIELDS = (
    "event_id", "group", "sequence", "type", "command_id", "actor", "recorded_at", "payload",
    "prev_hash",
)  # fmt: skip


def event_hash(event: dict[str, Any]) -> str:
    """The digest of the canonical event without ``hash`` (wire.md §6)."""
    return digest(without(event, "hash"))


def sealed(event: dict[str, Any]) -> tuple[str, bytes]:
    """``(hash, canonical bytes of the event with that hash)`` for an event without ``hash``:
    what ``event_hash`` and ``canonical_bytes`` give, with the event encoded once.

    An RFC 8785 object is its members sorted by the UTF-16 code units of their names, joined
    by commas inside braces. The members named before ``hash`` and those named after it are
    each encoded as one object; the hashed form (without ``hash``) joins the two, the stored
    form puts the ``hash`` member between them. The payload — most of the work — is encoded
    once instead of twice on the write path's append, and in two calls of the encoder
    rather than one per member."""
    before: dict[str, Any] = {}
    after: dict[str, Any] = {}
    for name, value in event.items():
        (before if name.encode("utf-16-be") < _HASH_NAME else after)[name] = value
    opening = canonical_bytes(before)[:-1]  # "{" and the members before, if any
    closing = canonical_bytes(after)[1:]  # the members after, if any, and "}"
    hash_ = sha256_digest(_joined(opening, closing))
    with_hash = opening + (b"," if len(opening) > 1 else b"") + b'"hash":"' + hash_.encode()
    return hash_, _joined(with_hash + b'"', closing)


_HASH_NAME = "hash".encode("utf-16-be")


def _joined(opening: bytes, closing: bytes) -> bytes:
    """An object's opening part (``{`` and members) and closing part (members and ``}``)."""
    comma = b"," if len(opening) > 1 and len(closing) > 1 else b""
    return opening + comma + closing


def first_chain_break(
    events: Iterable[dict[str, Any]], *, after_hash: str = ZERO_HASH, after_sequence: int = 0
) -> int | None:
    """The sequence of the first event that does not chain, or ``None`` when all do.

    An event chains when its sequence follows the previous one, its ``prev_hash`` is the
    previous ``hash`` and its ``hash`` is the digest of its own content.
    """
    previous_hash, previous_sequence = after_hash, after_sequence
    for event in events:
        sequence = event.get("sequence")
        if not chains(event, previous_hash=previous_hash, previous_sequence=previous_sequence):
            return sequence if isinstance(sequence, int) else previous_sequence + 1
        previous_hash, previous_sequence = event["hash"], sequence
    return None


def chains(event: dict[str, Any], *, previous_hash: str, previous_sequence: int) -> bool:
    """Whether ``event`` follows the previous one: next sequence, its ``prev_hash`` is the
    previous ``hash``, and its ``hash`` is the digest of its own content (wire.md §6)."""
    return (
        event.get("sequence") == previous_sequence + 1
        and event.get("prev_hash") == previous_hash
        and event.get("hash") == event_hash(event)
    )
