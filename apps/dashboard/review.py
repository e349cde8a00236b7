"""Reads behind the evidence review: one submission's criteria with every piece of evidence,
the authority's checks and the artifacts, and the queue of submissions a person may judge.

The review a screen shows is the one the write path keeps on the WorkItem projection
(``review``: R13.2-03's per-criterion summary, opened by ``work.submitted``); the full
evidence items (result data, artifacts) are read from the log by the sequences that summary
names — a handful of primary-key reads, never a scan of the group's log. What the person may
do is asked of the write path's preview (``preview.refusal``), with the body they would send,
so the screen says why in the protocol's own words when they may not.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from apps.ledger import preview
from apps.ledger.models import Event
from apps.ledger.write_path import Caller
from apps.registry.models import Membership
from apps.work.models import Mission, WorkItem
from missionweave.protocol import states as S
from missionweave.protocol.errors import ProtocolError
from missionweave.protocol.identifiers import AUTHORITY
from missionweave.protocol.timefmt import parse_timestamp
from missionweave.protocol.work.assessment import INTEGRITY
from missionweave.protocol.work.items import WorkItem as WorkItemState

from . import previews
from .work_item_cards import Countdown, _now

#: the verdicts a person gives a criterion (wire.md §9 ``work.accept_result``)
VERDICTS = ("pass", "fail", "needs_changes")
VERDICT_LABELS = {"pass": "Pass", "fail": "Fail", "needs_changes": "Needs changes"}
#: roles whose holders judge submissions (evidence.record; accept/fail as the table allows)
JUDGING_ROLES = frozenset({"reviewer", "coordinator", "mission_owner"})
#: at most this many artifacts are previewed on one review page; the rest are links
PREVIEWS_PER_PAGE = 12
ACCEPT = "work.accept_result"
SEND_BACK = "work.fail"
RECORD = "evidence.record"
RESERVE = "review.reserve"
RELEASE = "review.release"


# --- evidence --------------------------------------------------------------------------------


@dataclass(frozen=True)
class EvidenceView:
    """One evidence item as recorded: who produced it, how, what it found, on what."""

    sequence: int
    producer: str
    method: str
    verdict: str
    summary: str
    data: str  # pretty JSON ("" when empty)
    artifacts: tuple[str, ...]
    recorded_at: datetime | None
    by_submitter: bool

    @property
    def by_authority(self) -> bool:
        return self.producer == AUTHORITY


@dataclass(frozen=True)
class CriterionView:
    """An acceptance criterion with its status and evidence (``authority`` checks apart)."""

    id: str
    description: str
    method: str
    status: str  # claimed, checking, awaiting_review, pass, fail, inconclusive
    evidence: tuple[EvidenceView, ...]
    checks: tuple[EvidenceView, ...]  # the authority's automatic checks on this criterion

    @property
    def artifacts(self) -> tuple[str, ...]:
        """Every artifact its evidence and checks cite, once each, in the order cited."""
        cited = (d for e in (*self.evidence, *self.checks) for d in e.artifacts)
        return tuple(dict.fromkeys(cited))

    @property
    def status_label(self) -> str:
        return self.status.replace("_", " ")


@dataclass(frozen=True)
class Reservation:
    """Who holds the review now (advisory, expiring by itself: wire.md §9 ``review.reserve``)."""

    reviewer: str
    countdown: Countdown
    mine: bool

    @property
    def live(self) -> bool:
        return not self.countdown.passed


@dataclass(frozen=True)
class Permission:
    """Whether the person may do one of the review's actions, and why not in words."""

    refusal: ProtocolError | None

    @property
    def allowed(self) -> bool:
        return self.refusal is None

    @property
    def reason(self) -> str:
        return "" if self.refusal is None else self.refusal.message


@dataclass(frozen=True)
class ReviewPage:
    group_id: str
    item: WorkItemState
    mission: Mission | None
    submission: int  # the sequence of the ``work.submitted`` under review
    submitted_at: datetime | None
    submitter: str
    criteria: tuple[CriterionView, ...]
    integrity: CriterionView | None  # the authority's integrity and output-schema check
    artifacts: tuple[str, ...]  # what was submitted
    outputs: dict[str, str]
    previews: dict[str, Any]  # digest -> previews.Preview, for the first PREVIEWS_PER_PAGE
    reservation: Reservation | None
    accept: Permission
    send_back: Permission
    record: Permission
    reserve: Permission
    pending_checks: tuple[str, ...]
    requests: tuple[dict[str, Any], ...]
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def open(self) -> bool:
        return self.item.state == S.SUBMITTED

    @property
    def may_decide(self) -> bool:
        return self.open and (self.accept.allowed or self.send_back.allowed or self.record.allowed)

    @property
    def held_by_other(self) -> bool:
        r = self.reservation
        return r is not None and r.live and not r.mine

    @property
    def draft_key(self) -> str:
        """Where the browser keeps this person's unsent verdicts: one draft per submission."""
        return f"mw-review:{self.group_id}:{self.item.id}:{self.submission}"


def _evidence_documents(group_id: str, sequences: set[int]) -> dict[int, dict[str, Any]]:
    if not sequences:
        return {}
    return {
        sequence: json.loads(text)
        for sequence, text in Event.objects.filter(
            group_id=group_id, sequence__in=sorted(sequences)
        ).values_list("sequence", "document")
    }


def _recorded_at(document: dict[str, Any] | None) -> datetime | None:
    try:
        return parse_timestamp((document or {}).get("recorded_at"))
    except ValueError:
        return None


def _pretty(data: object) -> str:
    if data in (None, {}, [], ""):
        return ""
    return json.dumps(data, indent=2, ensure_ascii=False)


def _full_items(document: dict[str, Any] | None, criterion: str) -> list[dict[str, Any]]:
    """The evidence items of ``criterion`` an event holds: a submission's list, or the one
    item ``evidence.recorded`` carries."""
    if document is None:
        return []
    payload = document.get("payload", {})
    if document.get("type") == "work.submitted":
        return [e for e in payload.get("evidence", []) if e.get("criterion") == criterion]
    return [payload] if payload.get("criterion") == criterion else []


def _evidence_views(
    summary: dict[str, Any],
    criterion: str,
    documents: dict[int, dict[str, Any]],
    submitter: str,
) -> list[EvidenceView]:
    views = []
    used: dict[int, int] = {}
    for entry in summary.get("evidence", []):
        sequence = entry["sequence"]
        document = documents.get(sequence)
        items = _full_items(document, criterion)
        index = used.get(sequence, 0)
        used[sequence] = index + 1
        full = items[index] if index < len(items) else {}
        result = full.get("result", {})
        views.append(
            EvidenceView(
                sequence=sequence,
                producer=entry["producer"],
                method=entry["method"],
                verdict=entry["verdict"],
                summary=entry.get("summary", ""),
                data=_pretty(result.get("data")),
                artifacts=tuple(full.get("artifacts", ())),
                recorded_at=_recorded_at(document),
                by_submitter=entry["producer"] == submitter,
            )
        )
    return views


def _criterion(
    contract_criterion: dict[str, Any],
    summary: dict[str, Any],
    documents: dict[int, dict[str, Any]],
    submitter: str,
) -> CriterionView:
    criterion = contract_criterion["id"]
    evidence = _evidence_views(summary, criterion, documents, submitter)
    return CriterionView(
        id=criterion,
        description=str(contract_criterion.get("description", "")),
        method=str(contract_criterion.get("method", summary.get("method", ""))),
        status=str(summary.get("status", "claimed")),
        evidence=tuple(e for e in evidence if not e.by_authority),
        checks=tuple(e for e in evidence if e.by_authority),
    )


def _reservation(review: dict[str, Any], principal: str) -> Reservation | None:
    held = review.get("reservation")
    if not held:
        return None
    return Reservation(
        reviewer=held["reviewer"],
        countdown=Countdown(held["expires_at"], _now(), passed_text="expired"),
        mine=held["reviewer"] == principal,
    )


# --- what the person may do: the bodies they would send, previewed ---------------------------


def accept_body(item: WorkItemState) -> dict[str, Any]:
    """An acceptance that passes every criterion: previewed, it says whether the person may
    accept at all (role, human_review, self-review), whatever verdicts they will give."""
    verdicts = [
        {"criterion": c["id"], "verdict": "pass", "note": ""}
        for c in item.contract.get("acceptance_criteria", [])
    ]
    return {"work_item": item.id, "review": {"verdicts": verdicts, "summary": ""}}


def verdict_evidence(
    item: WorkItemState, principal: str, criterion: str, verdict: str, note: str
) -> dict[str, Any]:
    """A person's verdict as an evidence item (R13.2-04): ``needs_changes`` is a ``fail``
    whose data says so; the method is the criterion's, the producer the person."""
    criteria = item.contract.get("acceptance_criteria", [])
    methods = {c["id"]: c.get("method", "human_review") for c in criteria}
    label = VERDICT_LABELS.get(verdict, verdict)
    return {
        "criterion": criterion,
        "method": methods.get(criterion, "human_review"),
        "result": {
            "verdict": "pass" if verdict == "pass" else "fail",
            "summary": note or label,
            "data": {"review_verdict": verdict},
        },
        "producer": principal,
        "artifacts": [],
    }


def send_back_body(item: WorkItemState, principal: str) -> dict[str, Any]:
    criteria = item.contract.get("acceptance_criteria", [])
    first = criteria[0]["id"] if criteria else "review"
    return {
        "work_item": item.id,
        "evidence": [verdict_evidence(item, principal, first, "needs_changes", "")],
    }


def record_body(item: WorkItemState, principal: str, submission: int) -> dict[str, Any]:
    criteria = item.contract.get("acceptance_criteria", [])
    first = criteria[0]["id"] if criteria else "review"
    return {
        "work_item": item.id,
        **verdict_evidence(item, principal, first, "pass", ""),
        "submission": submission,
    }


def _permission(caller: Caller, group_id: str, type_: str, body: dict[str, Any]) -> Permission:
    return Permission(preview.refusal(caller, group_id, type_, body))


def _previews(group_id: str, principal: str, digests: list[str]) -> dict[str, Any]:
    shown: dict[str, Any] = {}
    for digest in digests:
        if digest in shown or len(shown) >= PREVIEWS_PER_PAGE:
            continue
        try:
            shown[digest] = previews.preview_of(group_id, digest, principal=principal)
        except previews.ArtifactNotFound:
            continue  # not cited in this group (cannot happen for a submission): a link only
    return shown


def review_page(group_id: str, work_item_id: str, *, caller: Caller) -> ReviewPage | None:
    """Everything the review screen shows, or ``None`` when the item was never submitted
    (no review to show) or the group has no such item."""
    row = WorkItem.objects.filter(group_id=group_id, work_item_id=work_item_id).first()
    if row is None:
        return None
    item = row.to_state()
    review = item.review
    if review is None or item.submission is None:
        return None
    submitter = review["submitter"]
    summaries = review["criteria"]
    sequences = {e["sequence"] for s in summaries.values() for e in s.get("evidence", [])}
    sequences.add(review["submission"])
    documents = _evidence_documents(group_id, sequences)
    criteria = tuple(
        _criterion(c, summaries.get(c["id"], {}), documents, submitter)
        for c in item.contract.get("acceptance_criteria", [])
    )
    integrity = (
        _criterion(
            {
                "id": INTEGRITY,
                "description": "Artifact integrity and output schemas",
                "method": "deterministic",
            },
            summaries[INTEGRITY],
            documents,
            submitter,
        )
        if INTEGRITY in summaries
        else None
    )
    artifacts = list(item.submission.get("artifacts", ()))
    cited = [
        *artifacts,
        *(d for c in criteria for e in (*c.evidence, *c.checks) for d in e.artifacts),
    ]
    principal = caller.principal
    submission = int(review["submission"])
    return ReviewPage(
        group_id=group_id,
        item=item,
        mission=Mission.objects.filter(group_id=group_id, mission_id=item.mission).first(),
        submission=submission,
        submitted_at=_recorded_at(documents.get(submission)),
        submitter=submitter,
        criteria=criteria,
        integrity=integrity,
        artifacts=tuple(artifacts),
        outputs=dict(item.submission.get("outputs", {})),
        previews=_previews(group_id, principal, cited),
        reservation=_reservation(review, principal),
        accept=_permission(caller, group_id, ACCEPT, accept_body(item)),
        send_back=_permission(caller, group_id, SEND_BACK, send_back_body(item, principal)),
        record=_permission(caller, group_id, RECORD, record_body(item, principal, submission)),
        reserve=_permission(caller, group_id, RESERVE, {"work_item": item.id}),
        pending_checks=tuple(review.get("pending_checks", ())),
        requests=tuple(review.get("requests", ())),
    )


# --- the queue -------------------------------------------------------------------------------


@dataclass(frozen=True)
class QueueItem:
    group_id: str
    group_name: str
    item: WorkItemState
    submission: int
    reservation: Reservation | None
    statuses: dict[str, int]  # criterion status -> how many

    @property
    def held_by_other(self) -> bool:
        r = self.reservation
        return r is not None and r.live and not r.mine

    @property
    def title(self) -> str:
        return str(self.item.contract.get("title") or self.item.contract.get("goal", ""))


@dataclass(frozen=True)
class MissionProgress:
    """How far a mission's review has come: items verified out of all, and waiting now."""

    group_id: str
    mission: str
    goal: str
    total: int
    verified: int
    waiting: int

    @property
    def done_label(self) -> str:
        return f"{self.verified} of {self.total} verified"


@dataclass(frozen=True)
class ReviewQueue:
    items: tuple[QueueItem, ...]  # oldest submission first
    missions: tuple[MissionProgress, ...]

    @property
    def free(self) -> tuple[QueueItem, ...]:
        return tuple(i for i in self.items if not i.held_by_other)

    def next_after(self, group_id: str, work_item: str) -> QueueItem | None:
        """The first free item after ``(group_id, work_item)`` in queue order, wrapping
        round, never that item itself."""
        free = [i for i in self.free if (i.group_id, i.item.id) != (group_id, work_item)]
        keys = [(i.group_id, i.item.id) for i in self.items]
        if (group_id, work_item) in keys:
            position = keys.index((group_id, work_item))
            later = [i for i in free if keys.index((i.group_id, i.item.id)) > position]
            if later:
                return later[0]
        return free[0] if free else None


def judging_memberships(principal: str) -> list[Membership]:
    """The person's active memberships whose roles judge submissions."""
    rows = Membership.objects.filter(principal=principal, active=True).select_related("group")
    return [row for row in rows if JUDGING_ROLES & set(row.roles)]


def review_queue(principal: str) -> ReviewQueue:
    """Every submission waiting for review in the person's judging groups, oldest first,
    except items the person owns (they never judge their own work, R13.2-01)."""
    items: list[QueueItem] = []
    mission_keys: set[tuple[str, str]] = set()
    for membership in judging_memberships(principal):
        group_id = membership.group_id
        for row in WorkItem.objects.filter(group_id=group_id, state=S.SUBMITTED):
            item = row.to_state()
            if item.review is None or item.owner == principal:
                continue
            statuses: dict[str, int] = {}
            for criterion, summary in item.review["criteria"].items():
                if criterion == INTEGRITY:
                    continue
                statuses[summary["status"]] = statuses.get(summary["status"], 0) + 1
            items.append(
                QueueItem(
                    group_id=group_id,
                    group_name=membership.group.name,
                    item=item,
                    submission=int(item.review["submission"]),
                    reservation=_reservation(item.review, principal),
                    statuses=statuses,
                )
            )
            mission_keys.add((group_id, item.mission))
    items.sort(key=lambda q: (q.submission, q.group_id, q.item.id))
    return ReviewQueue(tuple(items), _mission_progress(mission_keys, items))


def _mission_progress(
    keys: set[tuple[str, str]], items: list[QueueItem]
) -> tuple[MissionProgress, ...]:
    progress = []
    for group_id, mission_id in sorted(keys):
        states = list(
            WorkItem.objects.filter(group_id=group_id, mission=mission_id).values_list(
                "state", flat=True
            )
        )
        goal = (
            Mission.objects.filter(group_id=group_id, mission_id=mission_id)
            .values_list("goal", flat=True)
            .first()
        )
        progress.append(
            MissionProgress(
                group_id=group_id,
                mission=mission_id,
                goal=goal or "",
                total=len(states),
                verified=states.count(S.VERIFIED),
                waiting=sum(
                    1 for q in items if (q.group_id, q.item.mission) == (group_id, mission_id)
                ),
            )
        )
    return tuple(progress)
