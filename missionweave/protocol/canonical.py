"""RFC 8785 canonical bytes and ``sha256:`` digests (wire.md §1).

Every hash and every signature in MWP is taken over these bytes, so the REST copy and the
websocket copy of an event, or a command re-serialised by another language, hash the same.
"""

from __future__ import annotations

import hashlib
from typing import Any

import rfc8785

ZERO_HASH = "sha256:" + "0" * 64
DIGEST_PREFIX = "sha256:"


def canonical_bytes(value: Any) -> bytes:
    """The RFC 8785 (JCS) encoding of ``value``.

    Raises ``rfc8785.CanonicalizationError`` (a ``ValueError``) for values JCS cannot
    represent: NaN, infinities, integers beyond ±(2**53 - 1). Strict parsing refuses those
    before they get here.
    """
    return rfc8785.dumps(value)


def sha256_digest(data: bytes) -> str:
    """``sha256:<64 lowercase hex>`` of raw bytes."""
    return DIGEST_PREFIX + hashlib.sha256(data).hexdigest()


def digest(value: Any) -> str:
    """The digest of the canonical bytes of a JSON value."""
    return sha256_digest(canonical_bytes(value))


def without(document: dict[str, Any], *keys: str) -> dict[str, Any]:
    """A shallow copy of ``document`` with ``keys`` removed (what a signature or hash covers)."""
    return {key: value for key, value in document.items() if key not in keys}


def is_digest(value: object) -> bool:
    """True when ``value`` is written ``sha256:`` + 64 lowercase hex digits."""
    if not isinstance(value, str) or len(value) != 71 or not value.startswith(DIGEST_PREFIX):
        return False
    return all(ch in "0123456789abcdef" for ch in value[7:])
