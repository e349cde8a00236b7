"""What the bell says (issue 36 §2): a person's unread in-app notifications, counted and said
in words, the same for the page rendered on the server and for the live updates of its
websocket (``consumers``)."""

from __future__ import annotations

from .models import Notification

#: more than this shows as "99+" on the bell (its label still says the number)
SHOWN_AT_MOST = 99


def unread_count(user_id: int) -> int:
    """The person's notifications shown in the app and not yet read."""
    return Notification.objects.filter(user_id=user_id, in_app=True, read_at__isnull=True).count()


def shown(count: int) -> str:
    return f"{SHOWN_AT_MOST}+" if count > SHOWN_AT_MOST else str(count)


def label(count: int) -> str:
    """The bell's accessible name, e.g. "3 unread notifications"."""
    if count == 0:
        return "Notifications: none unread"
    return f"{count} unread notification{'' if count == 1 else 's'}"


def state(user_id: int) -> dict[str, object]:
    """What the bell's websocket sends: the count, as shown, and the label."""
    count = unread_count(user_id)
    return {"unread": count, "shown": shown(count), "label": label(count)}
