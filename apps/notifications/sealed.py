"""Hook secrets sealed at rest: a chat hook's Apprise URL (it carries the service's tokens) and
a webhook's signing key are stored encrypted, never as the text an attacker with a database
dump, a backup or a read-only SQL role could use to post into a team's chat or forge signed
messages.

The key is derived from Django's ``SECRET_KEY`` (HKDF-SHA256 with a purpose of its own, so it
is never the key that signs sessions), and the older keys of ``SECRET_KEY_FALLBACKS`` still
open what they sealed: rotating ``SECRET_KEY`` keeps every hook working while the old key is
listed there, and ``manage.py reseal_hooks`` seals every hook again under the new one
(docs/deploy.md, "Chat and webhooks"). Fernet (AES-128-CBC with HMAC-SHA256, from
``cryptography``) authenticates what it opens, so a value changed in the database is refused,
not used.

A stored value carries its form: ``sealed:v1:<Fernet token>``. A value without the prefix is
one written before sealing (the migration seals those) and is read as it is.
"""

from __future__ import annotations

import base64
from functools import cache
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings
from django.db import models

PREFIX = "sealed:v1:"
#: HKDF's ``info``: this key seals hook secrets and nothing else
PURPOSE = b"missionweave hook secrets v1"


class SealingError(ValueError):
    """A sealed value that none of the keys opens (changed in the database, or sealed under
    a key no longer in ``SECRET_KEY`` or ``SECRET_KEY_FALLBACKS``)."""


def _fernet_key(secret_key: str) -> bytes:
    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=PURPOSE).derive(
        secret_key.encode()
    )
    return base64.urlsafe_b64encode(derived)


@cache
def _keys(secret_key: str, fallbacks: tuple[str, ...]) -> MultiFernet:
    """The current key first (it seals), then each fallback (they only open): derived once
    per set of keys, not on every hook read."""
    return MultiFernet([Fernet(_fernet_key(key)) for key in (secret_key, *fallbacks)])


def _current() -> MultiFernet:
    return _keys(settings.SECRET_KEY, tuple(getattr(settings, "SECRET_KEY_FALLBACKS", ())))


def seal(text: str) -> str:
    """``text`` as stored: sealed under the current key ("" stays "": nothing to hide)."""
    if not text:
        return ""
    return PREFIX + _current().encrypt(text.encode()).decode("ascii")


def unseal(stored: str) -> str:
    """What ``seal`` sealed, opened by the current key or a fallback; an unsealed value as it
    is. ``SealingError`` when no key opens it."""
    if not stored.startswith(PREFIX):
        return stored
    try:
        return _current().decrypt(stored[len(PREFIX) :].encode("ascii")).decode()
    except (InvalidToken, UnicodeError) as error:
        raise SealingError("a hook secret that no configured key opens") from error


def is_sealed(stored: str) -> bool:
    return stored.startswith(PREFIX)


class SealedTextField(models.TextField):
    """A text column stored sealed (``seal``) and read opened (``unseal``): code reads and
    writes the plain text; the database holds the sealed form only."""

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        return value if value is None else unseal(value)

    def get_prep_value(self, value: Any) -> Any:
        value = super().get_prep_value(value)
        if value is None or is_sealed(value):
            return value
        return seal(value)
