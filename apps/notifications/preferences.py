"""A person's notification preferences, per kind (issue 36 §3): the service functions the
settings page (``/account/notifications/``) and the unsubscribe link call.

Without a row, a kind is shown in the app and emailed at once (``kinds.DEFAULT_*``). A kind is
off entirely when it is off in the app and by email: then nothing of it is made for the person.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.base_user import AbstractBaseUser

from .kinds import DEFAULT_EMAIL, DEFAULT_IN_APP, EmailMode, Kind
from .models import NotificationPreference


@dataclass(frozen=True)
class Preference:
    kind: Kind
    in_app: bool
    email: EmailMode

    @property
    def off(self) -> bool:
        return not self.in_app and self.email == EmailMode.OFF


def effective(user: AbstractBaseUser, kind: Kind) -> Preference:
    return effective_all(user)[Kind(kind)]


def effective_all(user: AbstractBaseUser) -> dict[Kind, Preference]:
    """Every kind's preference for ``user``: their choice, or the defaults."""
    chosen = {row.kind: row for row in NotificationPreference.objects.filter(user_id=user.pk)}
    found = {}
    for kind in Kind:
        row = chosen.get(kind.value)
        found[kind] = (
            Preference(kind, row.in_app, EmailMode(row.email))
            if row is not None
            else Preference(kind, DEFAULT_IN_APP, EmailMode(DEFAULT_EMAIL))
        )
    return found


def set_preference(
    user: AbstractBaseUser,
    kind: Kind,
    *,
    in_app: bool | None = None,
    email: EmailMode | str | None = None,
) -> Preference:
    """Change what was given, keep the rest (the defaults when nothing was chosen yet)."""
    current = effective(user, kind)
    NotificationPreference.objects.update_or_create(
        user_id=user.pk,
        kind=Kind(kind).value,
        defaults={
            "in_app": current.in_app if in_app is None else in_app,
            "email": (current.email if email is None else EmailMode(email)).value,
        },
    )
    return effective(user, kind)
