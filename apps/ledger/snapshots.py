"""Taking signed snapshots of a group (wire.md §4, §7; R16-10, R16-11).

Race-free without holding the group lock for a whole replay:

1. without the lock, read the head S₀ and replay events 1..S₀ into pure state with
   ``decider.apply`` (the same ``evolve`` the write path projects with);
2. take the group lock, read the head S (≥ S₀), fold the few events S₀+1..S that writers
   appended meanwhile, build and sign the snapshot at S, store it;
3. in the same transaction, submit ``snapshot.create`` through the write path, which
   re-locks the (already held) head row and appends ``snapshot.created`` at exactly S + 1.

So a snapshot at S is the state after event S and nothing later, the event that records it
is always the next one, and writers wait only for the tail fold, not for the full replay.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Max

from missionweave.protocol import decider, snapshots
from missionweave.protocol.canonical import canonical_bytes
from missionweave.protocol.events import chains
from missionweave.protocol.facts import Fact
from missionweave.protocol.timefmt import format_timestamp

from . import authority
from . import head as heads
from .history import history
from .models import GroupLog, Snapshot
from .replay import replay
from .write_path import Caller, Outcome, submit_as_human, submit_authority_command


class ChainBroken(RuntimeError):
    """The stored log does not chain: no snapshot is signed over a broken history."""


@dataclass(frozen=True, slots=True)
class Taken:
    snapshot: Snapshot
    outcome: Outcome


def take(group_id: str, record: Callable[[dict[str, Any]], Outcome]) -> Taken:
    """Snapshot ``group_id`` at its head S and record ``snapshot.created`` at S + 1.

    ``record`` submits the ``snapshot.create`` command with body ``{sequence, digest}`` (as
    the admin or as the authority); it runs inside this transaction, under the lock.
    """
    through = heads.committed_head(group_id) or 0
    base = replay(group_id, through=through)
    if base.chain_break is not None:
        raise ChainBroken(f"{group_id}: the log breaks at sequence {base.chain_break}")
    with transaction.atomic():
        head = heads.lock_existing_head(group_id)
        state, last_hash = base.state, base.head_hash
        previous = through
        for text in history(group_id, after=through, through=head.sequence):
            event = json.loads(text)
            if not chains(event, previous_hash=last_hash, previous_sequence=previous):
                raise ChainBroken(f"{group_id}: the log breaks at sequence {previous + 1}")
            decider.apply(state, Fact.of_event(event))
            last_hash, previous = event["hash"], event["sequence"]
        document = snapshots.sign_snapshot(
            authority.signing_key(),
            snapshots.build(
                group=group_id,
                sequence=head.sequence,
                event_hash=head.hash,
                state=state,
                created_at=format_timestamp(head.now),
                authority=authority.authority_id(),
            ),
        )
        digest = snapshots.snapshot_digest(document)
        snapshot = Snapshot.objects.create(
            group_id=group_id,
            sequence=head.sequence,
            digest=digest,
            document=canonical_bytes(document).decode("utf-8"),
            created_at=head.now,
        )
        outcome = record({"sequence": head.sequence, "digest": digest})
    return Taken(snapshot, outcome)


def take_as_admin(group_id: str, admin: Caller) -> Taken:
    """``POST /groups/{g}/snapshots``: ``snapshot.created``'s actor is the admin (wire.md §6)."""

    def record(body: dict[str, Any]) -> Outcome:
        return submit_as_human(
            caller=admin,
            group_id=group_id,
            type_=snapshots.CREATE,
            body=body,
            command_id=f"snapshot-{body['sequence']}",
            admin=True,
        )

    return take(group_id, record)


def take_as_authority(group_id: str) -> Taken:
    """The periodic task's snapshot: ``snapshot.created``'s actor is ``authority``."""

    def record(body: dict[str, Any]) -> Outcome:
        return submit_authority_command(
            group_id=group_id,
            type_=snapshots.CREATE,
            body=body,
            command_id=f"snapshot-{body['sequence']}",
        )

    return take(group_id, record)


def due_groups(every_events: int) -> list[str]:
    """Groups with at least ``every_events`` events after their last snapshot's own
    ``snapshot.created`` (or since the start of the log when there is none)."""
    last = dict(
        Snapshot.objects.values("group_id")
        .annotate(last=Max("sequence"))
        .values_list("group_id", "last")
    )
    due: list[str] = []
    for group_id, head in GroupLog.objects.order_by("group_id").values_list(
        "group_id", "head_sequence"
    ):
        recorded = last[group_id] + 1 if group_id in last else 0
        if head - recorded >= every_events:
            due.append(group_id)
    return due


def snapshot_due_groups(every_events: int | None = None) -> list[int]:
    """Snapshot every due group as the authority; the sequences snapshotted."""
    every = settings.MWP_SNAPSHOT_EVERY_EVENTS if every_events is None else every_events
    return [take_as_authority(group_id).snapshot.sequence for group_id in due_groups(every)]
