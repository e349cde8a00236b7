"""What "a consistent group log" means, checked from the stored rows (wire.md §6).

Used by the concurrency, property and rebuild tests: sequences exactly 1..n, the head row at
n and the last hash, a hash chain that verifies, and live projections equal to a replay.
"""

from __future__ import annotations

import json
from typing import Any

from django.db import connection

from apps.ledger.models import Event, GroupLog
from apps.ledger.projections import load_all
from apps.ledger.replay import differences, replay
from missionweave.protocol.canonical import ZERO_HASH
from missionweave.protocol.events import first_chain_break


def event_documents(group_id: str) -> list[dict[str, Any]]:
    """Every event of the group as served (the stored canonical document), in sequence order."""
    return [
        json.loads(text)
        for text in Event.objects.filter(group_id=group_id)
        .order_by("sequence")
        .values_list("document", flat=True)
    ]


def assert_log_consistent(group_id: str) -> list[dict[str, Any]]:
    """Assert the log of ``group_id`` is gapless, chained and matches its head and projections.

    Returns the event documents, for further checks by the caller.
    """
    documents = event_documents(group_id)
    sequences = [document["sequence"] for document in documents]
    assert sequences == list(range(1, len(documents) + 1)), "gaps or duplicates in the sequence"
    columns = list(
        Event.objects.filter(group_id=group_id).order_by("sequence").values_list("sequence", "hash")
    )
    assert columns == [(d["sequence"], d["hash"]) for d in documents]
    assert first_chain_break(documents) is None
    head = GroupLog.objects.get(group_id=group_id)
    assert head.head_sequence == len(documents)
    assert head.head_hash == (documents[-1]["hash"] if documents else ZERO_HASH)
    rebuilt = replay(group_id, through=head.head_sequence)
    assert rebuilt.chain_break is None
    assert differences(rebuilt.state, load_all(group_id)) == []
    return documents


def take_the_next_event_slot(group_id: str, event_id: str) -> int:
    """Insert an event at the sequence after the head behind the write path's back, so the
    next append's ``INSERT`` fails (R11.1-03 tests); the head's sequence, which stays."""
    head = GroupLog.objects.get(group_id=group_id).head_sequence
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO ledger_event (group_id, sequence, event_id, type, command_id, actor, "
            "recorded_at, hash, document) VALUES (%s, %s, %s, 'x', 'x', 'x', now(), 'x', '{}')",
            [group_id, head + 1, event_id],
        )
    return head
