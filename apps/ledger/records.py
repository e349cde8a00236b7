"""The idempotency record of a command (wire.md §3 step 5), read on the hot path.

Every command asks first whether its id was already accepted from the same actor in the
group. The answer is at most one row (a unique constraint), read with one fixed statement
rather than a queryset compiled per command (docs/benchmarks.md, "Where the time goes").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import connection

from .models import CommandRecord

_SELECT = (
    "SELECT content_digest, status, response FROM ledger_commandrecord "
    "WHERE group_id = %s AND actor = %s AND command_id = %s"
)


@dataclass(frozen=True, slots=True)
class Recorded:
    content_digest: str
    status: int
    response: dict[str, Any]


def recorded(group_id: str, actor: str, command_id: str) -> Recorded | None:
    """The accepted command ``command_id`` of ``actor`` in ``group_id``, or ``None``."""
    with connection.cursor() as cursor:
        cursor.execute(_SELECT, [group_id, actor, command_id])
        row = cursor.fetchone()
    if row is None:
        return None
    content_digest, status, response = row
    field = CommandRecord._meta.get_field("response")
    return Recorded(content_digest, status, field.from_db_value(response, None, connection))
