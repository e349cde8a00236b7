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
    what ``event_hash`` and ``canonical_bytes`` give, each member encoded once.

    An RFC 8785 object is its members, sorted by the UTF-16 code units of their names, joined
    by commas inside braces; so the hashed form (without ``hash``) and the stored form (with
    it) share every member's bytes, and the payload — most of the work — is encoded once
    instead of twice on the write path's append."""
    members = {
        name: canonical_bytes(name) + b":" + canonical_bytes(value) for name, value in event.items()
    }
    hash_ = sha256_digest(_object(members))
    members["hash"] = b'"hash":"' + hash_.encode("ascii") + b'"'
    return hash_, _object(members)


def _object(members: dict[str, bytes]) -> bytes:
    ordered = sorted(members, key=lambda name: name.encode("utf-16-be"))
    return b"{" + b",".join(members[name] for name in ordered) + b"}"


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
