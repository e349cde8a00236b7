"""The provenance graph of an artifact as one group's log shows it (R13.1-04).

``GET /groups/{g}/artifacts/{digest}``: the recorded manifest with its signature and who made
it, the artifacts it was derived from and those derived from it (both ways, one hop each,
with their manifests), every place the log cites it, and — among the WorkItems citing it —
which submissions, evidence and accepted results (the approvals of R13.2-03 step 5) rest on it.
"""

from __future__ import annotations

from typing import Any

from apps.artifacts.models import GroupArtifact
from missionweave.protocol.artifacts.records import ArtifactRecord
from missionweave.protocol.errors import ErrorCode, ProtocolError

from .models import WorkItem

#: citations by event type, as the graph groups them
_SUBMISSIONS = frozenset({"work.submitted", "work.late_result_recorded"})
_EVIDENCE = frozenset({"evidence.recorded", "work.failed", "work.retry_scheduled"})


def artifact_provenance(group_id: str, digest: str) -> dict[str, Any]:
    """The graph around ``digest`` in ``group_id``; ``NOT_FOUND`` when this log never cites
    it (the same answer whether or not the bytes exist anywhere: no existence leak)."""
    records = _records(group_id, [digest])
    record = records.get(digest)
    if record is None:
        raise ProtocolError(
            ErrorCode.NOT_FOUND,
            f"no artifact {digest} in group {group_id}",
            requirement="R13.1-04",
            details={"digest": digest},
        )
    sources = (record.manifest or {}).get("sources", [])
    neighbours = _records(group_id, [*sources, *record.derived])
    items = sorted({c["work_item"] for c in record.citations if c.get("work_item")})
    return {
        "group": group_id,
        "digest": digest,
        "manifest": record.manifest,
        "signed_by": record.signed_by,
        "published": record.published,
        "sources": [_node(d, neighbours.get(d)) for d in sources],
        "derived": [_node(d, neighbours.get(d)) for d in record.derived],
        "citations": list(record.citations),
        "cited": record.cited,
        "work_items": items,
        "submissions": [c for c in record.citations if c["event"] in _SUBMISSIONS],
        "evidence": [c for c in record.citations if c["event"] in _EVIDENCE],
        "approvals": _approvals(group_id, items),
    }


def _records(group_id: str, digests: list[str]) -> dict[str, ArtifactRecord]:
    rows = GroupArtifact.objects.filter(group_id=group_id, digest__in=digests)
    return {row.digest: GroupArtifact.projection.to_state(row) for row in rows}


def _node(digest: str, record: ArtifactRecord | None) -> dict[str, Any]:
    return {
        "digest": digest,
        "manifest": record.manifest if record is not None else None,
        "signed_by": record.signed_by if record is not None else None,
    }


def _approvals(group_id: str, work_items: list[str]) -> list[dict[str, Any]]:
    """The accepted results among ``work_items``: who accepted and at which sequence."""
    approvals = []
    rows = WorkItem.objects.filter(group_id=group_id, work_item_id__in=work_items)
    for row in rows.order_by("work_item_id"):
        for sequence, type_, actor in row.to_state().history:
            if type_ == "work.result_accepted":
                approvals.append({"work_item": row.work_item_id, "sequence": sequence, "by": actor})
    return approvals
