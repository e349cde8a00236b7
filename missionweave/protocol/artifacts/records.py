"""The two things a decision may know about an artifact.

``ArtifactRecord`` is a projection of one group's log (kind ``artifact``, keyed by digest):
the digest is referenced by that log, with its recorded manifest (R13.1-03), every place the
log cites it and the artifacts derived from it (R13.1-04). It is rebuilt by replay like every
other aggregate, and "a member of a group whose log references it may read it" (wire.md §4)
is a question about these rows.

``StoredArtifact`` is not in any log: it is the artifact store's answer, for one command's
sender, about bytes it may name (wire.md §9 "A digest is not a key"). The write path loads it
for the digests a command names (``stored_artifact_key``); a digest the sender may not name
loads as ``None``, exactly like one never stored, so the refusal reveals nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..facts import StateKey

#: a log keeps at most this many citations per artifact in its projection (all stay in the log)
MAX_CITATIONS = 200


def artifact_key(digest: str) -> StateKey:
    return ("artifact", digest)


def stored_artifact_key(digest: str) -> StateKey:
    """Loaded by the write path from the artifact store for the command's sender; never saved."""
    return ("stored_artifact", digest)


@dataclass(frozen=True, slots=True)
class StoredArtifact:
    digest: str
    size: int


@dataclass(frozen=True, slots=True)
class ArtifactRecord:
    digest: str
    #: the signed manifest recorded by ``artifact.published`` (None until one is)
    manifest: dict[str, Any] | None = None
    #: whose key made the manifest's ``signature``: its producer or ``authority``
    signed_by: str | None = None
    #: the sequence of the ``artifact.published`` event that recorded the manifest
    published: int | None = None
    #: where this log cites the digest: {"sequence", "event", "work_item", "field"}, oldest first
    citations: tuple[dict[str, Any], ...] = ()
    #: how many citations there are in all (``citations`` keeps the last MAX_CITATIONS)
    cited: int = 0
    #: digests of artifacts published in this group with this one among their ``sources``
    derived: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "digest": self.digest,
            "manifest": self.manifest,
            "signed_by": self.signed_by,
            "published": self.published,
            "citations": list(self.citations),
            "cited": self.cited,
            "derived": list(self.derived),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ArtifactRecord:
        return cls(
            digest=data["digest"],
            manifest=data.get("manifest"),
            signed_by=data.get("signed_by"),
            published=data.get("published"),
            citations=tuple(data.get("citations", ())),
            cited=data.get("cited", 0),
            derived=tuple(data.get("derived", ())),
        )
