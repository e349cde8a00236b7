"""Reads behind the review page's "What changed since the last submission" card (issue 37 §6):
the previous ``work.submitted`` of a WorkItem, the decision that sent it back, and the bytes
of the outputs that changed — then ``resubmission`` compares them.

Bounded, because the review page redraws on every live event: the previous submission and
its decision are found on the WorkItem projection's ``history`` (the latest events, no scan
of the log) and read by their sequences (one primary-key query); the artifacts' media types
and sizes come from one query (``artifact_facts``); bytes are read only for outputs whose
digest changed and whose type can be compared as text or JSON, at most
:data:`COMPARED_PER_PAGE` of them, each only when it is at most
:data:`~apps.dashboard.previews.DIFF_BYTES` — verified against its digest before it is used
(R13.1-05). A first submission has no card (``None``).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from apps.artifacts.retrieval import Corrupted
from apps.ledger.models import ArchivedEvent, Event
from missionweave.protocol.artifacts.outputs import declared_outputs
from missionweave.protocol.timefmt import parse_timestamp
from missionweave.protocol.work.items import WorkItem as WorkItemState

from . import previews
from . import resubmission as rs
from .artifact_facts import ArtifactFacts, artifact_facts

logger = logging.getLogger(__name__)

#: at most this many changed outputs are read and compared on one page; the rest say so
COMPARED_PER_PAGE = 12
SUBMITTED = "work.submitted"
#: the events that take a submission out of review, in words (as ``review.DECISIONS``)
DECISIONS = {
    "work.failed": "sent back",
    "work.cancelled": "cancelled",
    "work.result_accepted": "accepted",
    SUBMITTED: "replaced by a new submission",
}


def previous_submission(item: WorkItemState, submission: int) -> int | None:
    """The sequence of the ``work.submitted`` before ``submission``, if the item's history
    still holds it (the projection keeps its latest events: ``HISTORY_LIMIT``)."""
    return max(
        (seq for seq, type_, _actor in item.history if type_ == SUBMITTED and seq < submission),
        default=None,
    )


def _deciding(item: WorkItemState, previous: int, submission: int) -> tuple[int, str, str] | None:
    """The first event after ``previous`` (up to the new submission) that decided it."""
    return next(
        (
            entry
            for entry in item.history
            if previous < entry[0] <= submission and entry[1] in DECISIONS
        ),
        None,
    )


def _documents(group_id: str, sequences: list[int]) -> dict[int, dict[str, Any]]:
    """The events at ``sequences``, from the online log or, once archived, the archive."""
    found: dict[int, dict[str, Any]] = {}
    for model in (Event, ArchivedEvent):
        missing = [s for s in sequences if s not in found]
        if not missing:
            break
        rows = model.objects.filter(group_id=group_id, sequence__in=missing)
        found.update((s, json.loads(doc)) for s, doc in rows.values_list("sequence", "document"))
    return found


def _at(document: dict[str, Any]) -> Any:
    try:
        return parse_timestamp(document.get("recorded_at"))
    except ValueError:
        return None


def _verdicts(payload: dict[str, Any]) -> tuple[rs.Verdict, ...]:
    """A send-back's evidence as verdicts: "needs changes" is a ``fail`` whose data says so
    (R13.2-04); a note that only repeats the verdict's label is no note."""
    verdicts = []
    for evidence in payload.get("evidence", ()):
        result = evidence.get("result") or {}
        data = result.get("data") if isinstance(result.get("data"), dict) else {}
        verdict = str(data.get("review_verdict") or result.get("verdict") or "fail")
        note = str(result.get("summary") or "")
        if note.lower() == verdict.replace("_", " "):
            note = ""
        verdicts.append(rs.Verdict(str(evidence.get("criterion", "")), verdict, note))
    return tuple(verdicts)


def _decision(entry: tuple[int, str, str], document: dict[str, Any]) -> rs.PreviousDecision:
    sequence, type_, actor = entry
    payload = document.get("payload") or {}
    outcome = DECISIONS[type_]
    if type_ == "work.failed" and payload.get("propagated_from"):
        outcome = "failed with its mission"
    return rs.PreviousDecision(
        outcome=outcome,
        by=actor,
        at=_at(document),
        sequence=sequence,
        verdicts=_verdicts(payload) if type_ == "work.failed" else (),
    )


def _outputs(document: dict[str, Any], declared: list[str]) -> dict[str, str]:
    payload = document.get("payload") or {}
    return rs.named_outputs(payload.get("outputs") or {}, payload.get("artifacts") or (), declared)


def _needs_bytes(facts: ArtifactFacts) -> bool:
    """Whether reading the bytes can tell more than "they differ": a text or JSON type, or
    none named (the bytes are sniffed)."""
    return rs.content_kind(facts.media_type, "") != rs.BINARY


def _side(facts: ArtifactFacts, *, read: bool, principal: str) -> rs.Side:
    side = rs.Side(facts.digest, facts.media_type, facts.size)
    if not read:
        return side
    if facts.size is None:
        return rs.Side(facts.digest, facts.media_type, None, why_not="its bytes are not stored")
    if facts.size > previews.DIFF_BYTES:
        limit = previews.DIFF_BYTES // 1024
        return rs.Side(
            facts.digest,
            facts.media_type,
            facts.size,
            why_not=f"over {limit} KiB: too large to compare here",
        )
    try:
        data, size = previews.verified_head(facts.digest, previews.DIFF_BYTES, principal=principal)
    except Corrupted:
        why = "its stored bytes are corrupted: not compared"
        return rs.Side(facts.digest, facts.media_type, facts.size, why_not=why)
    except OSError:
        logger.exception("artifact storage unavailable comparing %s", facts.digest)
        why = "its bytes could not be read just now"
        return rs.Side(facts.digest, facts.media_type, facts.size, why_not=why)
    return rs.Side(facts.digest, facts.media_type, size, data=data)


def _not_compared(
    name: str, before: ArtifactFacts | None, after: ArtifactFacts | None
) -> rs.OutputChange:
    """A changed output past :data:`COMPARED_PER_PAGE`: its bytes are not read."""
    return rs.OutputChange(
        name,
        rs.CHANGED,
        before=None if before is None else rs.Side(before.digest, before.media_type, before.size),
        after=None if after is None else rs.Side(after.digest, after.media_type, after.size),
        not_compared=f"more than {COMPARED_PER_PAGE} outputs changed: open it to compare it",
    )


def changes_since_previous(
    group_id: str, item: WorkItemState, submission: int, *, principal: str
) -> rs.Resubmission | None:
    """The card for the submission at ``submission``, or ``None`` for a first submission
    (or one whose predecessor has left the item's history)."""
    previous = previous_submission(item, submission)
    if previous is None:
        return None
    deciding = _deciding(item, previous, submission)
    wanted = [previous, submission] + ([deciding[0]] if deciding else [])
    documents = _documents(group_id, sorted(set(wanted)))
    if previous not in documents or submission not in documents:
        return None
    declared = list(declared_outputs(item.contract))
    before = _outputs(documents[previous], declared)
    after = _outputs(documents[submission], declared)
    pairs = rs.pair(before, after, declared)
    facts = {
        f.digest: f
        for f in artifact_facts(group_id, [d for _n, *ds in pairs for d in ds if d is not None])
    }
    compared = 0
    outputs = []
    for name, old, new in pairs:
        before_facts = facts[old] if old is not None else None
        after_facts = facts[new] if new is not None else None
        read = (
            before_facts is not None
            and after_facts is not None
            and old != new
            and (_needs_bytes(before_facts) or _needs_bytes(after_facts))
        )
        compared += int(read)
        if read and compared > COMPARED_PER_PAGE:
            outputs.append(_not_compared(name, before_facts, after_facts))
            continue
        sides = [
            None if f is None else _side(f, read=read, principal=principal)
            for f in (before_facts, after_facts)
        ]
        outputs.append(rs.compare(name, sides[0], sides[1]))
    previous_document = documents[previous]
    return rs.Resubmission(
        previous_sequence=previous,
        previous_at=_at(previous_document),
        previous_by=str(previous_document.get("actor", "")),
        decision=(
            _decision(deciding, documents[deciding[0]])
            if deciding is not None and deciding[0] in documents
            else None
        ),
        outputs=tuple(outputs),
    )
