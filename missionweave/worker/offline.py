"""Bounded offline execution on the worker's side (R11.5-04..R11.5-09).

When the authority cannot be reached, a worker MAY keep already-active reversible work going
for a bounded grace period and buffer signed progress and checkpoints (R11.5-04); it MUST NOT
start new WorkItems or take new externally visible actions (R11.5-05), and MUST reconcile on
reconnection before submitting (R11.5-06). The server side already judges such commands
(``missionweave.protocol.offline``, docs/protocol.md "Bounded offline execution"); this module
produces exactly the wire shape it reads, and invents none:

- each buffered command carries, in ``extensions``, the binding under ``offline.EXTENSION``
  with every field R11.5-08 lists (``binding``);
- it is signed when buffered, with the historical session epoch (R11.5-04 "signed"), and kept
  durably in a SQLite file beside the queues, so a crash while offline loses none of it;
- on reconnection the same command id, body and binding are sent again through
  ``AgentClient.submit``, which re-signs the envelope with the current ``issued_at``, session
  epoch and membership epoch (R11.5-09). The authority treats a retry as an idempotent replay,
  so a buffered command that was in fact received before the outage is charged once.

``usage`` is the six-dimension delta the item used since its last charge (R11.5-08): what the
handler charged and what the runtime metered (``metering.py``). A ``work.usage`` cannot be
buffered, so offline usage rides in the binding of a buffered progress report, and the
authority charges it on reconciliation with ``resource_usage_recorded`` (R11.5-12) — or
refuses the report with it on overflow (R11.5-13).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from missionweave.client.errors import ApiError, Unavailable
from missionweave.protocol.envelope import signed_envelope
from missionweave.protocol.offline import BUFFERABLE, EXTENSION, MAX_GRACE
from missionweave.protocol.timefmt import format_timestamp

from .authority import Authority

_SCHEMA = """
CREATE TABLE IF NOT EXISTS buffered (
    position INTEGER PRIMARY KEY AUTOINCREMENT,
    command_id TEXT NOT NULL UNIQUE,
    group_id TEXT NOT NULL,
    type TEXT NOT NULL,
    body TEXT NOT NULL,
    binding TEXT NOT NULL,
    envelope TEXT NOT NULL
);
"""


def binding(
    *,
    agent: str,
    group: str,
    work_item: str,
    session_epoch: int,
    ownership_epoch: int,
    lease_id: str,
    disconnected_at: datetime,
    buffered_at: datetime,
    grace_deadline: datetime,
    lease_expires_at: datetime,
    usage: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """The R11.5-08 binding of one buffered command: under which historical lease, session and
    ownership epoch, and when (all on the worker's clock; the authority bounds them by its
    own record, R11.5-10), with the usage delta it carries (its non-zero dimensions)."""
    return {
        "agent": agent,
        "group": group,
        "work_item": work_item,
        "session_epoch": session_epoch,
        "ownership_epoch": ownership_epoch,
        "lease_id": lease_id,
        "disconnected_at": format_timestamp(disconnected_at),
        "buffered_at": format_timestamp(buffered_at),
        "grace_deadline": format_timestamp(grace_deadline),
        "lease_expires_at": format_timestamp(lease_expires_at),
        "usage": {dimension: amount for dimension, amount in (usage or {}).items() if amount},
    }


def grace_deadline(lease_expires_at: datetime, grace_s: float) -> datetime:
    """The end of the grace period: the lease's expiry plus the configured grace, never more
    than the protocol's ``MAX_GRACE`` (the authority refuses a longer claim, R11.5-10)."""
    return lease_expires_at + min(timedelta(seconds=grace_s), MAX_GRACE)


@dataclass(frozen=True, slots=True)
class Buffered:
    position: int
    command_id: str
    group: str
    type: str
    body: dict[str, Any]
    binding: dict[str, Any]


#: what became of one buffered command on reconnection: ``None`` accepted, else the refusal
Reconciled = Callable[[Buffered, ApiError | None], None]


class OfflineBuffer:
    """The buffered commands, in the order they were produced, durable in ``path``."""

    def __init__(self, path: str | Path, *, key: Ed25519PrivateKey, actor: str) -> None:
        self._key = key
        self._actor = actor
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def add(
        self,
        *,
        group: str,
        type_: str,
        body: dict[str, Any],
        bound: dict[str, Any],
        membership_epoch: int,
    ) -> str:
        """Buffer one progress report or checkpoint (R11.5-04), signed now under the binding's
        historical session; its command id."""
        if type_ not in BUFFERABLE:
            raise ValueError(f"{type_} cannot be buffered (R11.5-05, R11.5-06)")
        command_id = f"cmd-{uuid.uuid4().hex}"
        document = {
            "id": command_id,
            "type": type_,
            "group": group,
            "actor": self._actor,
            "session_epoch": bound["session_epoch"],
            "membership_epoch": membership_epoch,
            "issued_at": bound["buffered_at"],
            "body": body,
            "extensions": {EXTENSION: bound},
        }
        envelope = signed_envelope(self._key, document)
        with self._lock:
            self._db.execute(
                "INSERT INTO buffered (command_id, group_id, type, body, binding, envelope) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (command_id, group, type_, _json(body), _json(bound), _json(envelope)),
            )
        return command_id

    def pending(self) -> list[Buffered]:
        with self._lock:
            rows = self._db.execute(
                "SELECT position, command_id, group_id, type, body, binding FROM buffered "
                "ORDER BY position"
            ).fetchall()
        return [
            Buffered(position, command_id, group, type_, json.loads(body), json.loads(bound))
            for position, command_id, group, type_, body, bound in rows
        ]

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM buffered").fetchone()[0])

    def _drop(self, position: int) -> None:
        with self._lock:
            self._db.execute("DELETE FROM buffered WHERE position = ?", (position,))

    def flush(self, authority: Authority, on_reconciled: Reconciled | None = None) -> bool:
        """Send every buffered command again, oldest first, re-signed by the client with the
        current session (R11.5-09); True once the buffer is empty.

        A refusal (outside the grace window, a changed owner, an overflowing budget) is final
        for that command: it is dropped and reported to ``on_reconciled``. ``Unavailable``
        stops the flush with the rest kept, in order, for the next attempt."""
        for entry in self.pending():
            try:
                authority.submit(
                    entry.group,
                    entry.type,
                    entry.body,
                    entry.command_id,
                    extensions={EXTENSION: entry.binding},
                )
                refusal: ApiError | None = None
            except ApiError as error:
                refusal = error
            except Unavailable:
                return False
            self._drop(entry.position)
            if on_reconciled is not None:
                on_reconciled(entry, refusal)
        return True


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)
