"""A digest is not a key (wire.md §9): the artifacts a command may name.

A command may name an artifact only if its sender may read it, or a current member of the
group uploaded it. The write path loads, for each digest a command names, what the store says
the sender may name (``stored_artifact_key``); anything else is refused exactly like a digest
never stored — 404 ``NOT_FOUND`` with ``details.digest`` — so the refusal reveals nothing.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import ErrorCode, ProtocolError
from ..facts import StateKey, View
from .records import StoredArtifact, stored_artifact_key


def stored_keys(digests: Iterable[str]) -> set[StateKey]:
    """The view keys that load what the store says about ``digests`` for the sender."""
    return {stored_artifact_key(digest) for digest in digests}


def require_nameable(view: View, named: Iterable[tuple[str, str]]) -> dict[str, StoredArtifact]:
    """Each ``(JSON path, digest)`` names a stored artifact the sender may name; the first
    that does not is ``NOT_FOUND`` naming it (R13.1-01, wire.md §9)."""
    found: dict[str, StoredArtifact] = {}
    for path, digest in named:
        stored = view.get(stored_artifact_key(digest))
        if stored is None:
            raise ProtocolError(
                ErrorCode.NOT_FOUND,
                f"no stored artifact {digest}",
                requirement="R13.1-01",
                details={"path": path, "digest": digest},
            )
        found[digest] = stored
    return found
