"""Durable per-group cursors and a verified, deduplicated, in-order event feed (R16).

``CursorStore`` keeps, in a local SQLite file, each group's cursor — the highest contiguous
sequence this agent has durably processed (R16-06, MWP-WRK-030) — with that event's hash, so
the chain can be verified across restarts, and the ids of processed events (R16-02).

``EventFeed.deliver`` is the one place events enter the agent, whatever carried them (REST
pages here, the websocket stream later):

* an event id already processed, or a sequence at or below the cursor, is a duplicate of
  at-least-once delivery (R0-14, R16-01, R16-09) and is dropped — after checking that it is the
  same event that was processed at that sequence;
* an event beyond ``cursor + 1`` is buffered in memory (R16-04); the cursor never moves over
  the gap (R16-05);
* the next event must chain onto the stored hash (wire.md §6): otherwise ``ChainBroken``
  names its sequence and nothing more of that group is processed;
* the handler runs first, the cursor is persisted after it returned (R16-03), so a crash
  between the two redelivers the event rather than losing it.

An event whose ``hash`` is not the digest of its content is refused on arrival, before it is
buffered or compared with anything: its other fields cannot be trusted, so the error names
the first sequence this client has not verified (``cursor + 1``), not the one it claims.

When the position is older than the online log (``CURSOR_TOO_OLD``, R16-10) the feed restores
the signed snapshot the authority names — canonical bytes, its digest and the authority's
signature all checked (R16-11, ``SnapshotRejected`` otherwise) — hands it to ``on_snapshot``
and moves the cursor to its sequence and event hash, so the next event must chain onto it.
``verify_head`` checks the verified chain against the authority-signed head (wire.md §4).

The store also keeps the highest signed head per group this client received and verified the
signature of (``known_head``). A later head, snapshot or event that contradicts it — another
hash at its sequence, a head behind it, a head not following it — is ``HistoryForked``,
naming both (:mod:`missionweave.protocol.heads`; issue 33 §2): a history rewritten after this
client saw a head cannot be served to it unseen, even across restarts.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from missionweave.protocol.canonical import ZERO_HASH
from missionweave.protocol.events import event_hash
from missionweave.protocol.heads import Contradiction, event_contradiction, head_contradiction
from missionweave.protocol.snapshots import SnapshotRefused, verify_snapshot

from .agent import AgentClient
from .errors import ApiError, ChainBroken, HistoryForked, SnapshotRejected

Handler = Callable[[dict[str, Any]], None]
SnapshotHandler = Callable[[dict[str, Any]], None]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS cursors (
    group_id TEXT PRIMARY KEY,
    sequence INTEGER NOT NULL,
    hash TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS processed (
    group_id TEXT NOT NULL,
    event_id TEXT NOT NULL,
    sequence INTEGER NOT NULL,
    PRIMARY KEY (group_id, event_id)
);
CREATE UNIQUE INDEX IF NOT EXISTS processed_sequence ON processed (group_id, sequence);
CREATE TABLE IF NOT EXISTS heads (
    group_id TEXT PRIMARY KEY,
    sequence INTEGER NOT NULL,
    document TEXT NOT NULL
);
"""


class CursorStore:
    """Per-group durable cursors in a SQLite file (stdlib ``sqlite3``, WAL, synchronous FULL
    so a committed cursor survives a power cut). One connection shared by the threads of an
    agent (a stream follower thread, the REST catch-up), serialised by a lock.

    One process owns a file: the positions it committed are also kept in memory, so reading
    the cursor (several times per event) costs no query."""

    def __init__(self, path: str | Path) -> None:
        self._lock = threading.RLock()
        self._db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(_SCHEMA)
        self._positions: dict[str, tuple[int, str]] = {
            group: (int(sequence), str(hash_))
            for group, sequence, hash_ in self._db.execute(
                "SELECT group_id, sequence, hash FROM cursors"
            )
        }
        self._heads: dict[str, dict[str, Any]] = {
            group: json.loads(document)
            for group, document in self._db.execute("SELECT group_id, document FROM heads")
        }

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _one(self, sql: str, params: tuple[Any, ...]) -> tuple[Any, ...] | None:
        with self._lock:
            return self._db.execute(sql, params).fetchone()

    def position(self, group: str) -> tuple[int, str]:
        """``(cursor, hash of that event)``; ``(0, ZERO_HASH)`` before the first event."""
        with self._lock:
            return self._positions.get(group, (0, ZERO_HASH))

    def cursor(self, group: str) -> int:
        return self.position(group)[0]

    def cursors(self) -> dict[str, int]:
        """Every group's cursor (what an ``ACK`` frame reports, R16-07): the highest
        contiguous durable position of each group (R0-16)."""
        with self._lock:
            return {group: sequence for group, (sequence, _) in self._positions.items()}

    def known_head(self, group: str) -> dict[str, Any] | None:
        """The highest signed head of ``group`` this client verified, if any."""
        with self._lock:
            return self._heads.get(group)

    def remember_head(self, group: str, head: dict[str, Any]) -> None:
        """Keep ``head`` (signature verified, contradicting nothing known) if it is higher
        than the one kept."""
        with self._lock:
            known = self._heads.get(group)
            if known is not None and known["sequence"] >= head["sequence"]:
                return
            with self._transaction():
                self._db.execute(
                    "INSERT INTO heads (group_id, sequence, document) VALUES (?, ?, ?) "
                    "ON CONFLICT (group_id) DO UPDATE SET sequence = excluded.sequence, "
                    "document = excluded.document",
                    (group, head["sequence"], json.dumps(head)),
                )
            self._heads[group] = head

    def processed_id_at(self, group: str, sequence: int) -> str | None:
        row = self._one(
            "SELECT event_id FROM processed WHERE group_id = ? AND sequence = ?", (group, sequence)
        )
        return str(row[0]) if row else None

    def processed_sequence_of(self, group: str, event_id: str) -> int | None:
        row = self._one(
            "SELECT sequence FROM processed WHERE group_id = ? AND event_id = ?", (group, event_id)
        )
        return int(row[0]) if row else None

    def advance(self, group: str, event: dict[str, Any]) -> None:
        """Record ``event`` as processed and move the cursor onto it, in one transaction.

        Only ever by one: the cursor is contiguous (R16-05, R16-06)."""
        sequence = int(event["sequence"])
        with self._lock:
            current, _ = self.position(group)
            if sequence != current + 1:
                raise ValueError(f"cursor {current} cannot advance to {sequence} (R16-05)")
            self._move(group, sequence, event["hash"], processed=event["event_id"])

    def restore(self, group: str, sequence: int, event_hash_at: str) -> None:
        """Move the cursor forward to a verified snapshot's position (R16-10): the events up
        to ``sequence`` are represented by the snapshot, and the next one must chain onto
        ``event_hash_at``. Never backwards."""
        with self._lock:
            current, _ = self.position(group)
            if sequence <= current:
                raise ValueError(f"cursor {current} cannot be restored back to {sequence}")
            self._move(group, sequence, event_hash_at, processed=None)

    def _move(self, group: str, sequence: int, hash_: str, *, processed: str | None) -> None:
        """Commit the new position (and the processed event id), then remember it."""
        with self._transaction():
            self._db.execute(
                "INSERT INTO cursors (group_id, sequence, hash) VALUES (?, ?, ?) "
                "ON CONFLICT (group_id) DO UPDATE SET sequence = excluded.sequence, "
                "hash = excluded.hash",
                (group, sequence, hash_),
            )
            if processed is not None:
                self._db.execute(
                    "INSERT INTO processed (group_id, event_id, sequence) VALUES (?, ?, ?)",
                    (group, processed, sequence),
                )
        self._positions[group] = (sequence, hash_)

    def _transaction(self) -> _Transaction:
        return _Transaction(self._db)


class _Transaction:
    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, *_rest: object) -> None:
        self._db.execute("ROLLBACK" if exc_type else "COMMIT")


class EventFeed:
    """One group's events, verified and in order, handed to ``handler`` exactly once per
    durable cursor position (at least once across a crash inside the handler, R16-01).

    Order is the group's own (R0-17): one feed and one cursor per group, and nothing here
    waits for, or compares with, another group's sequence."""

    def __init__(
        self,
        client: AgentClient,
        store: CursorStore,
        group: str,
        handler: Handler,
        *,
        on_snapshot: SnapshotHandler | None = None,
    ) -> None:
        self.client = client
        self.store = store
        self.group = group
        self.handler = handler
        self.on_snapshot = on_snapshot
        self._buffer: dict[int, dict[str, Any]] = {}  # out-of-order events (R16-04)
        self.duplicates = 0  # dropped as already processed (R16-02)
        self.restored: list[int] = []  # the sequences of the snapshots restored

    @property
    def cursor(self) -> int:
        return self.store.cursor(self.group)

    @property
    def buffered(self) -> int:
        """How many events wait behind a gap (R16-04)."""
        return len(self._buffer)

    def catch_up(self, *, limit: int = 100, through: int | None = None) -> int:
        """Read ``GET /groups/{g}/events?after=cursor`` page by page until the head (or
        ``through``); return how many events the handler processed.

        ``CURSOR_TOO_OLD`` restores the snapshot it names and reads on from there (R16-10);
        a page that does not parse is refused naming ``cursor + 1``, the first event it held.
        """
        processed = 0
        while through is None or self.cursor < through:
            after = self.cursor
            size = limit if through is None else max(1, min(limit, through - after))
            try:
                page = self.client.get_json(
                    f"/groups/{self.group}/events", params={"after": after, "limit": size}
                )
            except ApiError as error:
                if error.code == "CURSOR_TOO_OLD":
                    self.restore(error.details.get("snapshot"))
                    continue
                if error.code == "UNEXPECTED_RESPONSE" and error.status == 200:
                    raise ChainBroken(self.group, after + 1, error.message) from None
                raise
            events = page.get("events")
            if not isinstance(events, list):
                raise ChainBroken(self.group, after + 1, "a page without an events list")
            for event in events:
                processed += self.deliver(event)
            head = page.get("head")
            if not events or (isinstance(head, int) and self.cursor >= head):
                return processed
            if self.cursor == after:
                # a page that moved nothing (all buffered behind a gap): read again from the
                # cursor rather than past the gap (R16-05)
                self._buffer.clear()
                return processed
        return processed

    def restore(self, reference: object) -> dict[str, Any]:
        """Restore the snapshot ``reference`` (``{sequence, digest, url}`` from a
        ``CURSOR_TOO_OLD``) once it verifies; return it.

        R16-11: the bytes must be the canonical snapshot, its digest the one referenced and
        its signature the authority's; anything else is ``SnapshotRejected`` naming the
        snapshot's sequence, and nothing moves. ``on_snapshot`` runs before the cursor moves
        (like the handler, R16-03), so a crash in between restores again.
        """
        if not isinstance(reference, dict):
            raise SnapshotRejected(self.group, self.cursor + 1, "reference", "none was offered")
        sequence, digest, url = (reference.get(k) for k in ("sequence", "digest", "url"))
        if not isinstance(sequence, int) or isinstance(sequence, bool) or sequence < 1:
            raise SnapshotRejected(self.group, self.cursor + 1, "reference", "no sequence")
        if not isinstance(digest, str) or not isinstance(url, str):
            raise SnapshotRejected(self.group, sequence, "reference", "no digest or url")
        if sequence <= self.cursor:
            raise SnapshotRejected(
                self.group, sequence, "sequence", f"not after the cursor {self.cursor}"
            )
        raw = self.client.get_bytes(url)
        try:
            document = verify_snapshot(
                raw, self.client.authority_key(), digest=digest, group=self.group, sequence=sequence
            )
        except SnapshotRefused as refused:
            raise SnapshotRejected(self.group, sequence, refused.what, str(refused)) from None
        at_snapshot = {"sequence": sequence, "hash": document["event_hash"]}
        self._refuse_contradiction(event_contradiction, at_snapshot, sequence)
        if self.on_snapshot is not None:
            self.on_snapshot(document)
        self.store.restore(self.group, sequence, document["event_hash"])
        self._buffer = {at: event for at, event in self._buffer.items() if at > sequence}
        self.restored.append(sequence)
        return document

    def verify_head(self) -> dict[str, Any]:
        """Check what this feed verified against the authority-signed head (wire.md §4):
        the head must not contradict the one kept (``HistoryForked``); then catch up to its
        sequence, where the cursor's hash must be the head's hash. Keep and return the head;
        ``ChainBroken`` at the head's sequence otherwise."""
        head = self.check_head()
        sequence, expected = head["sequence"], head.get("hash")
        if self.cursor < sequence:
            self.catch_up(through=sequence)
        cursor, verified_hash = self.store.position(self.group)
        if cursor == sequence and verified_hash != expected:
            raise ChainBroken(self.group, sequence, "the verified chain is not the signed head")
        if cursor < sequence:
            raise ChainBroken(self.group, cursor + 1, "could not reach the signed head")
        return head

    def check_head(self) -> dict[str, Any]:
        """Read the signed head and hold it against what this client verified, without
        reading events (safe beside a stream thread that delivers them): it must follow the
        head kept (``HistoryForked``) and not be behind the events already processed. Then it
        is kept, and the feed checks the event at its sequence when it gets there."""
        # the position first: every event processed before the head is read is at or below it,
        # whatever a stream thread processes meanwhile
        cursor, verified_hash = self.store.position(self.group)
        head = self.client.signed_head(self.group)
        sequence = head.get("sequence")
        if not isinstance(sequence, int) or isinstance(sequence, bool):
            raise ChainBroken(self.group, self.cursor + 1, "a signed head without a sequence")
        if head.get("group") != self.group:
            raise ChainBroken(self.group, self.cursor + 1, f"a head of {head.get('group')!r}")
        self._refuse_contradiction(head_contradiction, head, sequence)
        if sequence < cursor:
            raise HistoryForked(
                self.group,
                sequence,
                f"history was cut: the signed head {sequence} is behind event {cursor}, "
                "already verified",
                known={"group": self.group, "sequence": cursor, "hash": verified_hash},
                offered=head,
            )
        if sequence == cursor and head.get("hash") != verified_hash:
            raise HistoryForked(
                self.group,
                sequence,
                f"fork: the signed head {sequence} is not the event verified there",
                known={"group": self.group, "sequence": cursor, "hash": verified_hash},
                offered=head,
            )
        self.store.remember_head(self.group, head)
        return head

    def _refuse_contradiction(
        self,
        check: Callable[[dict[str, Any], dict[str, Any]], Contradiction | None],
        offered: dict[str, Any],
        sequence: int,
    ) -> None:
        """``HistoryForked`` when ``offered`` contradicts the head kept for this group."""
        known = self.store.known_head(self.group)
        contradiction = None if known is None else check(known, offered)
        if contradiction is not None:
            self._buffer.clear()
            raise HistoryForked(
                self.group, sequence, str(contradiction), known=contradiction.known, offered=offered
            )

    def deliver(self, event: dict[str, Any]) -> int:
        """Take one event from any transport; return how many events were processed (the
        event itself and any buffered ones it unblocked)."""
        sequence = event.get("sequence")
        if not isinstance(sequence, int) or isinstance(sequence, bool) or sequence < 1:
            raise ChainBroken(self.group, self.cursor + 1, "event without a valid sequence")
        if event.get("group") != self.group:
            raise ChainBroken(self.group, self.cursor + 1, f"event of group {event.get('group')!r}")
        cursor, _ = self.store.position(self.group)
        if event.get("hash") != event_hash(event):
            # its fields cannot be trusted, the sequence included: name the first one not
            # verified yet
            self._buffer.clear()
            raise ChainBroken(
                self.group, cursor + 1, f"claims sequence {sequence}, hash is not its digest"
            )
        event_id = event.get("event_id")
        known_at = self.store.processed_sequence_of(self.group, str(event_id))
        if sequence <= cursor or known_at is not None:
            self._check_duplicate(event, known_at)
            self.duplicates += 1
            return 0
        if sequence > cursor + 1:
            self._buffer[sequence] = event  # R16-04; the cursor waits at the gap (R16-05)
            return 0
        processed = 0
        pending: dict[str, Any] | None = event
        while pending is not None:
            self._process(pending)
            processed += 1
            pending = self._buffer.pop(int(pending["sequence"]) + 1, None)
        return processed

    def _check_duplicate(self, event: dict[str, Any], known_at: int | None) -> None:
        """A redelivered event must be the one processed at its sequence: the same id at the
        same place. Anything else means the log we were served changed under us."""
        sequence = int(event["sequence"])
        if known_at is not None and known_at != sequence:
            raise ChainBroken(
                self.group, sequence, f"event id already processed at sequence {known_at}"
            )
        processed_id = self.store.processed_id_at(self.group, sequence)
        if processed_id is not None and processed_id != event.get("event_id"):
            raise ChainBroken(self.group, sequence, "another event was processed at this sequence")

    def _process(self, event: dict[str, Any]) -> None:
        """Hand one event to the handler; its own hash was checked on arrival (``deliver``),
        here it must chain onto the stored one."""
        cursor, previous_hash = self.store.position(self.group)
        sequence = int(event["sequence"])
        if event.get("prev_hash") != previous_hash:
            self._buffer.clear()
            raise ChainBroken(self.group, sequence, "prev_hash is not the previous event's hash")
        assert sequence == cursor + 1
        self._refuse_contradiction(event_contradiction, event, sequence)
        self.handler(event)  # may raise: then the cursor stays where it was
        self.store.advance(self.group, event)  # durable only after the handler (R16-03)
