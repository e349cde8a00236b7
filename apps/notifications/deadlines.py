"""Start-by reminders (issue 36 §1; R11.3-02, R11.5-01): a queued WorkItem whose start-by
deadline falls within ``MWP_NOTIFY_DEADLINE_LEAD_S`` tells the people who can still save it,
once per item and deadline (the key ``<work_item>@<deadline>``; a new deadline after a
reassignment is a new reminder). The beat runs it; a doubled run changes nothing.

An item that waits for people's execution approval is worth a reminder as soon as its
deadline is within the lead time: only they can save it. One that waits for nothing but its
worker is reminded only once half of its start window has gone by: the default window (10
min) is no longer than the default lead, so every item a worker was about to start would
otherwise make a reminder the moment it was accepted (seen in the demo: most reminders were
of work that started seconds later).
"""

from __future__ import annotations

import math
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.work.models import WorkItem
from missionweave.protocol import states as S
from missionweave.protocol.work.checks import START_WINDOW
from missionweave.protocol.work.items import START_DEADLINE_MISSED
from missionweave.protocol.work.items import WorkItem as WorkItemState

from . import facts
from .producing import Produced, Recipients, store
from .recipients import deadline_drafts, waiting_for_approval

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
    groups = facts.GroupsRead()
    for row in rows:
        item = row.to_state()
        if item.start_deadline is None:
            continue
        remaining_s = (row.due_at - now).total_seconds()
        if not worth_a_reminder(item, remaining_s):
            continue
        minutes = max(1, math.ceil(remaining_s / 60))
        found = groups.facts(row.group_id, item)
        drafts = deadline_drafts(found, item.start_deadline, minutes, facts.display_name)
        with transaction.atomic():
            store(drafts, row.group_id, book, done)
    return done


def worth_a_reminder(item: WorkItemState, remaining_s: float) -> bool:
    """Whether ``remaining_s`` before its start-by deadline ``item`` is worth telling people
    about (see the module doc): at once while it waits for their approval, else once half
    its start window has gone by without a start."""
    if waiting_for_approval(item):
        return True
    window_s = item.start_window_s or START_WINDOW.total_seconds()
    return remaining_s <= window_s / 2
