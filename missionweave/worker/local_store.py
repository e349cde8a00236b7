"""The worker's queues made durable: one SQLite file holding, per group, the cursor and the
projection of ``queues``, moved together (R11.1-01, R11.1-02, R16-02..06; MWP-WRK-008, -029,
-030).

Why ``QueueStore`` extends ``missionweave.client.feed.CursorStore`` instead of sitting beside
it: ``EventFeed`` hands each verified, deduplicated, in-order event to its handler and then
calls ``store.advance``, which commits the cursor on its own. A projection written by the
handler would commit separately, and a crash between the two commits redelivers the event
(R16-01, at least once) to a fold that is not idempotent (an inbox entry, an approval) — the
event would be applied twice. So the fold moves into ``advance``: it computes the rows the
event changes (``queues.evolve``) and writes them in the SQLite transaction in which
CursorStore records the event id and moves the cursor; either all three are durable or none
is, and a redelivered event is dropped by id (R16-02). The cursor's SQL stays CursorStore's:
this store's transaction hook is re-entrant, so the parent's move joins the transaction opened
around it rather than committing by itself.

Everything else of the feed is reused as it is: ``EventFeed`` verifies the hash chain, drops
duplicates, buffers out-of-order events in memory and never moves the cursor over a gap
(R16-04, R16-05); ``QueueStore.feed`` wires it to this store. A restart reopens the file: the
projection and the cursor are the last committed pair, and the stream resumes after that
cursor (R16-09) — restore and ordered replay, deduplicated by event id, never past a gap
(R0-15). The ACK position is CursorStore's ``cursors()``: the highest contiguous
sequence durably applied (R16-06, R16-07, MWP-WRK-030).

Beside the projection, ``kept_results`` holds the results a handler finished while the
authority could not be reached (``kept.py``): not a projection of the log but this worker's own
durable memory, which no replay rebuilds and no snapshot replaces.

A group is rebuilt from a snapshot — this worker's own (``GroupQueues.snapshot``) or the
authority's (``CURSOR_TOO_OLD``, R16-10, through ``EventFeed.restore``; the projection it gives
is derived by ``from_group_snapshot`` at the end of this module) — and the ordered replay of
the events after it; from nothing, by replaying every event through ``advance``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from missionweave.client.agent import AgentClient
from missionweave.client.errors import ChainBroken
from missionweave.client.feed import CursorStore, EventFeed
from missionweave.protocol import states as S
from missionweave.protocol.events import chains

from .queues import (
    INBOX,
    ITEM,
    MEMBERSHIP,
    OFFER,
    WORK,
    Changes,
    GroupQueues,
    InboxEntry,
    ItemRow,
    LeaseRow,
    MembershipRow,
    OfferRow,
    SnapshotInvalid,
    WorkRow,
    evolve,
    fold_into,
    gate_of,
    terms_of,
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS worker_identity (
    worker TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS worker_rows (
    group_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (group_id, kind, key)
);
CREATE TABLE IF NOT EXISTS kept_results (
    group_id TEXT NOT NULL,
    work_item TEXT NOT NULL,
    document TEXT NOT NULL,
    PRIMARY KEY (group_id, work_item)
);
"""

#: called after an event's rows and cursor are committed: ``(group, event, changes)``
Applied = Callable[[str, dict[str, Any], Changes], None]


class WrongWorker(ValueError):
    """The file holds another worker's queues (R0-01: contexts are never merged)."""


def _encode(row: Any) -> str:
    return json.dumps(row, sort_keys=True, separators=(",", ":"), allow_nan=False)


def _ignore(event: dict[str, Any]) -> None:
    """The feed's handler: the fold runs in ``QueueStore.advance``, inside the transaction."""


class _Joined:
    """A transaction an inner one joins: only the outermost begins and commits."""

    def __init__(self, store: QueueStore) -> None:
        self.store = store

    def __enter__(self) -> None:
        if self.store._depth == 0:
            self.store._db.execute("BEGIN IMMEDIATE")
        self.store._depth += 1

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.store._depth -= 1
        if self.store._depth == 0:
            self.store._db.execute("ROLLBACK" if exc_type else "COMMIT")


class QueueStore(CursorStore):
    """Per-group cursors and queue projections of one worker in one SQLite file.

    One process owns the file, as for CursorStore: the committed state is also kept in memory,
    so reading a queue costs no query.
    """

    def __init__(self, path: str | Path, *, worker: str, on_applied: Applied | None = None) -> None:
        self._depth = 0
        super().__init__(path)
        self.worker = worker
        self.on_applied = on_applied
        #: the projection an authority snapshot gave, until ``restore`` commits it
        self._staged: dict[str, GroupQueues] = {}
        with self._lock:
            self._db.executescript(_SCHEMA)
            self._claim(worker)
            self._rows: dict[str, dict[str, dict[str, Any]]] = {}
            for group, kind, key, value in self._db.execute(
                "SELECT group_id, kind, key, value FROM worker_rows"
            ):
                self._rows.setdefault(group, {}).setdefault(kind, {})[key] = json.loads(value)

    def _claim(self, worker: str) -> None:
        row = self._db.execute("SELECT worker FROM worker_identity").fetchone()
        if row is None:
            with self._transaction():
                self._db.execute("INSERT INTO worker_identity (worker) VALUES (?)", (worker,))
        elif row[0] != worker:
            self._db.close()
            raise WrongWorker(f"this file holds the queues of {row[0]}, not {worker}")

    def _transaction(self) -> _Joined:  # type: ignore[override]
        return _Joined(self)

    # --- writing ------------------------------------------------------------------------------

    def advance(self, group: str, event: dict[str, Any]) -> None:
        """Fold ``event`` into ``group``'s projection and move the cursor onto it, in one
        transaction (MWP-WRK-029): only the next event, chained onto the cursor's hash."""
        with self._lock:
            sequence, previous_hash = self.position(group)
            if event.get("group") != group or not chains(
                event, previous_hash=previous_hash, previous_sequence=sequence
            ):
                raise ChainBroken(group, sequence + 1, "not the next event of the group (R16-05)")
            changes = evolve(self._rows.get(group, {}), event, self.worker)
            self._commit(group, lambda: super(QueueStore, self).advance(group, event), changes)
            fold_into(self._rows.setdefault(group, {}), changes)
        if self.on_applied is not None:
            self.on_applied(group, event, changes)

    def restore(self, group: str, sequence: int, event_hash_at: str) -> None:
        """Move ``group`` forward to a snapshot's position with the projection it gave, in one
        transaction (R16-10, R16-11). The projection must have been staged first:
        ``stage_group_snapshot`` (the ``on_snapshot`` of ``feed``) or ``restore_snapshot``."""
        with self._lock:
            state = self._staged.pop(group, None)
            if state is None or (state.sequence, state.event_hash) != (sequence, event_hash_at):
                raise SnapshotInvalid(
                    f"no projection staged for {group} at {sequence}: restore through feed()"
                )
            move = lambda: super(QueueStore, self).restore(group, sequence, event_hash_at)  # noqa: E731
            self._replace(group, state, move)

    def stage_group_snapshot(self, group: str, document: dict[str, Any]) -> None:
        """Derive this worker's projection from a verified authority snapshot (wire.md §7);
        ``restore`` commits it with the cursor."""
        if document.get("group") != group:
            raise SnapshotInvalid(f"a snapshot of {document.get('group')!r}, not {group!r}")
        state = from_group_snapshot(document, worker=self.worker)
        with self._lock:
            self._staged[group] = state

    def restore_snapshot(self, document: Mapping[str, Any]) -> GroupQueues:
        """Restore this worker's own local snapshot of a group (``GroupQueues.snapshot``);
        the events after its sequence follow through ``advance``. Forward only, like
        CursorStore's restore."""
        state = GroupQueues.from_snapshot(document)
        if state.worker != self.worker:
            raise SnapshotInvalid(f"a snapshot of {state.worker}'s queues, not {self.worker}'s")
        with self._lock:
            self._staged[state.group] = state
            self.restore(state.group, state.sequence, state.event_hash)
        return state

    def _commit(self, group: str, move_cursor: Callable[[], None], changes: Changes) -> None:
        """Write ``changes`` and move the cursor (CursorStore's SQL, joined) in one
        transaction; on any failure nothing is committed and the cursor in memory is put
        back."""
        before = self._positions.get(group)
        try:
            with self._transaction():
                self._write(group, changes)
                move_cursor()
        except BaseException:
            if before is None:
                self._positions.pop(group, None)
            else:
                self._positions[group] = before
            raise

    def _write(self, group: str, changes: Changes) -> None:
        upserts = [
            (group, kind, key, _encode(row))
            for (kind, key), row in changes.items()
            if row is not None
        ]
        deletes = [(group, kind, key) for (kind, key), row in changes.items() if row is None]
        if upserts:
            self._db.executemany(
                "INSERT INTO worker_rows (group_id, kind, key, value) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (group_id, kind, key) DO UPDATE SET value = excluded.value",
                upserts,
            )
        if deletes:
            self._db.executemany(
                "DELETE FROM worker_rows WHERE group_id = ? AND kind = ? AND key = ?", deletes
            )

    def _replace(self, group: str, state: GroupQueues, move_cursor: Callable[[], None]) -> None:
        current = self._rows.get(group, {})
        changes: Changes = {(kind, key): None for kind, rows in current.items() for key in rows}
        changes.update(
            {(kind, key): row for kind, rows in state.rows.items() for key, row in rows.items()}
        )
        self._commit(group, move_cursor, changes)
        self._rows[group] = {kind: dict(rows) for kind, rows in state.rows.items() if rows}

    # --- results kept across an offline shutdown (``kept.py``) ---------------------------------

    def keep_result(self, group: str, work_item: str, document: Mapping[str, Any]) -> None:
        """Record (or replace) the kept result of ``group``/``work_item``, committed at once."""
        with self._lock, self._transaction():
            self._db.execute(
                "INSERT INTO kept_results (group_id, work_item, document) VALUES (?, ?, ?) "
                "ON CONFLICT (group_id, work_item) DO UPDATE SET document = excluded.document",
                (group, work_item, _encode(document)),
            )

    def kept_results(self) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._db.execute(
                "SELECT document FROM kept_results ORDER BY group_id, work_item"
            ).fetchall()
        return [json.loads(document) for (document,) in rows]

    def forget_result(self, group: str, work_item: str) -> None:
        with self._lock, self._transaction():
            self._db.execute(
                "DELETE FROM kept_results WHERE group_id = ? AND work_item = ?", (group, work_item)
            )

    # --- reading ------------------------------------------------------------------------------

    def feed(
        self,
        client: AgentClient,
        group: str,
        *,
        handler: Callable[[dict[str, Any]], None] | None = None,
    ) -> EventFeed:
        """The verified, deduplicated, in-order feed of ``group`` into this store.

        ``handler`` runs before an event is folded and committed (CursorStore's contract);
        to act on the committed queues, use ``on_applied``."""
        return EventFeed(
            client,
            self,
            group,
            handler or _ignore,
            on_snapshot=lambda document: self.stage_group_snapshot(group, document),
        )

    def groups(self) -> list[str]:
        with self._lock:
            return sorted(set(self._rows) | set(self.cursors()))

    def state(self, group: str) -> GroupQueues:
        """A copy of ``group``'s committed projection at its cursor."""
        with self._lock:
            sequence, event_hash = self.position(group)
            rows = {kind: dict(found) for kind, found in self._rows.get(group, {}).items()}
        return GroupQueues(group, self.worker, sequence, event_hash, rows)

    def _of(self, group: str, kind: str) -> GroupQueues:
        with self._lock:
            rows = dict(self._rows.get(group, {}).get(kind, {}))
        return GroupQueues(group, self.worker, rows={kind: rows} if rows else {})

    def queue(self, group: str) -> list[WorkRow]:
        """``group``'s work queue, oldest first (R11.1-01)."""
        return self._of(group, WORK).queue()

    def active(self, group: str) -> list[WorkRow]:
        return self._of(group, WORK).active()

    def owned(self, group: str, work_item: str) -> WorkRow | None:
        return self._of(group, WORK).owned(work_item)

    def offers(self, group: str) -> list[OfferRow]:
        return self._of(group, OFFER).offers()

    def membership(self, group: str) -> MembershipRow | None:
        return self._of(group, MEMBERSHIP).membership

    def inbox(self, group: str, after: int = -1) -> list[InboxEntry]:
        return self._of(group, INBOX).inbox(after)

    def queued_everywhere(self) -> list[WorkRow]:
        """Every group's work queue (the scheduler's input, R11.1-04), group by group."""
        return [row for group in self.groups() for row in self.queue(group)]

    def snapshot(self, group: str) -> dict[str, Any]:
        """A local snapshot of ``group``'s projection at its cursor (``restore_snapshot``)."""
        return self.state(group).snapshot()


# --- the projection an authority snapshot gives (wire.md §7) -------------------------------------

#: the events after which a WorkItem waits ``queued`` for its owner
_QUEUEING = frozenset(
    {"work.offer_accepted", "work.checkpointed", "lease.revoked", "work.retry_scheduled",
     "work.unblocked"}
)  # fmt: skip


def _last_in_history(item: Mapping[str, Any], types: frozenset[str], default: int) -> int:
    sequences = [entry["sequence"] for entry in item.get("history", ()) if entry["type"] in types]
    return max(sequences, default=default)


def from_group_snapshot(document: Mapping[str, Any], *, worker: str) -> GroupQueues:
    """``worker``'s projection from a verified authority snapshot of its group (R16-10, R16-11),
    to continue with the events after its sequence.

    A snapshot holds the group's aggregates, not its history, so what only the history tells
    is approximated: the inbox starts empty (offers still open are in ``offer``), and an owned
    item's ``queued_at`` (an offer's ``offered_at``) is the snapshot's ``created_at`` — later
    than the truth by at most the snapshot's age, so queue ageing restarts no earlier than
    the snapshot; the sequences come from the item's bounded history.
    """
    group, sequence = document["group"], document["sequence"]
    projections = document["projections"]
    rows: dict[str, dict[str, Any]] = {}
    member = projections.get("membership", {}).get(worker)
    if member is not None:
        membership: MembershipRow = {
            "roles": list(member["roles"]),
            "epoch": member["epoch"],
            "active": member["active"],
        }
        rows[MEMBERSHIP] = {"": membership}
    for ident, item in sorted(projections.get("work_item", {}).items()):
        if item["state"] in S.TERMINAL:
            continue
        remembered: ItemRow = {
            "work_item": ident,
            "mission": item["mission"],
            "revision": item["revision"],
            "terms": terms_of(item["contract"]),
            "approvals": list(item["approvals"]),
            "refused_by": (item.get("refusal") or {}).get("principal"),
            "last_checkpoint": item.get("last_checkpoint"),
            "attempts": item.get("attempts", 0),
        }
        rows.setdefault(ITEM, {})[ident] = remembered
        offer = _open_offer_of(group, item, remembered, worker, document)
        if offer is not None:
            rows.setdefault(OFFER, {})[ident] = offer
        owned = _owned_of(group, item, remembered, worker, document)
        if owned is not None:
            rows.setdefault(WORK, {})[ident] = owned
    return GroupQueues(group, worker, sequence, document["event_hash"], rows)


def _open_offer_of(
    group: str,
    item: Mapping[str, Any],
    remembered: ItemRow,
    worker: str,
    document: Mapping[str, Any],
) -> OfferRow | None:
    if item["state"] != S.OFFERED:
        return None
    current = [o for o in item["offers"] if o["revision"] == item["revision"]]
    mine = [o for o in current if o["worker"] == worker and o["status"] == "open"]
    if not mine:
        return None
    offer = mine[-1]
    ahead = [
        {"offer": o["offer"], "expires_at": o["expires_at"]}
        for o in current
        if offer["mode"] == "sequential"
        and o["mode"] == "sequential"
        and o["rank"] < offer["rank"]
        and o["status"] == "open"
    ]
    return {
        "group": group,
        "work_item": item["id"],
        "mission": item["mission"],
        "offer": offer["offer"],
        "mode": offer["mode"],
        "rank": offer["rank"],
        "revision": offer["revision"],
        "expires_at": offer["expires_at"],
        "offered_at": document["created_at"],
        "offered_sequence": _last_in_history(
            item, frozenset({"work.offered"}), document["sequence"]
        ),
        "start_within_s": item.get("start_window_s"),
        "ahead": ahead,
        "terms": remembered["terms"],
    }


def _owned_of(
    group: str,
    item: Mapping[str, Any],
    remembered: ItemRow,
    worker: str,
    document: Mapping[str, Any],
) -> WorkRow | None:
    if item.get("owner") != worker or item["state"] not in (S.QUEUED, S.ACTIVE, S.BLOCKED):
        return None
    lease = item.get("lease")
    held: LeaseRow | None = None
    if item["state"] == S.ACTIVE and lease is not None:
        held = {
            "lease_id": lease["lease_id"],
            "ownership_epoch": lease["ownership_epoch"],
            "session_epoch": lease.get("session_epoch"),
            "started_at": lease["started_at"],
            "expires_at": lease["expires_at"],
            "status": "expired" if lease["status"] == "expired" else "active",
        }
    return {
        "group": group,
        "work_item": item["id"],
        "mission": item["mission"],
        "revision": item["revision"],
        "state": item["state"],
        "ownership_epoch": item["ownership_epoch"],
        "start_deadline": item.get("start_deadline"),
        "retry_at": item.get("retry_at"),
        "queued_at": document["created_at"],
        "queued_sequence": _last_in_history(item, _QUEUEING, document["sequence"]),
        "attempt": item.get("attempts", 0),
        "terms": remembered["terms"],
        "gate": gate_of(remembered["terms"], remembered),
        "lease": held,
        "resume_from": remembered["last_checkpoint"],
    }
