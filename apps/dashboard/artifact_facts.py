"""Artifacts as a person reads them (issue 34 §6): by name, media type, size and producer,
the digest secondary.

A digest proves which bytes are meant; it does not say what they are. Each artifact a page
lists is shown by what its manifest (R13.1-03) says of it — or, before one is published,
by what the contract calls it and how large the stored bytes are. One query for all the
digests of a page: the group's artifact projection with each stored blob's size.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from django.db.models import OuterRef, Subquery

from apps.artifacts.models import Blob, GroupArtifact


@dataclass(frozen=True)
class ArtifactFacts:
    digest: str
    #: what the contract (or the submission's ``outputs``) calls it; "" when nothing does
    name: str = ""
    media_type: str = ""
    size: int | None = None
    #: the manifest's producer (a principal), "" before a manifest is recorded
    producer: str = ""
    #: whether the group's log cites the digest (only then does its page exist)
    cited: bool = False


def artifact_facts(
    group_id: str, digests: Iterable[str], *, names: Mapping[str, str] | None = None
) -> list[ArtifactFacts]:
    """The facts of each of ``digests`` (in their order, once each), ``names`` giving what
    the contract calls each one."""
    wanted = list(dict.fromkeys(d for d in digests if isinstance(d, str) and d))
    if not wanted:
        return []
    size = Blob.objects.filter(pk=OuterRef("digest")).values("size")[:1]
    rows = {
        digest: (data, stored)
        for digest, data, stored in GroupArtifact.objects.filter(
            group_id=group_id, digest__in=wanted
        )
        .annotate(stored_size=Subquery(size))
        .values_list("digest", "data", "stored_size")
    }
    named = names or {}
    found = []
    for digest in wanted:
        data, stored = rows.get(digest, ({}, None))
        manifest = (data or {}).get("manifest") or {}
        producer = manifest.get("producer") if isinstance(manifest, dict) else None
        found.append(
            ArtifactFacts(
                digest=digest,
                name=named.get(digest, ""),
                media_type=str(manifest.get("media_type") or ""),
                size=manifest.get("size") if isinstance(manifest.get("size"), int) else stored,
                producer=str((producer or {}).get("agent") or ""),
                cited=digest in rows,
            )
        )
    return found


def contract_inputs(contract: Mapping[str, object]) -> tuple[list[str], dict[str, str]]:
    """The digests a contract's ``inputs`` name, and what it calls each (its ``name``, else
    "input 1", "input 2"…)."""
    digests: list[str] = []
    names: dict[str, str] = {}
    inputs = contract.get("inputs")
    for number, entry in enumerate(inputs if isinstance(inputs, list) else [], start=1):
        if not isinstance(entry, dict) or not isinstance(entry.get("ref"), str):
            continue
        digests.append(entry["ref"])
        names[entry["ref"]] = str(entry.get("name") or f"input {number}")
    return digests, names
