"""The authority's own Ed25519 key: it signs group heads and snapshots.

The key comes from ``MWP_AUTHORITY_KEY`` (base64url seed), so every server of a deployment
signs with the same key; with nothing set, a key file under ``var/`` is created once.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.conf import settings
from django.utils import timezone

from missionweave.protocol.signing import (
    b64url_decode,
    b64url_encode,
    generate_private_key,
    private_key_from_seed,
    private_key_seed,
    public_key_text,
    sign_document,
)
from missionweave.protocol.timefmt import format_timestamp

from .models import GroupLog


@functools.cache
def signing_key() -> Ed25519PrivateKey:
    if settings.MWP_AUTHORITY_KEY:
        return private_key_from_seed(b64url_decode(settings.MWP_AUTHORITY_KEY))
    path = settings.MWP_AUTHORITY_KEY_FILE
    if not path.exists():
        key = generate_private_key()
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as handle:
            handle.write(b64url_encode(private_key_seed(key)))
    return private_key_from_seed(b64url_decode(path.read_text().strip()))


def public_key() -> str:
    return public_key_text(signing_key().public_key())


def authority_id() -> str:
    return settings.MWP_AUTHORITY_ID


def signed(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` plus the authority's signature over its canonical form without it."""
    return sign_document(signing_key(), document)


def signed_head(log: GroupLog) -> dict[str, Any]:
    """``GET /groups/{g}/head``: the head, signed, so a verified chain up to it is authentic."""
    return signed(
        {
            "group": log.group_id,
            "sequence": log.head_sequence,
            "hash": log.head_hash,
            "signed_at": format_timestamp(timezone.now()),
        }
    )
