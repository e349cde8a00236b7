"""Live bell hints (issue 36 §2): after a commit that changed a person's unread
notifications — the producer made some, or the person read some in another tab — a hint goes
to that person's channel-layer group; the bell's websocket (``consumers``) then reads the
count again. A hint carries no count: like the stream's (``apps.ledger.broadcast``) it is
delivered at most once, so the socket also reads the count on a slow poll.
"""

from __future__ import annotations

import hashlib
import time

from django.db import transaction

from apps.ledger.broadcast import send_hint

#: the consumer method a hint calls (``notifications.changed`` → ``notifications_changed``)
HINT_TYPE = "notifications.changed"


def person_channel(user_id: int) -> str:
    """The channel-layer group of one person's bell sockets (hashed like ``group_channel``:
    a name says nothing of who it is)."""
    digest = hashlib.sha256(f"user:{user_id}".encode()).hexdigest()[:40]
    return "mwp.n." + digest


def hint_now(user_id: int) -> None:
    """Tell the person's bell sockets to read their count again; never raises. ``head`` only
    grows, as the hint sender's coalescing wants."""
    send_hint(person_channel(user_id), {"type": HINT_TYPE, "head": time.time_ns()})


def hint_after_commit(user_id: int) -> None:
    """:func:`hint_now` once the current transaction commits (at once outside one)."""
    transaction.on_commit(lambda: hint_now(user_id))
