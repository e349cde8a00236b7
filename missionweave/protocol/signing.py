"""Ed25519 keys and signatures in their wire.md §1 encodings (base64url, no padding).

Keys are ``cryptography`` objects (generated, stored, signed with); a signature is checked
by libsodium (PyNaCl), which on this machine kind verifies in ~55 µs where OpenSSL takes
~110 µs (docs/benchmarks.md) and, unlike OpenSSL, refuses a signature under a public key
of small order — under the identity point, a signature of R = identity and S = 0 holds
for every message. Both check the same RFC 8032 equation without the cofactor and refuse
a non-canonical S, so every signature an Ed25519 signer makes verifies under both.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

import nacl.bindings
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from nacl.exceptions import BadSignatureError

from .canonical import canonical_bytes, without

PUBLIC_KEY_BYTES = 32
SIGNATURE_BYTES = 64


def b64url_encode(raw: bytes) -> str:
    """base64url without padding."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    """Decode base64url without padding; ``ValueError`` for anything else (padding included)."""
    if not isinstance(text, str) or "=" in text:
        raise ValueError("expected base64url without padding")
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as exc:
        raise ValueError("invalid base64url") from exc
    if b64url_encode(raw) != text:  # reject non-canonical trailing bits
        raise ValueError("non-canonical base64url")
    return raw


def parse_public_key(text: str) -> Ed25519PublicKey:
    """A public key from its wire form; ``ValueError`` when it is not 32 base64url bytes
    encoding a point of the curve's prime-order subgroup (wire.md §1), which every key an
    Ed25519 key generator makes is: a key of small order, or off the curve, would verify
    forgeries or nothing at all."""
    raw = b64url_decode(text)
    if len(raw) != PUBLIC_KEY_BYTES:
        raise ValueError("an Ed25519 public key is 32 bytes")
    if not nacl.bindings.crypto_core_ed25519_is_valid_point(raw):
        raise ValueError("not an Ed25519 public key: a point of the prime-order subgroup")
    return Ed25519PublicKey.from_public_bytes(raw)


def public_key_text(key: Ed25519PublicKey) -> str:
    """The wire form of a public key."""
    return b64url_encode(
        key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    )


def private_key_from_seed(seed: bytes) -> Ed25519PrivateKey:
    """An Ed25519 private key from its 32-byte seed."""
    return Ed25519PrivateKey.from_private_bytes(seed)


def private_key_seed(key: Ed25519PrivateKey) -> bytes:
    """The 32-byte seed of a private key (for storing it)."""
    return key.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )


def generate_private_key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


def sign(key: Ed25519PrivateKey, message: bytes) -> str:
    """The wire form of the signature of ``message``."""
    return b64url_encode(key.sign(message))


def verify(public_key: Ed25519PublicKey, message: bytes, signature: str) -> bool:
    """True when ``signature`` (wire form) is ``public_key``'s over ``message``."""
    try:
        raw = b64url_decode(signature)
    except ValueError:
        return False
    if len(raw) != SIGNATURE_BYTES:
        return False
    try:
        nacl.bindings.crypto_sign_open(raw + message, public_key.public_bytes_raw())
    except BadSignatureError:
        return False
    return True


def sign_document(key: Ed25519PrivateKey, document: Mapping[str, Any]) -> dict[str, Any]:
    """``document`` with a ``signature`` over its canonical form without one (signed heads,
    snapshots, exports' trailers)."""
    body = without(dict(document), "signature")
    return {**body, "signature": sign(key, canonical_bytes(body))}


def document_signature_holds(public_key: Ed25519PublicKey, document: Mapping[str, Any]) -> bool:
    """Whether ``document["signature"]`` is ``public_key``'s over the canonical document
    without it (the check of ``sign_document``)."""
    signature = document.get("signature")
    if not isinstance(signature, str):
        return False
    return verify(public_key, canonical_bytes(without(dict(document), "signature")), signature)
