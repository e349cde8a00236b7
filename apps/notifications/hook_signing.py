"""The signature of a webhook delivery (issue 36 §2: "generic webhooks carry an HMAC
signature"), pure functions a receiver can copy.

The signed material is the timestamp header's value, a dot, and the raw request body::

    X-MissionWeave-Timestamp: 1796611200
    X-MissionWeave-Signature: sha256=<hex HMAC-SHA256(secret, b"1796611200." + body)>

Signing the timestamp lets a receiver refuse an old request replayed (compare it with its
clock, e.g. within 5 minutes); ``X-MissionWeave-Delivery`` is the same on every retry of one
delivery, so a receiver that saw it already can answer 2xx and do nothing.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

import orjson

SIGNATURE_HEADER = "X-MissionWeave-Signature"
TIMESTAMP_HEADER = "X-MissionWeave-Timestamp"
DELIVERY_HEADER = "X-MissionWeave-Delivery"
EVENT_HEADER = "X-MissionWeave-Event"
PREFIX = "sha256="


def new_secret() -> str:
    """A signing secret: 32 random bytes, URL-safe text."""
    return "mwhook_" + secrets.token_urlsafe(32)


def body_bytes(document: dict) -> bytes:
    """The exact bytes POSTed (and signed): compact JSON, keys sorted."""
    return orjson.dumps(document, option=orjson.OPT_SORT_KEYS)


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """``sha256=<hex>`` of ``timestamp + "." + body`` keyed with ``secret``."""
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return PREFIX + mac.hexdigest()


def verify(secret: str, timestamp: str, body: bytes, header: str) -> bool:
    """What a receiver does: recompute and compare in constant time."""
    return hmac.compare_digest(signature(secret, timestamp, body), header)


def headers(
    *, secret: str, timestamp: str, body: bytes, delivery: str, event: str
) -> dict[str, str]:
    """Every header of one webhook request."""
    return {
        "Content-Type": "application/json",
        "User-Agent": "MissionWeave-Hooks/1",
        TIMESTAMP_HEADER: timestamp,
        SIGNATURE_HEADER: signature(secret, timestamp, body),
        DELIVERY_HEADER: delivery,
        EVENT_HEADER: event,
    }
