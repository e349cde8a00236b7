"""Blocks nobody answered (issue 36 §1; R11.4-04..06): a WorkItem still blocked
``MWP_NOTIFY_BLOCK_GRACE_S`` after its owner blocked tells the group's mission owners, once
per block. The beat runs it; a doubled run changes nothing.

Where an agent coordinates the group, it answers blocks (R11.4-06) — the demo's within
20 s — so the producer tells nobody of the block itself (``recipients.work_blocked``): the
owners hear of the blocks that need them, not of every one an agent settled moments later
(seen in the demo: each mission's first WorkItem blocked once and told every owner). Where
no agent coordinates, the producer told them at once, under the same key, so this adds
nothing. A block kept while a child mission runs has no due time and is not looked at: the
child's own work is what people hear of.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.work.models import WorkItem
from missionweave.protocol import states as S
from missionweave.protocol.work.items import BLOCKED_LEASE, BLOCKED_LEASE_EXPIRED

from . import facts
from .producing import Produced, Recipients, store
from .recipients import blocked_drafts

LIMIT = 500


def remind(*, grace_s: float | None = None) -> Produced:
    """Tell the mission owners of each block older than the grace time and still held.

    A block's due time is the end of its bounded blocked lease (``BLOCKED_LEASE`` after it
    began, R11.4-05), on the indexed column the sweeps use: blocked at least ``grace`` ago
    is due at most ``BLOCKED_LEASE - grace`` from now."""
    grace = timedelta(seconds=settings.MWP_NOTIFY_BLOCK_GRACE_S if grace_s is None else grace_s)
    now = timezone.now()
    rows = WorkItem.objects.filter(
        state=S.BLOCKED,
        due_reason=BLOCKED_LEASE_EXPIRED,
        due_at__gt=now,
        due_at__lte=now + BLOCKED_LEASE - grace,
    ).order_by("due_at")[:LIMIT]
    done = Produced()
    book = Recipients()
    groups = facts.GroupsRead()
    for row in rows:
        waited = now - (row.due_at - BLOCKED_LEASE)
        found = groups.facts(row.group_id, row.to_state())
        drafts = blocked_drafts(
            found, facts.display_name, waited_min=max(1, int(waited.total_seconds() // 60))
        )
        with transaction.atomic():
            store(drafts, row.group_id, book, done)
    return done
