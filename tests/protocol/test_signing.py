"""Ed25519 keys and signatures in their wire forms (wire.md §1)."""

from __future__ import annotations

import base64

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from hypothesis import given, settings
from hypothesis import strategies as st

from missionweave.protocol.signing import (
    b64url_decode,
    b64url_encode,
    generate_private_key,
    parse_public_key,
    private_key_from_seed,
    private_key_seed,
    public_key_text,
    sign,
    verify,
)

# RFC 8032 §7.1, TEST 1: a fixed seed, its public key and its signature of the empty message.
_SEED = bytes.fromhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
_PUBLIC = bytes.fromhex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
_SIGNATURE = bytes.fromhex(
    "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
)


def test_rfc8032_vector_in_wire_form() -> None:
    """wire§1: key and signature travel as unpadded base64url of the raw bytes."""
    key = private_key_from_seed(_SEED)
    assert public_key_text(key.public_key()) == b64url_encode(_PUBLIC)
    assert sign(key, b"") == b64url_encode(_SIGNATURE)
    assert len(public_key_text(key.public_key())) == 43
    assert len(sign(key, b"")) == 86
    assert verify(parse_public_key(b64url_encode(_PUBLIC)), b"", b64url_encode(_SIGNATURE))
    assert private_key_seed(key) == _SEED


def test_base64url_has_no_padding_and_uses_the_url_alphabet() -> None:
    """wire§1: base64url without padding."""
    raw = bytes([0xFB, 0xFF, 0xBF])  # standard base64 "+/+/" territory
    assert b64url_encode(raw) == "-_-_"
    assert b64url_encode(b"\x00") == "AA"
    assert b64url_decode("AA") == b"\x00"
    assert b64url_decode("-_-_") == raw


@pytest.mark.parametrize(
    "text",
    [
        "AA==",  # padding
        "AA=",
        base64.urlsafe_b64encode(_PUBLIC).decode(),  # padded key
        "+/+/",  # standard alphabet
        "A",  # impossible length
        "AB",  # non-canonical trailing bits (AA is the canonical form of b"\0")
        "A A",
        "é",
    ],
)
def test_b64url_decode_refuses_padding_and_non_canonical_text(text: str) -> None:
    """wire§1: anything but canonical unpadded base64url is refused."""
    with pytest.raises(ValueError):
        b64url_decode(text)


@pytest.mark.parametrize("size", [0, 31, 33, 64])
def test_public_key_of_the_wrong_length_is_refused(size: int) -> None:
    """wire§1: a public key is exactly 32 raw bytes."""
    with pytest.raises(ValueError):
        parse_public_key(b64url_encode(bytes(size)))


def test_sign_then_verify_and_a_tampered_message_fails() -> None:
    """wire§3: a signature verifies over exactly the signed bytes under the signer's key."""
    key = generate_private_key()
    public = key.public_key()
    message = b'{"a":1}'
    signature = sign(key, message)
    assert verify(public, message, signature)
    assert not verify(public, b'{"a":2}', signature)
    assert not verify(generate_private_key().public_key(), message, signature)


@pytest.mark.parametrize(
    "mangle",
    [
        lambda s: s[:-1],  # 63.x bytes: wrong length
        lambda s: s + "AA",  # too long
        lambda s: s + "==",  # padded
        lambda s: ("B" if s[0] == "A" else "A") + s[1:],  # one bit flipped
        lambda s: "",
        lambda s: b64url_encode(bytes(64)),
        lambda s: b64url_encode(bytes(63)),
    ],
)
def test_tampered_or_misencoded_signature_fails(mangle) -> None:  # type: ignore[no-untyped-def]
    """wire§1/§3: a signature is 64 raw bytes in canonical base64url, or it does not verify."""
    key = generate_private_key()
    message = b"payload"
    assert not verify(key.public_key(), message, mangle(sign(key, message)))


# --- libsodium's verification against OpenSSL's (issue 15: the faster of the two) ------------

#: the encodings of the points of small order (orders 1, 2, 4 and 8), as libsodium lists them
SMALL_ORDER_KEYS = [
    bytes([1]) + bytes(31),  # the identity
    bytes.fromhex("ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"),
    bytes(32),
    bytes(31) + bytes([0x80]),
    bytes.fromhex("c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a"),
    bytes.fromhex("c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa"),
    bytes.fromhex("26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05"),
    bytes.fromhex("26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85"),
]
#: y = 2 has no x on the curve
OFF_THE_CURVE = bytes([2]) + bytes(31)


def _openssl_verifies(public: bytes, message: bytes, signature: bytes) -> bool:
    try:
        Ed25519PublicKey.from_public_bytes(public).verify(signature, message)
    except InvalidSignature:
        return False
    return True


@settings(max_examples=300, deadline=None)
@given(
    seed=st.binary(min_size=32, max_size=32),
    message=st.binary(max_size=2048),
    flip=st.integers(min_value=0),
    bit=st.integers(min_value=0, max_value=7),
    in_signature=st.booleans(),
)
def test_libsodium_and_openssl_agree_on_signatures_and_on_any_one_bit_changed(
    seed: bytes, message: bytes, flip: int, bit: int, in_signature: bool
) -> None:
    """wire§3: what a signer makes verifies, and a bit changed in the message or the
    signature is refused — by ``verify`` (libsodium) exactly as by OpenSSL."""
    key = private_key_from_seed(seed)
    public = key.public_key()
    signature = sign(key, message)
    assert verify(public, message, signature)
    raw_signature = b64url_decode(signature)
    if in_signature or not message:
        changed = bytearray(raw_signature)
        changed[flip % 64] ^= 1 << bit
        message_after, signature_after = message, bytes(changed)
    else:
        changed = bytearray(message)
        changed[flip % len(message)] ^= 1 << bit
        message_after, signature_after = bytes(changed), raw_signature
    ours = verify(public, message_after, b64url_encode(signature_after))
    assert ours == _openssl_verifies(public.public_bytes_raw(), message_after, signature_after)
    assert not ours


@pytest.mark.parametrize("raw", [*SMALL_ORDER_KEYS, OFF_THE_CURVE])
def test_a_key_of_small_order_or_off_the_curve_is_refused(raw: bytes) -> None:
    """wire§1 (clarified 2026-12-04): a public key is a point of the prime-order subgroup."""
    with pytest.raises(ValueError, match="prime-order subgroup"):
        parse_public_key(b64url_encode(raw))


def test_the_identity_key_verifies_no_forgery() -> None:
    """wire§3: under the identity point, R = identity and S = 0 satisfy OpenSSL's check for
    every message; ``verify`` refuses it however the key object was made."""
    identity = SMALL_ORDER_KEYS[0]
    forged = identity + bytes(32)
    message = b'{"type":"mission.cancel"}'
    assert _openssl_verifies(identity, message, forged)  # why the check moved to libsodium
    key = Ed25519PublicKey.from_public_bytes(identity)
    assert not verify(key, message, b64url_encode(forged))
