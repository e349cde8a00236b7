"""The idempotency record of a command (wire.md §3 step 5), read on the hot path.

Every command asks first whether its id was already accepted from the same actor in the
group. The answer is at most one row (a unique constraint), read with one fixed statement
rather than a queryset compiled per command (docs/benchmarks.md, "Where the time goes"); a
batch or a sweep reads the records of all its command ids at once (``recorded_reads``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass
from functools import partial
from typing import Any

from .models import CommandRecord
from .reads import Read, Row, run_one
from .statements import current

_SELECT_MANY = (
    "SELECT command_id, content_digest, status, response FROM ledger_commandrecord "
    "WHERE group_id = %s AND actor = %s AND command_id IN ("
)
#: command ids per query when many are read at once (under every SQLite build's limit)
_IDS_PER_QUERY = 500

Pair = tuple[str, str]  # (actor, command id)


@dataclass(frozen=True, slots=True)
class Recorded:
    content_digest: str
    status: int
    response: dict[str, Any]


def recorded(group_id: str, actor: str, command_id: str) -> Recorded | None:
    """The accepted command ``command_id`` of ``actor`` in ``group_id``, or ``None``."""
    (read,) = recorded_reads(group_id, [(actor, command_id)])
    return run_one(read).get((actor, command_id))


def recorded_reads(group_id: str, pairs: Collection[Pair]) -> list[Read[dict[Pair, Recorded]]]:
    """The reads of the records among ``pairs``: one per actor and 500 command ids (the
    unique index's order), each answering the records it found, by pair."""
    by_actor: dict[str, list[str]] = defaultdict(list)
    for actor, command_id in sorted(set(pairs)):
        by_actor[actor].append(command_id)
    reads = []
    for actor, ids in by_actor.items():
        for start in range(0, len(ids), _IDS_PER_QUERY):
            chunk = ids[start : start + _IDS_PER_QUERY]
            sql = _SELECT_MANY + ", ".join(["%s"] * len(chunk)) + ")"
            reads.append(Read(sql, [group_id, actor, *chunk], partial(_found, actor)))
    return reads


def _found(actor: str, rows: list[Row]) -> dict[Pair, Recorded]:
    field, db = CommandRecord._meta.get_field("response"), current()
    return {
        (actor, command_id): Recorded(digest, status, field.from_db_value(response, None, db))
        for command_id, digest, status, response in rows
    }
