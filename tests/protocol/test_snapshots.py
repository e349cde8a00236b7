"""Signed snapshots, pure (wire.md §7; R16-10, R16-11): digest, signature, tamper refusal."""

from __future__ import annotations

from typing import Any

import pytest

from missionweave.protocol.canonical import ZERO_HASH, canonical_bytes, sha256_digest, without
from missionweave.protocol.memberships import Membership
from missionweave.protocol.missions.model import Mission
from missionweave.protocol.signing import generate_private_key
from missionweave.protocol.snapshots import (
    KINDS,
    SnapshotRefused,
    build,
    projections_of,
    restore,
    sign_snapshot,
    snapshot_digest,
    verify_snapshot,
)
from missionweave.protocol.work.dependencies import DependencyGraph

KEY = generate_private_key()
STATE: dict[Any, Any] = {
    ("membership", "user:olga"): Membership("user:olga", ("mission_owner",), 1, True),
    ("mission", "m-1"): Mission(
        id="m-1",
        state="active",
        goal="Écrire un résumé",
        limits={"tokens": 1000},
        used={"tokens": 12.5},
        parent=None,
        children=(),
        work_items=("wi-1",),
        created_by="user:olga",
        created_sequence=2,
    ),
    ("dependencies", "graph"): DependencyGraph({"wi-2": ("wi-1",)}),
}


def snapshot() -> dict[str, Any]:
    return sign_snapshot(
        KEY,
        build(
            group="g-research",
            sequence=7,
            event_hash="sha256:" + "ab" * 32,
            state=STATE,
            created_at="2026-11-30T12:00:00.000000Z",
            authority="authority.example",
        ),
    )


def test_digest_and_signature_are_over_the_canonical_snapshot_without_signature() -> None:
    """wire.md §7: digest = sha256 of the canonical snapshot without signature (R16-11)."""
    document = snapshot()
    raw = canonical_bytes(document)
    assert snapshot_digest(document) == sha256_digest(
        canonical_bytes(without(document, "signature"))
    )
    verified = verify_snapshot(
        raw,
        KEY.public_key(),
        digest=snapshot_digest(document),
        group="g-research",
        sequence=7,
    )
    assert verified == document
    assert set(verified["projections"]) == set(KINDS)
    assert verified["projections"]["proposal"] == {}


def test_restore_gives_back_the_aggregates() -> None:
    """R16-11: the projections restore to the very aggregates they were taken from."""
    assert restore(snapshot()["projections"]) == STATE
    assert projections_of(restore(snapshot()["projections"])) == snapshot()["projections"]


def test_one_flipped_byte_anywhere_is_refused_naming_the_check() -> None:
    """R16-11: any single flipped byte of the served snapshot is refused, with what failed."""
    raw = canonical_bytes(snapshot())
    digest = snapshot_digest(snapshot())
    reasons: set[str] = set()
    for index in range(len(raw)):
        for bit in (0x01, 0x20):
            tampered = bytearray(raw)
            tampered[index] ^= bit
            with pytest.raises(SnapshotRefused) as refused:
                verify_snapshot(bytes(tampered), KEY.public_key(), digest=digest)
            reasons.add(refused.value.what)
            assert str(refused.value).startswith(refused.value.what + ": ")
    assert {"json", "signature"} <= reasons


def test_a_valid_snapshot_by_another_key_or_for_another_place_is_refused() -> None:
    """R16-11: signature, digest, group and sequence are each checked and named."""
    document = snapshot()
    raw = canonical_bytes(document)
    other = generate_private_key()
    with pytest.raises(SnapshotRefused, match=r"^signature"):
        verify_snapshot(raw, other.public_key())
    with pytest.raises(SnapshotRefused, match=r"^digest"):
        verify_snapshot(raw, KEY.public_key(), digest=ZERO_HASH)
    with pytest.raises(SnapshotRefused, match=r"^group"):
        verify_snapshot(raw, KEY.public_key(), group="g-other")
    with pytest.raises(SnapshotRefused, match=r"^sequence"):
        verify_snapshot(raw, KEY.public_key(), sequence=8)
    with pytest.raises(SnapshotRefused, match=r"^canonical"):
        verify_snapshot(raw.replace(b",", b", ", 1), KEY.public_key())
    with pytest.raises(SnapshotRefused, match=r"^fields"):
        verify_snapshot(canonical_bytes(without(document, "authority")), KEY.public_key())
