"""The emails people receive (issue 36 §2): plain text and simple HTML in plain words, the
absolute link of the screen that acts on it (``MWP_PUBLIC_URL``), and a one-click unsubscribe
link with its ``List-Unsubscribe`` and ``List-Unsubscribe-Post`` headers (RFC 8058)."""

from __future__ import annotations

from collections.abc import Sequence

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string

from missionweave.wording import counted

from . import standing
from .kinds import Kind
from .models import Notification
from .unsubscribe import absolute, unsubscribe_url

SUBJECT_PREFIX = "[MissionWeave] "


def _headers(unsubscribe: str) -> dict[str, str]:
    return {
        "List-Unsubscribe": f"<{unsubscribe}>",
        "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
    }


def _message(
    to: str, subject: str, template: str, context: dict, unsubscribe: str
) -> EmailMultiAlternatives:
    context = {
        **context,
        "unsubscribe": unsubscribe,
        "settings_url": absolute("/notifications/settings/"),
    }
    message = EmailMultiAlternatives(
        subject=(SUBJECT_PREFIX + subject)[:200],
        body=render_to_string(f"notifications/{template}.txt", context),
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=[to],
        headers=_headers(unsubscribe),
    )
    message.attach_alternative(
        render_to_string(f"notifications/{template}.html", context), "text/html"
    )
    return message


def single(notification: Notification) -> EmailMultiAlternatives:
    """The email of one notification; unsubscribing stops its kind."""
    kind = Kind(notification.kind)
    return _message(
        notification.user.email,
        notification.title,
        "email",
        {
            "notification": notification,
            "kind": kind.label,
            "link": absolute(notification.link),
        },
        unsubscribe_url(notification.user_id, kind),
    )


def digest(
    to: str, user_id: int, notifications: Sequence[Notification], *, principal: str
) -> EmailMultiAlternatives:
    """One email gathering a person's digest notifications, oldest first; its unsubscribe
    link stops the kind of the first (each entry carries its own link as well). A day is
    long: what one asked for and was settled since says so ("Settled since: …",
    ``standing``), as the notifications page does, read when the email is made."""
    since = standing.standing(notifications, principal)
    entries = [
        {
            "notification": n,
            "link": absolute(n.link),
            "unsubscribe": unsubscribe_url(user_id, n.kind),
            "kind": Kind(n.kind).label,
            "since": since.get(n.pk, ""),
        }
        for n in notifications
    ]
    return _message(
        to,
        f"Your daily digest: {counted(len(entries), 'thing')} to know",
        "digest",
        {"entries": entries},
        entries[0]["unsubscribe"],
    )
