"""The command envelope (wire.md §3): its shape, what is signed, what "same content" means.

The checks here are the pure parts of wire.md §3, in its order: step 2 (well-formed
envelope, group, extensions, known type), the signature half of step 3, and step 4 (clock
skew). Steps that need stored state (tokens, idempotency, epochs, membership) live in the
write path, which calls these in sequence.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from .canonical import canonical_bytes, digest, without
from .errors import ErrorCode, ProtocolError
from .identifiers import is_id, parse_principal, user_principal
from .signing import sign, verify
from .timefmt import format_timestamp, parse_timestamp

CLOCK_SKEW = timedelta(seconds=300)
_REQUIRED = ("id", "type", "group", "actor", "membership_epoch", "issued_at", "body")
_OPTIONAL = ("session_epoch", "extensions", "signature")
# What "the same content" means for idempotency (wire.md §3 step 5): a retry may be re-signed
# with a fresh issued_at and, after reconnecting, new epochs (R11.5-09).
_NOT_CONTENT = ("signature", "issued_at", "session_epoch", "membership_epoch")


@dataclass(frozen=True, slots=True)
class Envelope:
    """A well-formed command envelope."""

    id: str
    type: str
    group: str
    actor: str
    actor_kind: str  # "agent" or "user"
    actor_name: str
    session_epoch: int | None
    membership_epoch: int
    issued_at: datetime
    body: dict[str, Any]
    extensions: dict[str, Any]
    signature: str | None
    document: dict[str, Any]

    @property
    def content_digest(self) -> str:
        """Digest of the content that idempotency compares (wire.md §3 step 5)."""
        return digest(without(self.document, *_NOT_CONTENT))


def _malformed(message: str, path: str) -> ProtocolError:
    return ProtocolError(ErrorCode.MALFORMED, message, requirement="wire§3", details={"path": path})


def _is_epoch(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def parse_envelope(
    document: object,
    *,
    path_group: str,
    known_types: Collection[str],
    supported_extensions: Collection[str] = (),
) -> Envelope:
    """Check wire.md §3 step 2 and return the envelope, or raise the step's error."""
    if not isinstance(document, dict):
        raise _malformed("a command is a JSON object", "$")
    for name in _REQUIRED:
        if name not in document:
            raise _malformed(f"missing field {name!r}", f"$.{name}")
    unknown = sorted(set(document) - set(_REQUIRED) - set(_OPTIONAL))
    if unknown:
        raise _malformed(f"unknown field {unknown[0]!r}", f"$.{unknown[0]}")
    if not is_id(document["id"]):
        raise _malformed("id is 1..128 characters of [A-Za-z0-9._:-]", "$.id")
    if not isinstance(document["type"], str):
        raise _malformed("type is a string", "$.type")
    if not isinstance(document["group"], str):
        raise _malformed("group is a string", "$.group")
    if document["group"] != path_group:
        raise _malformed("the envelope's group is not the group of the path", "$.group")
    try:
        kind, name = parse_principal(document["actor"])
    except ValueError as exc:
        raise _malformed(str(exc), "$.actor") from None
    if not _is_epoch(document["membership_epoch"]):
        raise _malformed("membership_epoch is a non-negative integer", "$.membership_epoch")
    try:
        issued_at = parse_timestamp(document["issued_at"])
    except (ValueError, OverflowError) as exc:
        raise _malformed(str(exc), "$.issued_at") from None
    if not isinstance(document["body"], dict):
        raise _malformed("body is an object", "$.body")
    extensions = document.get("extensions", {})
    if not isinstance(extensions, dict):
        raise _malformed("extensions is an object keyed by URN", "$.extensions")
    if kind == "agent":
        if not _is_epoch(document.get("session_epoch")):
            raise _malformed("an agent's command carries session_epoch", "$.session_epoch")
        if not isinstance(document.get("signature"), str):
            raise _malformed("an agent's command is signed", "$.signature")
    else:
        for name_ in ("session_epoch", "signature"):
            if name_ in document:
                raise _malformed(f"a human's command carries no {name_}", f"$.{name_}")
    for urn in extensions:
        if urn not in supported_extensions:
            raise ProtocolError(
                ErrorCode.UNSUPPORTED_EXTENSION,
                f"extension {urn!r} is not supported by this authority",
                requirement="wire§3",
                details={"extension": urn},
            )
    if document["type"] not in known_types:
        raise ProtocolError(
            ErrorCode.UNKNOWN_COMMAND,
            f"unknown command type {document['type']!r}",
            requirement="wire§9",
            details={"type": document["type"]},
        )
    return Envelope(
        id=document["id"],
        type=document["type"],
        group=document["group"],
        actor=document["actor"],
        actor_kind=kind,
        actor_name=name,
        session_epoch=document.get("session_epoch"),
        membership_epoch=document["membership_epoch"],
        issued_at=issued_at,
        body=document["body"],
        extensions=extensions,
        signature=document.get("signature"),
        document=document,
    )


def signing_bytes(document: dict[str, Any]) -> bytes:
    """What an agent signs: the canonical envelope without ``signature``."""
    return canonical_bytes(without(document, "signature"))


def check_signature(envelope: Envelope, keys: Collection[Ed25519PublicKey]) -> None:
    """wire.md §3 step 3: the signature verifies under one of the actor's current keys."""
    message = signing_bytes(envelope.document)
    if envelope.signature is None or not any(
        verify(key, message, envelope.signature) for key in keys
    ):
        raise ProtocolError(
            ErrorCode.INVALID_SIGNATURE,
            "the signature does not verify under a current key of the actor",
            requirement="wire§3",
        )


def check_clock_skew(issued_at: datetime, now: datetime, *, skew: timedelta = CLOCK_SKEW) -> None:
    """wire.md §3 step 4: ``issued_at`` within ±300 s of the authority clock."""
    if abs(issued_at - now) > skew:
        raise ProtocolError(
            ErrorCode.CLOCK_SKEW,
            f"issued_at is more than {int(skew.total_seconds())} s from the authority clock",
            requirement="wire§3",
            details={"authority_time": now.isoformat().replace("+00:00", "Z")},
        )


def signed_envelope(key: Ed25519PrivateKey, document: dict[str, Any]) -> dict[str, Any]:
    """``document`` signed by an agent key (what a client does before sending a command)."""
    unsigned = without(document, "signature")
    return {**unsigned, "signature": sign(key, canonical_bytes(unsigned))}


def human_envelope(
    *,
    command_id: str,
    type_: str,
    group: str,
    username: str,
    membership_epoch: int,
    issued_at: datetime,
    body: dict[str, Any],
) -> dict[str, Any]:
    """A person's command (wire.md §3): no signature, no session epoch; the API token or the
    dashboard session authenticates it."""
    return {
        "id": command_id,
        "type": type_,
        "group": group,
        "actor": user_principal(username),
        "membership_epoch": membership_epoch,
        "issued_at": format_timestamp(issued_at),
        "body": body,
    }
