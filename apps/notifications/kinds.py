"""What people are told about (issue 36 §1): the kinds of notification, in plain words, with
the defaults a person has before choosing anything (§3).

Defaults, when a person has no preference row for a kind: shown in the app, and emailed at
once. Every kind may be turned to a daily digest or off, per person (``preferences``).
"""

from __future__ import annotations

from django.db import models


class Kind(models.TextChoices):
    APPROVAL_NEEDED = "approval_needed", "Execution approval needed"
    APPROVAL_DECIDED = "approval_decided", "Execution approved or refused"
    REVIEW_WAITING = "review_waiting", "A submission waits for review"
    SENT_BACK = "sent_back", "A submission was sent back"
    MISSION_READY = "mission_ready", "A mission is ready for final approval"
    DEADLINE_NEAR = "deadline_near", "A start-by deadline is near"
    WORK_BLOCKED = "work_blocked", "Work is blocked in your missions"
    MEMBERSHIP_CHANGED = "membership_changed", "Your membership changed"
    ASKED_OF_YOU = "asked_of_you", "Someone asked you for an approval or a review"
    HOOK_DISABLED = "hook_disabled", "A chat or webhook hook of your group was disabled"


#: kinds that ask one errand of one subject (a WorkItem's approval, review, start or block; a
#: mission's final approval): a newer one about the same subject replaces the older, which is
#: then no longer unread (``answered.mark_asked_again``). News (a decision, a send-back, a
#: membership) and a person's own ask are each worth reading, so they are not among them.
ERRANDS = frozenset(
    {
        Kind.APPROVAL_NEEDED,
        Kind.DEADLINE_NEAR,
        Kind.REVIEW_WAITING,
        Kind.MISSION_READY,
        Kind.WORK_BLOCKED,
    }
)


class EmailMode(models.TextChoices):
    """How a kind reaches a person by email."""

    IMMEDIATE = "immediate", "Immediately"
    DAILY_DIGEST = "daily_digest", "In a daily digest"
    OFF = "off", "Off"


#: without a preference row: every kind in the app, and by email at once (issue 36 §3)
DEFAULT_IN_APP = True
DEFAULT_EMAIL = EmailMode.IMMEDIATE
