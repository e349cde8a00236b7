"""How a group's log builds its ``artifact`` aggregates (R13.1-04, wire.md §4).

Every event that cites a digest (``citations.BY_EVENT``) creates the group's record of it on
first citation and adds a citation; ``artifact.published`` also records the signed manifest
on its own digest and adds it to the ``derived`` list of each of its sources, so the
provenance graph is walkable both ways from any artifact.
"""

from __future__ import annotations

from ..evolvers import REGISTRY, evolves
from ..facts import Fact, StateKey
from ..frozen import replace
from .citations import BY_EVENT, cited_by
from .records import MAX_CITATIONS, ArtifactRecord, artifact_key

PUBLISHED = "artifact.published"


def _cited(fact: Fact) -> list[StateKey]:
    return [artifact_key(digest) for _path, digest in cited_by(fact.type, fact.payload)]


ARTIFACT = REGISTRY.aggregate("artifact", keys=_cited)


def _with_citation(record: ArtifactRecord | None, fact: Fact, key: StateKey) -> ArtifactRecord:
    digest = key[1]
    record = record or ArtifactRecord(digest=digest)
    path = next(p for p, d in cited_by(fact.type, fact.payload) if d == digest)
    citation = {
        "sequence": fact.sequence,
        "event": fact.type,
        "work_item": fact.payload.get("work_item"),
        "field": path,
        "actor": fact.actor,
    }
    return replace(
        record,
        citations=(*record.citations, citation)[-MAX_CITATIONS:],
        cited=record.cited + 1,
    )


@evolves(*sorted(set(BY_EVENT) - {PUBLISHED}), aggregate=ARTIFACT, creates=True)
def _citing(record: ArtifactRecord | None, fact: Fact, key: StateKey) -> ArtifactRecord:
    return _with_citation(record, fact, key)


@evolves(PUBLISHED, aggregate=ARTIFACT, creates=True)
def _published(record: ArtifactRecord | None, fact: Fact, key: StateKey) -> ArtifactRecord:
    """The manifest on its own digest; on each source, the new artifact as derived from it."""
    record = _with_citation(record, fact, key)
    manifest = fact.payload["manifest"]
    if key[1] == manifest["digest"]:
        return replace(
            record,
            manifest=manifest,
            signed_by=fact.payload["signed_by"],
            published=fact.sequence,
        )
    if manifest["digest"] in record.derived:
        return record
    return replace(record, derived=(*record.derived, manifest["digest"]))
