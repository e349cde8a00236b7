"""Signed snapshots of a group's projections (wire.md §7; R16-10, R16-11, MWP-WRK-029).

A snapshot at sequence S is the state of every aggregate of the group after event S, in
canonical JSON, with the hash of event S, signed by the authority. A client that is told
``CURSOR_TOO_OLD`` restores it, verifies digest and signature, and continues from S.

Pure: building the document, its digest, its verification against a public key, restoring
aggregates from it, and the ``snapshot.create`` command that appends ``snapshot.created``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from .artifacts.records import ArtifactRecord
from .canonical import canonical_bytes, is_digest, sha256_digest, without
from .context import ContextPackage
from .errors import ProtocolError
from .evolvers import AGGREGATE_KINDS, REGISTRY
from .facts import Command, Decision, NewEvent, StateKey, View
from .memberships import Membership
from .missions.model import Mission, usage_series_of
from .signing import document_signature_holds, sign_document
from .strictjson import parse
from .validation import check_fields, malformed
from .work.dependencies import DependencyGraph
from .work.items import WorkItem
from .work.proposals import Proposal

CREATE = "snapshot.create"
CREATED = "snapshot.created"
#: every aggregate kind, always present in ``projections`` (empty when the group has none)
KINDS: tuple[str, ...] = tuple(sorted(AGGREGATE_KINDS))
FIELDS: frozenset[str] = frozenset(
    {"group", "sequence", "event_hash", "projections", "created_at", "authority", "signature"}
)


# A snapshot records the state; it changes none of it.
REGISTRY.audit_only(CREATED)


class SnapshotRefused(ValueError):
    """A snapshot that must not be restored; ``what`` names the check that failed."""

    def __init__(self, what: str, message: str) -> None:
        super().__init__(f"{what}: {message}")
        self.what = what


def url_of(group: str, sequence: int) -> str:
    return f"/api/v1/groups/{group}/snapshots/{sequence}"


def projections_of(state: Mapping[StateKey, Any]) -> dict[str, dict[str, Any]]:
    """``{kind: {id: aggregate.as_dict()}}`` for every aggregate in ``state``."""
    projections: dict[str, dict[str, Any]] = {kind: {} for kind in KINDS}
    for (kind, ident), aggregate in state.items():
        if aggregate is not None:
            projections[kind][ident] = aggregate.as_dict()
    return projections


def build(
    *,
    group: str,
    sequence: int,
    event_hash: str,
    state: Mapping[StateKey, Any],
    created_at: str,
    authority: str,
) -> dict[str, Any]:
    """The unsigned snapshot document of wire.md §7."""
    return {
        "group": group,
        "sequence": sequence,
        "event_hash": event_hash,
        "projections": projections_of(state),
        "created_at": created_at,
        "authority": authority,
    }


def signed_bytes(document: Mapping[str, Any]) -> bytes:
    """The bytes both the digest and the signature are over: canonical, without ``signature``."""
    return canonical_bytes(without(dict(document), "signature"))


def snapshot_digest(document: Mapping[str, Any]) -> str:
    return sha256_digest(signed_bytes(document))


def sign_snapshot(key: Ed25519PrivateKey, document: Mapping[str, Any]) -> dict[str, Any]:
    """``document`` with the authority's signature added."""
    return sign_document(key, document)


def verify_snapshot(
    raw: bytes,
    public_key: Ed25519PublicKey,
    *,
    digest: str | None = None,
    group: str | None = None,
    sequence: int | None = None,
) -> dict[str, Any]:
    """The snapshot in ``raw`` once every check passes, else ``SnapshotRefused`` naming it.

    The bytes must be the canonical form of the document as served, so any flipped byte either
    breaks the JSON, breaks canonical form, or changes a signed value (R16-11).
    """
    try:
        document = parse(raw)
    except ProtocolError as error:
        raise SnapshotRefused("json", error.message) from None
    if not isinstance(document, dict) or set(document) != FIELDS:
        raise SnapshotRefused("fields", f"a snapshot has exactly the fields {sorted(FIELDS)}")
    try:
        canonical = canonical_bytes(document)
    except ValueError as error:
        raise SnapshotRefused("canonical", str(error)) from None
    if canonical != raw:
        raise SnapshotRefused("canonical", "the bytes are not the canonical form of the snapshot")
    if not document_signature_holds(public_key, document):
        raise SnapshotRefused("signature", "not the authority's signature over the snapshot")
    if digest is not None and snapshot_digest(document) != digest:
        raise SnapshotRefused("digest", f"the snapshot's digest is not {digest}")
    if group is not None and document["group"] != group:
        raise SnapshotRefused("group", f"a snapshot of {document['group']!r}, not {group!r}")
    if sequence is not None and document["sequence"] != sequence:
        raise SnapshotRefused("sequence", f"at {document['sequence']}, not {sequence}")
    if not is_digest(document["event_hash"]):
        raise SnapshotRefused("event_hash", "event_hash is not a sha256: digest")
    return document


def _mission(data: dict[str, Any]) -> Mission:
    return Mission(
        id=data["id"],
        state=data["state"],
        goal=data["goal"],
        limits=dict(data["budgets"]["limits"]),
        used=dict(data["budgets"]["used"]),
        parent=data["parent"],
        children=tuple(data["children"]),
        work_items=tuple(data["work_items"]),
        created_by=data["created_by"],
        created_sequence=data["created_sequence"],
        link=data["link"],
        usage_series=usage_series_of(data.get("usage_series", ())),
        change_requests=tuple(dict(r) for r in data.get("change_requests", ())),
    )


def _membership(data: dict[str, Any]) -> Membership:
    return Membership(data["principal"], tuple(data["roles"]), data["epoch"], data["active"])


_RESTORE = {
    "artifact": ArtifactRecord.from_dict,
    "context": ContextPackage.from_dict,
    "dependencies": DependencyGraph.from_dict,
    "membership": _membership,
    "mission": _mission,
    "proposal": Proposal.from_dict,
    "work_item": WorkItem.from_dict,
}


def restore(projections: Mapping[str, Mapping[str, Any]]) -> dict[StateKey, Any]:
    """Pure state from a verified snapshot's ``projections``: fold the tail (> S) onto it."""
    return {
        (kind, ident): _RESTORE[kind](data)
        for kind, aggregates in projections.items()
        for ident, data in aggregates.items()
    }


# --- the command that records a snapshot in the log -------------------------------------


def validate_create(body: dict[str, Any]) -> None:
    check_fields(body, required=("sequence", "digest"))
    sequence = body["sequence"]
    if type(sequence) is not int or sequence < 0:
        raise malformed("sequence is a non-negative integer", "$.sequence", "wire§4")
    if not is_digest(body["digest"]):
        raise malformed("digest is a sha256: digest", "$.digest", "wire§4")


def keys_of_create(command: Command, view: View) -> set[StateKey]:
    return set()


def decide_create(view: View, command: Command) -> Decision:
    """``snapshot.created`` (changes no aggregate). The caller built the snapshot at the head
    S under the group lock, so this event lands at S + 1 (wire.md §4)."""
    sequence, digest = command.body["sequence"], command.body["digest"]
    result = {"sequence": sequence, "digest": digest, "url": url_of(command.group, sequence)}
    return Decision([NewEvent(CREATED, {"sequence": sequence, "digest": digest})], result, 201)
