"""``artifact.publish`` and the authority's recorded manifest (R13.1-03, R13.1-04, R13.1-06).

A manifest is the signed statement of what an artifact is and where it came from. Its
``digest`` and ``size`` must be those of stored bytes the sender may name; its ``producer``
is the sender at its current Agent Card version; its ``mission`` and ``work_item`` are the
command's; its ``sources`` are artifacts already published in this group or inputs of the
item's contract (so the provenance graph only has edges the log can show). A ``uri`` is only
a location: nothing is ever looked up by it (R13.1-06).

A manifest may carry its producer's Ed25519 ``signature`` over the canonical manifest
without it, checked here; one without is signed by the authority as it is recorded
(``NewEvent.authority_signs``), so every manifest in a log verifies outside the server. The
event says whose key signed it (``signed_by``).

A submitted artifact that nobody published gets a manifest recorded by the authority, with
the submitter as producer (``artifact.record_manifest``, a follow-up of ``work.submit``), so
every artifact a log cites as a result has one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from ..canonical import canonical_bytes, is_digest, without
from ..errors import ErrorCode, ProtocolError
from ..facts import Command, Decision, NewEvent, StateKey, View
from ..identifiers import AUTHORITY
from ..signing import verify
from ..states import ACTIVE
from ..validation import check_fields, check_id, check_principal, check_text, malformed
from ..work.checks import (
    digests,
    item_keys,
    no_private_reasoning,
    require_current_lease_id,
    require_item,
    require_live_lease,
    require_owner,
    timestamp,
)
from ..work.items import WorkItem
from .naming import require_nameable, stored_keys
from .records import ArtifactRecord, StoredArtifact, artifact_key

PUBLISH = "artifact.publish"
RECORD_MANIFEST = "artifact.record_manifest"
PUBLISHED = "artifact.published"

MANIFEST_FIELDS = (
    "digest", "media_type", "schema", "producer", "mission", "work_item", "sources",
    "tool_versions", "created_at", "classification", "size", "uri",
)  # fmt: skip
PRODUCER_FIELDS = ("agent", "version", "agent_card_version")
#: what a manifest recorded by the authority says where the submission says nothing
DEFAULT_MEDIA_TYPE = "application/octet-stream"
DEFAULT_CLASSIFICATION = "internal"


def agent_card_key(principal: str) -> StateKey:
    """The current Agent Card version of ``principal``: the registry's answer, loaded by the
    write path (``None`` for a person or an unknown agent)."""
    return ("agent_card", principal)


def agent_keys_key(principal: str) -> StateKey:
    """The current public keys of ``principal`` (an empty list for a person)."""
    return ("agent_keys", principal)


def artifact_uri(digest: str) -> str:
    """Where the authority serves the bytes (a location, never identity: R13.1-06)."""
    return f"/api/v1/artifacts/{digest}"


# --- shape -------------------------------------------------------------------------------


def check_manifest(value: object, path: str = "$.manifest") -> dict[str, Any]:
    """Every field of wire.md §9's manifest, with its type (R13.1-03); a classification and the
    provenance (``sources``) are required of every artifact (R13.3-06, as far as this server
    goes: there is no organisation catalogue to approve reusable knowledge into)."""
    if not isinstance(value, dict):
        raise malformed("a manifest is an object", path, "R13.1-03")
    no_private_reasoning(value, path, "R13.2-05")
    check_fields(value, required=MANIFEST_FIELDS, optional=("signature",), path=path)
    if not is_digest(value["digest"]):
        raise malformed("expected sha256:<64 lowercase hex>", f"{path}.digest", "wire§1")
    check_text(value["media_type"], f"{path}.media_type", max_length=255)
    if value["schema"] is not None:
        check_text(value["schema"], f"{path}.schema", max_length=2000)
    producer = value["producer"]
    if not isinstance(producer, dict):
        raise malformed("producer is {agent, version, agent_card_version}", f"{path}.producer")
    check_fields(producer, required=PRODUCER_FIELDS, path=f"{path}.producer")
    check_principal(producer["agent"], f"{path}.producer.agent")
    check_text(producer["version"], f"{path}.producer.version", max_length=200)
    check_text(producer["agent_card_version"], f"{path}.producer.agent_card_version", max_length=64)
    check_id(value["mission"], f"{path}.mission")
    check_id(value["work_item"], f"{path}.work_item")
    digests(value["sources"], f"{path}.sources")
    tools = value["tool_versions"]
    if not isinstance(tools, dict):
        raise malformed("tool_versions maps a name to a version", f"{path}.tool_versions")
    for name, version in tools.items():
        check_text(name, f"{path}.tool_versions", max_length=200)
        check_text(version, f"{path}.tool_versions.{name}", max_length=200)
    timestamp(value["created_at"], f"{path}.created_at")
    check_text(value["classification"], f"{path}.classification", max_length=64)
    size = value["size"]
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise malformed("size is the stored object's bytes", f"{path}.size", "R13.1-03")
    check_text(value["uri"], f"{path}.uri", max_length=2000)
    if "signature" in value:
        check_text(value["signature"], f"{path}.signature", max_length=200)
    return value


def validate_publish(body: dict[str, Any]) -> None:
    check_fields(body, required=("work_item", "lease_id", "manifest"))
    check_id(body["work_item"], "$.work_item")
    check_id(body["lease_id"], "$.lease_id")
    check_manifest(body["manifest"])


def validate_record_manifest(body: dict[str, Any]) -> None:
    check_fields(body, required=("work_item", "manifest"))
    check_id(body["work_item"], "$.work_item")
    check_manifest(body["manifest"])


# --- keys --------------------------------------------------------------------------------


def _manifest_digests(command: Command) -> list[str]:
    manifest = command.body["manifest"]
    return [manifest["digest"], *manifest["sources"]]


def keys_of_publish(command: Command, view: View) -> set[StateKey]:
    named = _manifest_digests(command)
    return {
        *item_keys(command, view),
        *stored_keys(named),
        *(artifact_key(digest) for digest in named),
        agent_card_key(command.actor),
        agent_keys_key(command.actor),
    }


def keys_of_record_manifest(command: Command, view: View) -> set[StateKey]:
    named = _manifest_digests(command)
    return {*item_keys(command, view), *stored_keys(named), artifact_key(named[0])}


# --- decide ------------------------------------------------------------------------------


def decide_publish(view: View, command: Command) -> Decision:
    """The owner publishes a manifest of bytes it may name, under its live lease (R13.1-03).

    Beside the state table (it changes no state): the owner's checks of wire.md §8's
    precedence, then ``active``, then a live lease."""
    item = require_item(view, command.body["work_item"])
    require_owner(item, command.actor)
    require_current_lease_id(item, command.body["lease_id"])
    if item.state != ACTIVE:
        raise ProtocolError(
            ErrorCode.ILLEGAL_TRANSITION,
            f"{item.id} is {item.state}: artifacts are published while it is active",
            requirement="R13.1-03",
            details={"work_item": item.id, "state": item.state},
        )
    require_live_lease(item, command.now)
    manifest = command.body["manifest"]
    producer = manifest["producer"]
    if producer["agent"] != command.actor:
        raise _bad("the producer is the sender", "$.manifest.producer.agent", command.actor)
    card = view.get(agent_card_key(command.actor))
    if card is not None and producer["agent_card_version"] != card:
        raise _bad(
            "agent_card_version is the sender's current Agent Card version",
            "$.manifest.producer.agent_card_version",
            card,
        )
    _require_scope(item, manifest)
    _require_stored(view, manifest)
    _require_unpublished(view, manifest["digest"])
    _require_sources(view, item, manifest["sources"])
    if "signature" in manifest:
        _require_producer_signature(view, command.actor, manifest)
        return Decision([NewEvent(PUBLISHED, {**command.body, "signed_by": command.actor})])
    return Decision(
        [
            NewEvent(
                PUBLISHED,
                {**command.body, "signed_by": AUTHORITY},
                authority_signs=("manifest",),
            )
        ]
    )


def decide_record_manifest(view: View, command: Command) -> Decision:
    """The authority's manifest of a submitted artifact nobody published (R13.1-03)."""
    item = require_item(view, command.body["work_item"])
    manifest = command.body["manifest"]
    _require_scope(item, manifest)
    _require_stored(view, manifest)
    _require_unpublished(view, manifest["digest"])
    payload = {
        "work_item": command.body["work_item"],
        "manifest": without(manifest, "signature"),
        "signed_by": AUTHORITY,
    }
    return Decision([NewEvent(PUBLISHED, payload, authority_signs=("manifest",))])


def recorded_manifest(
    *,
    item: WorkItem,
    stored: StoredArtifact,
    producer: str,
    card_version: str | None,
    media_type: str | None,
    schema: str | None,
    created_at: str,
) -> dict[str, Any]:
    """The manifest the authority records for a submitted artifact (R13.1-03): the submitter
    is its producer; the producing software's version is unknown to the authority, so it is
    written as the Agent Card version (or ``unknown`` for a person)."""
    version = card_version or "unknown"
    return {
        "digest": stored.digest,
        "media_type": media_type or DEFAULT_MEDIA_TYPE,
        "schema": schema,
        "producer": {"agent": producer, "version": version, "agent_card_version": version},
        "mission": item.mission,
        "work_item": item.id,
        "sources": [ref["ref"] for ref in item.contract.get("inputs", [])],
        "tool_versions": {},
        "created_at": created_at,
        "classification": DEFAULT_CLASSIFICATION,
        "size": stored.size,
        "uri": artifact_uri(stored.digest),
    }


def unpublished(view: View, digests_: Sequence[str]) -> list[str]:
    """The digests among ``digests_`` with no manifest in this group yet, in order."""
    out: list[str] = []
    for digest in digests_:
        record: ArtifactRecord | None = view.get(artifact_key(digest))
        if (record is None or record.manifest is None) and digest not in out:
            out.append(digest)
    return out


# --- rules -------------------------------------------------------------------------------


def _bad(message: str, path: str, expected: object) -> ProtocolError:
    return ProtocolError(
        ErrorCode.MALFORMED,
        message,
        requirement="R13.1-03",
        details={"path": path, "expected": expected},
    )


def _require_scope(item: WorkItem, manifest: dict[str, Any]) -> None:
    if manifest["work_item"] != item.id:
        raise _bad("the manifest's work_item is the command's", "$.manifest.work_item", item.id)
    if manifest["mission"] != item.mission:
        raise _bad("the manifest's mission is the WorkItem's", "$.manifest.mission", item.mission)


def _require_stored(view: View, manifest: dict[str, Any]) -> None:
    """The bytes are stored and the sender may name them; ``size`` is theirs (R13.1-02)."""
    stored = require_nameable(view, [("$.manifest.digest", manifest["digest"])])
    size = stored[manifest["digest"]].size
    if manifest["size"] != size:
        raise _bad("size is the stored object's size in bytes", "$.manifest.size", size)


def _require_unpublished(view: View, digest: str) -> None:
    """An artifact is immutable (R13.1-01): its manifest is recorded once per group."""
    record: ArtifactRecord | None = view.get(artifact_key(digest))
    if record is not None and record.manifest is not None:
        raise ProtocolError(
            ErrorCode.ILLEGAL_TRANSITION,
            f"{digest} already has a manifest in this group",
            requirement="R13.1-01",
            details={"digest": digest, "published": record.published},
        )


def _require_sources(view: View, item: WorkItem, sources: list[str]) -> None:
    """Sources are published here or inputs of the contract: edges the log can show."""
    inputs = {ref["ref"] for ref in item.contract.get("inputs", [])}
    require_nameable(view, [(f"$.manifest.sources[{i}]", d) for i, d in enumerate(sources)])
    for index, digest in enumerate(sources):
        record: ArtifactRecord | None = view.get(artifact_key(digest))
        if digest in inputs or (record is not None and record.manifest is not None):
            continue
        raise ProtocolError(
            ErrorCode.NOT_FOUND,
            f"source {digest} is neither published in this group nor an input of {item.id}",
            requirement="R13.1-04",
            details={"path": f"$.manifest.sources[{index}]", "digest": digest},
        )


def _require_producer_signature(view: View, actor: str, manifest: dict[str, Any]) -> None:
    keys: list[Ed25519PublicKey] = view.get(agent_keys_key(actor)) or []
    message = canonical_bytes(without(manifest, "signature"))
    if not any(verify(key, message, manifest["signature"]) for key in keys):
        raise ProtocolError(
            ErrorCode.INVALID_SIGNATURE,
            "the manifest's signature is not the producer's over the canonical manifest",
            requirement="R13.1-03",
            details={"path": "$.manifest.signature"},
        )
