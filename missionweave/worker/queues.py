"""A Worker's inbox, work queue and held items in one group, folded from the group's events.

R0-01, R0-02, R11.1-01, R11.1-02 (MWP-WRK-008): per group it belongs to, a Worker keeps its own
inbox, cursor and work queue, and they are projections of that group's accepted events
(wire.md §6), rebuildable by replay. Nothing here is authoritative (R11.1-03): ownership,
leases and WorkItem state live in the group log; the worker acts on this view and the authority
refuses whatever is stale (``STALE_OWNERSHIP``, ``STALE_LEASE``).

One group's state is plain JSON data, ``rows[kind][key] -> row``:

- ``membership`` (key ``""``): this worker's roles and membership epoch, and whether active;
- ``item`` (key: WorkItem id): what the worker must remember of every live WorkItem of the
  group to judge an offer or order its queue: mission, contract revision, scheduling terms,
  the execution approvals of the current revision and the last checkpoint. An offer names
  only the item, so the contract has to be known from ``work.authorized``; verified and
  cancelled items are forgotten (terminal, R10.2-19);
- ``offer`` (key: WorkItem id): the open offer made to this worker (R10.3-01);
- ``work`` (key: WorkItem id): the items this worker owns — ``queued`` (the work queue),
  ``active`` (held under a lease) or ``blocked`` (still owned, R11.4-05) — with what the
  scheduler needs and the checkpoint to resume from (R11.3-12);
- ``inbox`` (key: zero-padded index) and ``inbox_head``: offers to this worker, what happens
  to them, messages and questions on its items, its membership changes, the items and leases
  it loses — the latest ``INBOX_LIMIT`` entries (the log keeps them all).

``evolve(rows, event, worker)`` is the fold: pure, it returns only the rows the event changes
(``None`` deletes one). ``apply``, ``replay`` and the durable ``local_store`` all fold through
it, so a live projection and a replay cannot drift apart (as ``protocol.decider.apply``), and
the store writes exactly those rows in the transaction that moves the cursor. Rows are never
mutated in place: a fold builds new dicts, so a state handed out earlier stays as it was.
Event types this worker has no use for change nothing.

Three modules: the rows' kinds and shapes (``queue_rows.py``), the fold (``queue_folds.py``),
and here one group's state, its snapshot, ``apply`` and ``replay``. The names of the first two
are re-exported, so callers import the projection from one place.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from missionweave.client.errors import ChainBroken
from missionweave.protocol import states as S
from missionweave.protocol.canonical import ZERO_HASH, digest, without
from missionweave.protocol.events import chains

from .queue_folds import evolve, fold_into, folded_types, inbox_key
from .queue_rows import (
    INBOX,
    INBOX_HEAD,
    INBOX_LIMIT,
    ITEM,
    KINDS,
    MEMBERSHIP,
    OFFER,
    SNAPSHOT_FORMAT,
    WORK,
    Changes,
    Event,
    Gate,
    InboxEntry,
    ItemRow,
    Key,
    LeaseRow,
    MembershipRow,
    OfferRow,
    Rows,
    Terms,
    WorkRow,
    gate_is_open,
    gate_of,
    terms_of,
)

__all__ = [
    "INBOX",
    "INBOX_HEAD",
    "INBOX_LIMIT",
    "ITEM",
    "KINDS",
    "MEMBERSHIP",
    "OFFER",
    "SNAPSHOT_FORMAT",
    "WORK",
    "Changes",
    "Event",
    "Gate",
    "GroupQueues",
    "InboxEntry",
    "ItemRow",
    "Key",
    "LeaseRow",
    "MembershipRow",
    "OfferRow",
    "Rows",
    "SnapshotInvalid",
    "Terms",
    "WorkRow",
    "apply",
    "evolve",
    "fold_into",
    "folded_types",
    "gate_is_open",
    "gate_of",
    "inbox_key",
    "replay",
    "terms_of",
]


# --- one group's state ---------------------------------------------------------------------------


class SnapshotInvalid(ValueError):
    """A local snapshot that is not this projection's, or whose digest does not hold."""


@dataclass(frozen=True, slots=True)
class GroupQueues:
    """One group's projection for one worker, at ``sequence`` (whose hash is ``event_hash``)."""

    group: str
    worker: str
    sequence: int = 0
    event_hash: str = ZERO_HASH
    rows: Rows = field(default_factory=dict)

    def of(self, kind: str) -> Mapping[str, Any]:
        return self.rows.get(kind, {})

    @property
    def membership(self) -> MembershipRow | None:
        return self.of(MEMBERSHIP).get("")

    def _work(self, state: str) -> list[WorkRow]:
        rows = [row for row in self.of(WORK).values() if row["state"] == state]
        return sorted(rows, key=lambda row: (row["queued_sequence"], row["work_item"]))

    def queue(self) -> list[WorkRow]:
        """The work queue: owned items in ``queued``, oldest first (R11.1-01)."""
        return self._work(S.QUEUED)

    def active(self) -> list[WorkRow]:
        """The items held under a lease (R11.3-03)."""
        return self._work(S.ACTIVE)

    def blocked(self) -> list[WorkRow]:
        return self._work(S.BLOCKED)

    def owned(self, work_item: str) -> WorkRow | None:
        return self.of(WORK).get(work_item)

    def item(self, work_item: str) -> ItemRow | None:
        return self.of(ITEM).get(work_item)

    def offers(self) -> list[OfferRow]:
        """Open offers to this worker, oldest first."""
        return sorted(self.of(OFFER).values(), key=lambda row: row["offered_sequence"])

    def inbox(self, after: int = -1) -> list[InboxEntry]:
        """Inbox entries with an index above ``after``, in order."""
        entries = self.of(INBOX)
        return [entries[key] for key in sorted(entries) if entries[key]["index"] > after]

    def checkpoints(self) -> dict[str, dict[str, Any]]:
        """The last checkpoint of each owned item that has one (R11.3-12)."""
        return {
            ident: row["resume_from"]
            for ident, row in sorted(self.of(WORK).items())
            if row["resume_from"] is not None
        }

    def snapshot(self) -> dict[str, Any]:
        """A local snapshot: restoring it and replaying the events after ``sequence`` gives
        the state a full replay gives (R11.1-02, MWP-WRK-029)."""
        document = {
            "format": SNAPSHOT_FORMAT,
            "group": self.group,
            "worker": self.worker,
            "sequence": self.sequence,
            "event_hash": self.event_hash,
            "rows": {kind: dict(rows) for kind, rows in self.rows.items()},
        }
        return {**document, "digest": digest(document)}

    @classmethod
    def from_snapshot(cls, document: Mapping[str, Any]) -> GroupQueues:
        if document.get("format") != SNAPSHOT_FORMAT:
            raise SnapshotInvalid(f"not a {SNAPSHOT_FORMAT} snapshot")
        if digest(without(dict(document), "digest")) != document.get("digest"):
            raise SnapshotInvalid("the snapshot's digest does not hold")
        rows = {kind: dict(found) for kind, found in document["rows"].items() if found}
        group, worker = document["group"], document["worker"]
        return cls(group, worker, document["sequence"], document["event_hash"], rows)


def _require_next(group: str, sequence: int, event_hash: str, event: Event) -> None:
    """Only the next event of this group, chained onto the last one (R16-03, wire.md §6)."""
    if event.get("group") != group:
        raise ChainBroken(group, sequence + 1, f"an event of group {event.get('group')!r}")
    if not chains(dict(event), previous_hash=event_hash, previous_sequence=sequence):
        raise ChainBroken(group, sequence + 1, f"event {event.get('sequence')} does not chain")


def apply(state: GroupQueues, event: Event) -> GroupQueues:
    """The state after ``event``, the next event of the group (pure)."""
    _require_next(state.group, state.sequence, state.event_hash, event)
    changes = evolve(state.rows, event, state.worker)
    touched = {kind for kind, _key in changes}
    rows = {kind: dict(state.rows.get(kind, {})) for kind in touched}
    fold_into(rows, changes)  # copies of the kinds it changes only: the rest is shared
    merged = {kind: found for kind, found in state.rows.items() if kind not in touched}
    merged.update(rows)
    return replace(state, sequence=event["sequence"], event_hash=event["hash"], rows=merged)


def replay(
    events: Iterable[Event], *, group: str, worker: str, start: GroupQueues | None = None
) -> GroupQueues:
    """Fold ``events`` — the group's, in order, after ``start`` (a local snapshot) or from the
    first — into a fresh state: what a rebuild gives (R11.1-02)."""
    state = start or GroupQueues(group, worker)
    if (state.group, state.worker) != (group, worker):
        raise SnapshotInvalid(f"a snapshot of {state.group}/{state.worker}")
    rows = {kind: dict(kind_rows) for kind, kind_rows in state.rows.items()}
    sequence, event_hash = state.sequence, state.event_hash
    for event in events:
        _require_next(group, sequence, event_hash, event)
        fold_into(rows, evolve(rows, event, worker))
        sequence, event_hash = event["sequence"], event["hash"]
    return GroupQueues(group, worker, sequence, event_hash, rows)
