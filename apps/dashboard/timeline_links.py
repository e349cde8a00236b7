"""A filtered page of the log, verified: every event re-hashed and linked to the event just
before it *in the log* (wire.md §6; R16-03), whether or not that one is on the page.

``timeline.check_page`` verifies a run of consecutive events from an anchor. A filtered
Timeline page (issue 37 §2: only a mission's events, only one person's) holds events with gaps
between them, so each event's link is checked against its own predecessor, read by sequence
(the view reads the predecessors the page lacks in one indexed query). An unfiltered page is
the special case where every predecessor but the oldest is on the page: the verdicts are the
same as ``check_page``'s.

Pure: no database, so a tampered event is tested without touching the append-only table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from missionweave.protocol.canonical import ZERO_HASH
from missionweave.protocol.events import event_hash

from .timeline import CheckedEvent


@dataclass(frozen=True)
class LinkedPage:
    """Events newest first, each with its verdict, and the page's verdict."""

    events: tuple[CheckedEvent, ...]
    #: the oldest sequence whose hash or link does not hold, or ``None``
    first_break: int | None
    #: sequences whose predecessor is not online (archived): their link is taken on trust
    unanchored: tuple[int, ...] = ()

    @property
    def verified(self) -> bool:
        return self.first_break is None


def predecessors_needed(sequences: Sequence[int]) -> set[int]:
    """The sequences just before the page's events that the page does not hold itself."""
    shown = set(sequences)
    return {s - 1 for s in shown if s > 1 and s - 1 not in shown}


def check_linked(
    documents: Sequence[Mapping[str, Any]], predecessor_hashes: Mapping[int, str]
) -> LinkedPage:
    """Verify ``documents`` (any order): each one's own hash, and its ``prev_hash`` against
    the hash of the event at ``sequence - 1`` (on the page, in ``predecessor_hashes``, or
    the zero hash before sequence 1)."""
    by_sequence = {d.get("sequence"): d for d in documents if isinstance(d.get("sequence"), int)}
    checked: list[CheckedEvent] = []
    unanchored: list[int] = []
    first_break: int | None = None
    for document in sorted(documents, key=lambda d: d.get("sequence") or 0):
        sequence = document.get("sequence")
        if not isinstance(sequence, int):
            checked.append(CheckedEvent(dict(document), False, False))
            continue
        before = sequence - 1
        if before < 1:
            expected: str | None = ZERO_HASH
        elif before in by_sequence:
            expected = str(by_sequence[before].get("hash", ""))
        else:
            expected = predecessor_hashes.get(before)
        if expected is None:
            unanchored.append(sequence)
            link_ok = True  # archived: taken on trust, and the page says so
        else:
            link_ok = document.get("prev_hash") == expected
        event = CheckedEvent(
            dict(document), document.get("hash") == event_hash(dict(document)), link_ok
        )
        if not event.verified and first_break is None:
            first_break = sequence
        checked.append(event)
    return LinkedPage(tuple(reversed(checked)), first_break, tuple(unanchored))
