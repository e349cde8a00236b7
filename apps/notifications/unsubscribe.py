"""One-click unsubscribe (issue 36 §3, RFC 8058): a signed token naming a person and a kind;
following it turns that kind's email off for that person, and nothing else."""

from __future__ import annotations

from django.conf import settings
from django.core import signing
from django.urls import reverse

from .kinds import Kind

SALT = "apps.notifications.unsubscribe"


def make_token(user_id: int, kind: Kind | str) -> str:
    return signing.dumps({"u": user_id, "k": Kind(kind).value}, salt=SALT, compress=True)


def read_token(token: str) -> tuple[int, Kind]:
    """The person and kind a token names; ``signing.BadSignature`` when it was not ours."""
    data = signing.loads(token, salt=SALT)
    try:
        return int(data["u"]), Kind(data["k"])
    except (KeyError, TypeError, ValueError) as wrong:
        raise signing.BadSignature("not an unsubscribe token") from wrong


def absolute(path: str) -> str:
    return settings.MWP_PUBLIC_URL.rstrip("/") + path


def unsubscribe_url(user_id: int, kind: Kind | str) -> str:
    path = reverse("notifications:unsubscribe", args=[make_token(user_id, kind)])
    return absolute(path)
