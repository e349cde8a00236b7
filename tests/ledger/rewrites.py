"""What an attacker holding the schema owner's role can do to a group's history on
PostgreSQL: switch the triggers off for its session and rewrite events, the head and the
signed heads, recomputing every hash so the forged chain verifies on its own (issue 33 §2).

The tests that use it prove that such a rewrite cannot go unseen by anyone who verified a
signed head before it: the client SDK, the Worker and ``verify_export --known-head``.
"""

from __future__ import annotations

import json

from django.db import connection, transaction

from missionweave.protocol.events import sealed


def rewrite_history(
    group: str, *, from_sequence: int, forged_title: str = "forged", cover_tracks: bool = True
) -> str:
    """Change event ``from_sequence`` of ``group`` and re-chain every event after it, move the
    head row onto the forged chain and (``cover_tracks``) delete the signed heads from
    ``from_sequence`` on, as an owner covering its tracks would; the forged head hash."""
    with transaction.atomic(), connection.cursor() as cursor:
        # replica mode fires no ordinary trigger: only a superuser or the owner may set it
        cursor.execute("SET LOCAL session_replication_role = replica")
        cursor.execute(
            "SELECT sequence, document FROM ledger_event WHERE group_id = %s AND sequence >= %s "
            "ORDER BY sequence",
            [group, from_sequence],
        )
        rows = cursor.fetchall()
        cursor.execute(
            "SELECT hash FROM ledger_event WHERE group_id = %s AND sequence = %s",
            [group, from_sequence - 1],
        )
        found = cursor.fetchone()
        previous_hash = found[0] if found else "sha256:" + "0" * 64
        for sequence, text in rows:
            event = json.loads(text)
            del event["hash"]
            event["prev_hash"] = previous_hash
            if sequence == from_sequence:
                event["payload"] = {**event["payload"], "forged": forged_title}
            event["hash"], stored = sealed(event)
            cursor.execute(
                "UPDATE ledger_event SET hash = %s, document = %s "
                "WHERE group_id = %s AND sequence = %s",
                [event["hash"], stored.decode("utf-8"), group, sequence],
            )
            previous_hash = event["hash"]
        cursor.execute(
            "UPDATE ledger_grouplog SET head_hash = %s WHERE group_id = %s", [previous_hash, group]
        )
        if not cover_tracks:
            return previous_hash
        cursor.execute(
            "DELETE FROM ledger_signedhead WHERE group_id = %s AND sequence >= %s",
            [group, from_sequence],
        )
    return previous_hash
