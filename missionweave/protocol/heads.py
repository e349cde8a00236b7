"""Signed heads, and when two of them contradict each other (wire.md §4; R16-10, R16-11).

A signed head says "event ``sequence`` of ``group`` has hash ``hash``", under the authority's
key. Because every event's hash covers the one before it (wire.md §6), a head commits to the
whole history up to it: whoever once verified a head can prove that a later history or head
contradicts it, without trusting the server that serves the later one (issue 33 §2).

Each head also names the head the authority signed before it for the group (``previous``:
its sequence and the digest of its document), and the authority signs at most one head per
sequence. So the authority's heads form a chain of their own, and:

- two heads signed for one sequence with different hashes are evidence of a fork;
- a head later than one the client holds must name, as ``previous``, that head (its exact
  digest) or a later one: the authority signs heads in sequence order, each after the latest,
  so a later head that skips a known one was signed over a history without it;
- a head behind one already verified means history was cut.

Pure: the callers (the client SDK, ``verify_export``, the authority itself) have already
checked the signatures.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .canonical import digest

HEAD_FIELDS = ("group", "sequence", "hash", "previous", "signed_at")


def head_document(
    *, group: str, sequence: int, hash_: str, previous: dict[str, Any] | None, signed_at: str
) -> dict[str, Any]:
    """The unsigned head; ``previous`` is :func:`reference` of the head signed before it."""
    return {
        "group": group,
        "sequence": sequence,
        "hash": hash_,
        "previous": previous,
        "signed_at": signed_at,
    }


def head_digest(head: dict[str, Any]) -> str:
    """The digest of a signed head's canonical document, signature included."""
    return digest(head)


def reference(head: dict[str, Any]) -> dict[str, Any]:
    """What the next head says of this one: ``{"sequence", "digest"}``."""
    return {"sequence": head["sequence"], "digest": head_digest(head)}


@dataclass(frozen=True)
class Contradiction:
    """A later head or event that cannot belong to the history an earlier head signed."""

    known: dict[str, Any]
    reason: str

    def __str__(self) -> str:
        return (
            f"{self.reason} (the signed head this client verified: sequence "
            f"{self.known.get('sequence')}, {self.known.get('hash')})"
        )


def _sequence(head: dict[str, Any]) -> int | None:
    value = head.get("sequence")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def head_contradiction(known: dict[str, Any], offered: dict[str, Any]) -> Contradiction | None:
    """Why ``offered`` cannot follow ``known`` (two heads of one group), or ``None``."""
    known_at, offered_at = _sequence(known), _sequence(offered)
    if known_at is None or offered_at is None:
        return Contradiction(known, "a head without a sequence")
    if offered.get("group") != known.get("group"):
        return Contradiction(known, f"a head of group {offered.get('group')!r}")
    if offered_at < known_at:
        return Contradiction(
            known, f"history was cut: the head went back from {known_at} to {offered_at}"
        )
    if offered_at == known_at and offered.get("hash") != known.get("hash"):
        return Contradiction(
            known,
            f"fork: two heads signed for sequence {known_at}, {known.get('hash')} and "
            f"{offered.get('hash')}",
        )
    if offered_at == known_at:
        return None
    previous = offered.get("previous")
    previous_at = _sequence(previous) if isinstance(previous, dict) else None
    if previous_at is None or previous_at < known_at:
        return Contradiction(
            known,
            f"fork: head {offered_at} was signed after head {previous_at}, "
            f"not after the head {known_at} verified",
        )
    if previous_at == known_at and previous.get("digest") != head_digest(known):  # type: ignore[union-attr]
        return Contradiction(
            known,
            f"fork: head {offered_at} follows another head at {known_at} than the one verified",
        )
    return None


def event_contradiction(known: dict[str, Any], event: dict[str, Any]) -> Contradiction | None:
    """Why ``event`` cannot be in the history ``known`` signed, or ``None``: at the head's
    sequence, the event must have the head's hash (the hash chain then covers all before)."""
    if event.get("sequence") == _sequence(known) and event.get("hash") != known.get("hash"):
        return Contradiction(
            known,
            f"fork: event {known.get('sequence')} has hash {event.get('hash')}, "
            f"not the signed {known.get('hash')}",
        )
    return None
