"""A page of a group's log as people see it: each event re-hashed and linked to its neighbour.

The dashboard never trusts a stored ``hash``: it recomputes every event's digest from the
canonical event without ``hash`` and checks that ``prev_hash`` is the previous event's hash
(wire.md §6). A page is checked from an *anchor*, the event just older than the page (or the
zero hash before sequence 1), so consecutive pages join into one verified chain.

Pure functions over wire documents: no database, so a tampered chain can be shown and tested
without touching the append-only table.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from missionweave.protocol.canonical import ZERO_HASH
from missionweave.protocol.events import event_hash, first_chain_break
from missionweave.protocol.timefmt import parse_timestamp

#: event-type prefixes that get their own badge colour; anything else is ``other``
FAMILIES = frozenset(
    {
        "mission", "work", "membership", "lease", "approval", "artifact", "evidence",
        "context", "snapshot", "ext",
    }
)  # fmt: skip


def event_family(event_type: object) -> str:
    """The badge family of an event type: its first dotted segment, if we know it."""
    family = str(event_type).split(".", 1)[0]
    return family if family in FAMILIES else "other"


VERDICT_LABELS = {
    "verified": "✓ verified",
    "hash-mismatch": "✗ hash mismatch",
    "broken-link": "✗ broken link",
}


def _recorded_at(document: dict[str, Any]) -> datetime | None:
    try:
        return parse_timestamp(document.get("recorded_at"))
    except ValueError:
        return None


@dataclass(frozen=True)
class CheckedEvent:
    """One event with the verdicts of its own hash and of its link to the previous event."""

    document: dict[str, Any]
    hash_ok: bool
    link_ok: bool

    @property
    def verified(self) -> bool:
        return self.hash_ok and self.link_ok

    @property
    def verdict(self) -> str:
        """``verified``, or which check failed first: the event's own hash, then its link."""
        if not self.hash_ok:
            return "hash-mismatch"
        return "verified" if self.link_ok else "broken-link"

    @property
    def verdict_label(self) -> str:
        return VERDICT_LABELS[self.verdict]

    @property
    def sequence(self) -> Any:
        return self.document.get("sequence")

    @property
    def type(self) -> str:
        return str(self.document.get("type", ""))

    @property
    def family(self) -> str:
        return event_family(self.type)

    @property
    def actor(self) -> str:
        return str(self.document.get("actor", ""))

    @property
    def command_id(self) -> str:
        return str(self.document.get("command_id", ""))

    @property
    def event_id(self) -> str:
        return str(self.document.get("event_id", ""))

    @property
    def hash(self) -> str:
        return str(self.document.get("hash", ""))

    @property
    def prev_hash(self) -> str:
        return str(self.document.get("prev_hash", ""))

    @property
    def recorded_at_text(self) -> str:
        return str(self.document.get("recorded_at", ""))

    @property
    def recorded_at(self) -> datetime | None:
        return _recorded_at(self.document)

    @property
    def payload_pretty(self) -> str:
        return json.dumps(self.document.get("payload"), indent=2, ensure_ascii=False)


@dataclass(frozen=True)
class CheckedPage:
    """Events of one page, newest first, and the verdict on the whole page."""

    events: tuple[CheckedEvent, ...]
    first_break: int | None
    anchor_sequence: int
    anchor_hash: str
    #: False when the event before the page is not online (archived): its link is assumed
    anchored: bool = True

    @property
    def verified(self) -> bool:
        return self.first_break is None


def check_page(
    documents: Sequence[dict[str, Any]],
    *,
    anchor_sequence: int,
    anchor_hash: str | None,
) -> CheckedPage:
    """Check ``documents`` (oldest first) as the continuation of the chain at the anchor.

    ``anchor_hash`` is the hash of the event at ``anchor_sequence`` (``ZERO_HASH`` before
    sequence 1), or ``None`` when that event is not available; the oldest event's own
    ``prev_hash`` is then taken on trust and the page says it is not anchored.
    """
    anchored = anchor_hash is not None
    if anchor_hash is None:
        anchor_hash = str(documents[0].get("prev_hash", "")) if documents else ZERO_HASH
    checked: list[CheckedEvent] = []
    previous_hash, previous_sequence = anchor_hash, anchor_sequence
    for document in documents:
        link_ok = (
            document.get("sequence") == previous_sequence + 1
            and document.get("prev_hash") == previous_hash
        )
        checked.append(
            CheckedEvent(document, document.get("hash") == event_hash(document), link_ok)
        )
        previous_hash = str(document.get("hash", ""))
        sequence = document.get("sequence")
        previous_sequence = sequence if isinstance(sequence, int) else previous_sequence + 1
    first_break = first_chain_break(
        documents, after_hash=anchor_hash, after_sequence=anchor_sequence
    )
    return CheckedPage(
        events=tuple(reversed(checked)),
        first_break=first_break,
        anchor_sequence=anchor_sequence,
        anchor_hash=anchor_hash,
        anchored=anchored,
    )
