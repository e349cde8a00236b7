"""Reads behind the evidence review of one submission: its criteria with every piece of
evidence, the authority's checks and the artifacts, what the person may do now and — once it
is decided — who decided it, when, and how.

The review a screen shows is the one the write path keeps on the WorkItem projection
(``review``: R13.2-03's per-criterion summary, opened by ``work.submitted``); the full
evidence items (result data, artifacts) are read from the log by the sequences that summary
names — a handful of primary-key reads, never a scan of the group's log. What the person may
do is asked of the write path's preview (``preview.refusal``), with the body they would send;
what holds an acceptance for now (someone else's reservation, a check owed or failed) is the
protocol core's ``acceptance_refusal`` (R13.2-03). The screen says either in words
(``review_words``), and shows a held button disabled with its reason rather than hiding it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from apps.ledger import preview
from apps.ledger.models import Event
from apps.ledger.write_path import Caller
from apps.work.models import Mission, WorkItem
from missionweave.protocol import states as S
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.identifiers import AUTHORITY
from missionweave.protocol.timefmt import parse_timestamp
from missionweave.protocol.work.assessment import INTEGRITY, acceptance_refusal
from missionweave.protocol.work.items import WorkItem as WorkItemState

from . import previews
from .artifact_facts import ArtifactFacts, artifact_facts
from .review_artifacts import corrupted_since, output_names
from .review_words import WAITING, refusal_text
from .work_item_cards import Countdown, _now

#: the verdicts a person gives a criterion (wire.md §9 ``work.accept_result``)
VERDICTS = ("pass", "fail", "needs_changes")
VERDICT_LABELS = {"pass": "Pass", "fail": "Fail", "needs_changes": "Needs changes"}
#: at most this many artifacts are previewed on one review page; the rest are links
PREVIEWS_PER_PAGE = 12
ACCEPT = "work.accept_result"
SEND_BACK = "work.fail"
RECORD = "evidence.record"
RESERVE = "review.reserve"
RELEASE = "review.release"
#: the events that take a submission out of review, and what each did, in words
DECISIONS = {
    "work.result_accepted": "accepted",
    "work.failed": "sent back",
    "work.cancelled": "cancelled",
    "work.submitted": "replaced by a new submission",
}


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
    #: "accepted" or "sent back" once the submission was decided: ``status`` is then the
    #: decision's verdict, not the evidence summary's (which a review's verdicts never join)
    decided: str = ""

    @property
    def artifacts(self) -> tuple[str, ...]:
        """Every artifact its evidence and checks cite, once each, in the order cited."""
        cited = (d for e in (*self.evidence, *self.checks) for d in e.artifacts)
        return tuple(dict.fromkeys(cited))

    @property
    def status_label(self) -> str:
        label = self.status.replace("_", " ")
        return f"{label}, {self.decided}" if self.decided else label


@dataclass(frozen=True)
class Reservation:
    """Who holds the review now (expiring by itself: wire.md §9 ``review.reserve``); while
    it runs, only its holder decides the submission (R13.2-03)."""

    reviewer: str
    countdown: Countdown
    mine: bool

    @property
    def live(self) -> bool:
        return not self.countdown.passed


@dataclass(frozen=True)
class Permission:
    """Whether the person may do one of the review's actions, and why not in words.

    ``waiting``: the refusal only holds the action for now (someone else's reservation, a
    check owed or failed): the button shows, disabled, with the reason, and the page
    enables it when the live update says the hold is gone."""

    refusal: ProtocolError | None
    reason: str = ""

    @property
    def allowed(self) -> bool:
        return self.refusal is None

    @property
    def waiting(self) -> bool:
        return self.refusal is not None and self.refusal.code in WAITING

    @property
    def offered(self) -> bool:
        """The action's button is on the page (enabled or, while waiting, disabled)."""
        return self.allowed or self.waiting

    @property
    def code(self) -> str:
        return "" if self.refusal is None else self.refusal.code.value

    @property
    def reserved_by(self) -> str:
        if self.refusal is None or self.refusal.code != ErrorCode.REVIEW_RESERVED:
            return ""
        return str((self.refusal.details or {}).get("reserved_by", ""))

    @property
    def reserved_until(self) -> str:
        return str((self.refusal.details or {}).get("expires_at", "")) if self.reserved_by else ""


@dataclass(frozen=True)
class Decided:
    """How the submission left review: what happened, by whom, when."""

    outcome: str  # accepted, sent back, cancelled, replaced by a new submission
    by: str
    at: datetime | None
    sequence: int


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
    artifacts: tuple[ArtifactFacts, ...]  # what was submitted, by its manifest
    previews: dict[str, Any]  # digest -> previews.Preview, for the first PREVIEWS_PER_PAGE
    reservation: Reservation | None
    accept: Permission
    send_back: Permission
    record: Permission
    reserve: Permission
    pending_checks: tuple[str, ...]
    requests: tuple[dict[str, Any], ...]
    decided: Decided | None = None
    principal: str = ""
    #: digests cited here whose stored bytes were found corrupted, with when
    corrupted_at: dict[str, datetime] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def open(self) -> bool:
        return self.item.state == S.SUBMITTED

    @property
    def may_decide(self) -> bool:
        """The verdict form shows: the person may act now, or once a hold is gone."""
        return self.open and (self.accept.offered or self.send_back.offered or self.record.offered)

    @property
    def held_by_other(self) -> bool:
        r = self.reservation
        return r is not None and r.live and not r.mine

    @property
    def draft_key(self) -> str:
        """Where the browser keeps this person's unsent verdicts: one draft per submission."""
        return f"mw-review:{self.group_id}:{self.item.id}:{self.submission}"

    @property
    def corrupted(self) -> tuple[str, ...]:
        """Digests cited here whose stored bytes no longer match (found since the checks):
        a check that passed describes them as they were, and the page says so."""
        found = set(self.corrupted_at)
        found |= {d for d, shown in self.previews.items() if shown.kind == previews.CORRUPTED}
        return tuple(sorted(found))


def _documents(group_id: str, sequences: set[int]) -> dict[int, dict[str, Any]]:
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


def _with_decision(
    criteria: tuple[CriterionView, ...], item: WorkItemState, submission: int
) -> tuple[CriterionView, ...]:
    """The criteria as the decision of this submission judged them: the accepting review's
    verdicts, or the send-back's, instead of the evidence summary's "claimed"."""
    accepted = item.accepted_review
    if accepted and int(accepted.get("sequence") or 0) > submission:
        verdicts = {v["criterion"]: v["verdict"] for v in accepted.get("verdicts", ())}
        return tuple(
            replace(c, status=verdicts[c.id], decided="accepted") if c.id in verdicts else c
            for c in criteria
        )
    failed = item.failed_review
    if failed and int(failed.get("sequence") or 0) > submission:
        verdicts = {}
        for evidence in failed.get("evidence", ()):
            result = evidence.get("result") or {}
            data = result.get("data") if isinstance(result.get("data"), dict) else {}
            verdicts[evidence.get("criterion")] = data.get("review_verdict") or result.get(
                "verdict", "fail"
            )
        return tuple(
            replace(c, status=str(verdicts[c.id]), decided="sent back") if c.id in verdicts else c
            for c in criteria
        )
    return criteria


def _deciding_event(item: WorkItemState, submission: int) -> tuple[int, str, str] | None:
    """The event after ``submission`` that took it out of review, if it is out."""
    if item.state == S.SUBMITTED:
        return None
    return next(
        (entry for entry in item.history if entry[0] > submission and entry[1] in DECISIONS),
        None,
    )


def reservation_of(review: dict[str, Any], principal: str) -> Reservation | None:
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


def permission(
    refusal: ProtocolError | None, *, command: str, roles: tuple[str, ...], state: str
) -> Permission:
    """A refusal (or none) with its sentence."""
    if refusal is None:
        return Permission(None)
    return Permission(refusal, refusal_text(refusal, command=command, roles=roles, state=state))


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


def review_page(
    group_id: str, work_item_id: str, *, caller: Caller, roles: tuple[str, ...] = ()
) -> ReviewPage | None:
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
    submission = int(review["submission"])
    deciding = _deciding_event(item, submission)
    sequences = {e["sequence"] for s in summaries.values() for e in s.get("evidence", [])}
    sequences.add(submission)
    if deciding is not None:
        sequences.add(deciding[0])
    documents = _documents(group_id, sequences)
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
    outputs = dict(item.submission.get("outputs", {}))
    submitted = list(item.submission.get("artifacts", ()))
    cited = [
        *submitted,
        *(d for c in criteria for e in (*c.evidence, *c.checks) for d in e.artifacts),
    ]
    principal = caller.principal
    state = item.state

    def asked(type_: str, body: dict[str, Any]) -> Permission:
        return permission(
            preview.refusal(caller, group_id, type_, body), command=type_, roles=roles, state=state
        )

    accept = asked(ACCEPT, accept_body(item))
    if accept.allowed or accept.waiting:
        # past the role and state checks: what holds it now is the core's question
        held = acceptance_refusal(item, principal, _now())
        accept = permission(held, command=ACCEPT, roles=roles, state=state)
    return ReviewPage(
        group_id=group_id,
        item=item,
        mission=Mission.objects.filter(group_id=group_id, mission_id=item.mission).first(),
        submission=submission,
        submitted_at=_recorded_at(documents.get(submission)),
        submitter=submitter,
        criteria=_with_decision(criteria, item, submission),
        integrity=integrity,
        artifacts=tuple(artifact_facts(group_id, submitted, names=output_names(outputs))),
        previews=_previews(group_id, principal, cited),
        reservation=reservation_of(review, principal),
        accept=accept,
        send_back=asked(SEND_BACK, send_back_body(item, principal)),
        record=asked(RECORD, record_body(item, principal, submission)),
        reserve=asked(RESERVE, {"work_item": item.id}),
        pending_checks=tuple(review.get("pending_checks", ())),
        requests=tuple(review.get("requests", ())),
        decided=(
            Decided(
                outcome=DECISIONS[deciding[1]],
                by=deciding[2],
                at=_recorded_at(documents.get(deciding[0])),
                sequence=deciding[0],
            )
            if deciding is not None
            else None
        ),
        principal=principal,
        corrupted_at=corrupted_since(cited),
    )
