"""Start-by reminders (issue 36 §1; R11.3-02, R11.5-01): a queued WorkItem whose start-by
deadline falls within ``MWP_NOTIFY_DEADLINE_LEAD_S`` tells the people who can still save it,
once per item and deadline (the key ``<work_item>@<deadline>``; a new deadline after a
reassignment is a new reminder). The beat runs it; a doubled run changes nothing.
"""

from __future__ import annotations

import math
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.work.models import WorkItem
from missionweave.protocol import states as S
from missionweave.protocol.work.items import START_DEADLINE_MISSED

from . import facts
from .producing import Produced, Recipients, store
from .recipients import Facts, deadline_drafts

LIMIT = 500


def remind(*, lead_s: float | None = None) -> Produced:
    """Make the reminders of every start-by deadline within the lead time from now."""
    lead = settings.MWP_NOTIFY_DEADLINE_LEAD_S if lead_s is None else lead_s
    now = timezone.now()
    rows = WorkItem.objects.filter(
        state=S.QUEUED,
        due_reason=START_DEADLINE_MISSED,
        due_at__gt=now,
        due_at__lte=now + timedelta(seconds=lead),
    ).order_by("due_at")[:LIMIT]
    done = Produced()
    book = Recipients()
    for row in rows:
        item = row.to_state()
        if item.start_deadline is None:
            continue
        minutes = max(1, math.ceil((row.due_at - now).total_seconds() / 60))
        found = Facts(
            group=row.group_id,
            group_name=facts.group_name(row.group_id),
            people=facts.people(row.group_id),
            item=item,
        )
        drafts = deadline_drafts(found, item.start_deadline, minutes, facts.display_name)
        with transaction.atomic():
            store(drafts, row.group_id, book, done)
    return done
