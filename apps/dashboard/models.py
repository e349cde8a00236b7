"""The dashboard's own state: what a person chose for their view, never protocol.

Nothing here is an event or a projection: a snooze hides an inbox entry from one person for
a while (issue 37 §5) and changes nobody's rights or anyone else's inbox. It is written by
the person's own POST (``snooze.snooze_entry``), not through the write path, because no
group's log records how someone arranges their screen.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class InboxSnooze(models.Model):
    """One inbox entry hidden from ``user`` until ``until``; it comes back by itself once
    that time passes (the read filters on ``until``, no sweep is needed)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    #: the entry's key, as the inbox names it: group, section kind and subject (WorkItem or
    #: mission id; ids are at most 128 characters, ``protocol.identifiers``)
    group_id = models.CharField(max_length=128)
    kind = models.CharField(max_length=16)
    subject = models.CharField(max_length=128)
    until = models.DateTimeField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["user", "group_id", "kind", "subject"], name="inbox_snooze_one_per_entry"
            )
        ]
        indexes = [models.Index(fields=["user", "until"], name="inbox_snooze_user_until")]

    def __str__(self) -> str:
        return f"{self.group_id}:{self.kind}:{self.subject} until {self.until.isoformat()}"
