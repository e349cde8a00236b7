"""Reads behind the final-approval screen of a mission (R13.2-03 step 5, R10.2-16): every
WorkItem with the review results kept for it, and whether this person's ``mission.approve``
would be taken now — the write path's answer (``preview.refusal``), said in words, its code
kept for the page's collapsed technical details.

A criterion of an accepted item shows the verdict the accepting review gave it, not the
evidence summary's "claimed" (a review's verdicts are not evidence, so the summary never
moves past the worker's claim on a criterion only a person judged). Submitted artifacts are
named by their manifest (``review_artifacts``). Reads are bounded as the mission page's are
(``missions``): one page of WorkItems, their shown fields extracted in the database.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from apps.ledger import preview
from apps.ledger.write_path import Caller
from apps.work.models import Mission, MissionStatus, WorkItem
from missionweave.protocol import states as S
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.memberships import Membership as MembershipState

from .artifact_facts import ArtifactFacts, artifact_facts
from .change_requests import changes_sentence
from .child_missions import ParentWork, parent_work
from .item_names import titles_of
from .json_once import paths_once
from .missions import (
    Ending,
    _as_tuple,
    latest_sequence,
    mission_ending,
    state_counts,
    unfinished_sentence,
    who_may,
)
from .refusal_words import plain_refusal
from .review_artifacts import output_names


@dataclass(frozen=True)
class EvidenceView:
    """One piece of evidence: who produced it, how, what it found, and what it cites."""

    criterion: str
    producer: str
    method: str
    verdict: str
    summary: str
    artifacts: tuple[str, ...]  # digests
    origin: str  # "submission", "recorded" or "failure"

    @classmethod
    def from_item(cls, evidence: object, origin: str) -> EvidenceView | None:
        if not isinstance(evidence, dict):
            return None
        result = evidence.get("result") if isinstance(evidence.get("result"), dict) else {}
        return cls(
            criterion=str(evidence.get("criterion", "")),
            producer=str(evidence.get("producer", "")),
            method=str(evidence.get("method", "")),
            verdict=str(result.get("verdict", "")),
            summary=str(result.get("summary", "")),
            artifacts=_as_tuple(evidence.get("artifacts")),
            origin=origin,
        )


@dataclass(frozen=True)
class CriterionView:
    """An acceptance criterion with the review's status for it (R13.2-03 step 4) and the
    verdicts recorded on it."""

    id: str
    description: str
    method: str
    status: str | None  # None: no submission reviewed yet
    verdicts: tuple[dict[str, Any], ...]  # {sequence, producer, method, verdict, summary}
    accepted: bool = False  # ``status`` is the accepting review's verdict


@dataclass(frozen=True)
class ReviewedItem:
    """A WorkItem as the final approval lists it: its state and every review result the
    projection retains for it."""

    id: str
    state: str
    goal: str
    criteria: tuple[CriterionView, ...]
    evidence: tuple[EvidenceView, ...]
    outputs: tuple[str, ...]  # the submitted artifacts' digests
    accepted: dict[str, Any] | None  # {by, sequence, recorded_at, verdicts, summary}
    failed: dict[str, Any] | None  # {by, sequence, recorded_at, evidence}
    failed_evidence: tuple[EvidenceView, ...]
    decisions: tuple[dict[str, Any], ...]  # execution approvals with their comments
    named_outputs: dict[str, Any] = field(default_factory=dict)  # the submission's outputs
    output_facts: tuple[ArtifactFacts, ...] = ()  # ``outputs`` named by their manifest

    @property
    def unfinished(self) -> bool:
        return self.state in S.UNFINISHED

    @property
    def reviewed(self) -> bool:
        """A submission was reviewed: the criteria have statuses to show."""
        return any(criterion.status is not None for criterion in self.criteria)


@dataclass(frozen=True)
class FinalApproval:
    mission: Mission
    items: tuple[ReviewedItem, ...]
    counts: tuple[tuple[str, int], ...]
    #: why ``mission.approve`` by this viewer would be refused now, in words ("" if not)
    refusal_text: str
    ending: Ending | None
    total: int = 0  # WorkItems in the mission; ``items`` is one page of them
    page: int = 1
    pages: int = 1
    #: the submitted artifacts of the items shown, by digest, named by their manifest
    artifacts: dict[str, ArtifactFacts] | None = None
    #: a child mission's parent WorkItem: what approving it moves on (R10.2-16)
    unblocks: ParentWork | None = None

    @property
    def is_active(self) -> bool:
        return self.mission.state == MissionStatus.ACTIVE

    @property
    def shows_form(self) -> bool:
        return self.is_active and not self.refusal_text

    @property
    def unfinished(self) -> tuple[str, ...]:
        return tuple(item.id for item in self.items if item.unfinished)

    @property
    def first_shown(self) -> int:
        return (self.page - 1) * REVIEWS_PER_PAGE + 1 if self.items else 0

    @property
    def last_shown(self) -> int:
        return self.first_shown + len(self.items) - 1 if self.items else 0


def _criteria(
    contract_criteria: object, review: object, accepted: object
) -> tuple[CriterionView, ...]:
    reviewed = review.get("criteria", {}) if isinstance(review, dict) else {}
    decided: dict[str, str] = {}
    if isinstance(accepted, dict):
        decided = {
            str(v.get("criterion")): str(v.get("verdict"))
            for v in accepted.get("verdicts") or ()
            if isinstance(v, dict)
        }
    views = []
    for criterion in contract_criteria if isinstance(contract_criteria, list) else ():
        if not isinstance(criterion, dict):
            continue
        summary = reviewed.get(criterion.get("id"), {})
        views.append(
            CriterionView(
                id=str(criterion.get("id", "")),
                description=str(criterion.get("description", "")),
                method=str(criterion.get("method", "")),
                status=decided.get(str(criterion.get("id")), summary.get("status")),
                verdicts=tuple(e for e in summary.get("evidence", ()) if isinstance(e, dict)),
                accepted=str(criterion.get("id")) in decided,
            )
        )
    for criterion_id, summary in reviewed.items():  # the authority's own checks
        if criterion_id not in {view.id for view in views} and isinstance(summary, dict):
            views.append(
                CriterionView(
                    id=str(criterion_id),
                    description="the authority's own checks of the submitted artifacts",
                    method=str(summary.get("method", "")),
                    status=summary.get("status"),
                    verdicts=tuple(e for e in summary.get("evidence", ()) if isinstance(e, dict)),
                )
            )
    return tuple(views)


def _evidence(items: object, origin: str) -> list[EvidenceView]:
    if not isinstance(items, list):
        return []
    views = (EvidenceView.from_item(evidence, origin) for evidence in items)
    return [view for view in views if view is not None]


def _reviewed(fields: tuple[Any, ...]) -> ReviewedItem:
    (
        item_id,
        state,
        goal,
        criteria,
        review,
        evidence,
        submission,
        accepted,
        failed,
        decisions,
    ) = fields
    submission = submission if isinstance(submission, dict) else {}
    failed = failed if isinstance(failed, dict) else None
    return ReviewedItem(
        id=item_id,
        state=state,
        goal=str(goal or ""),
        criteria=_criteria(criteria, review, accepted),
        evidence=(
            *_evidence(submission.get("evidence"), "submission"),
            *_evidence(evidence, "recorded"),
        ),
        outputs=_as_tuple(submission.get("artifacts")),
        named_outputs=dict(submission.get("outputs") or {}),
        accepted=accepted if isinstance(accepted, dict) else None,
        failed=failed,
        failed_evidence=tuple(_evidence((failed or {}).get("evidence"), "failure")),
        decisions=tuple(d for d in decisions or () if isinstance(d, dict)),
    )


#: the final-approval screen lists this many WorkItems with their reviews per page
REVIEWS_PER_PAGE = 50


def reviewed_items(mission: Mission, ids: Sequence[str] | None = None) -> list[ReviewedItem]:
    """Each WorkItem (of ``ids``, or all) with its retained review results, in
    authorisation order: only the fields shown, extracted in the database."""
    rows = WorkItem.objects.filter(group_id=mission.group_id, mission=mission.mission_id)
    if ids is not None:
        rows = rows.filter(work_item_id__in=list(ids))
    fields = rows.annotate(
        shown=paths_once(
            "contract__goal",
            "contract__acceptance_criteria",
            "review",
            "evidence",
            "submission",
            "accepted_review",
            "failed_review",
            "approval_log",
        )
    ).values_list("work_item_id", "state", "shown")
    by_id = {item: _reviewed((item, state, *shown)) for item, state, shown in fields}
    ordered = [by_id.pop(item) for item in mission.work_items if item in by_id]
    return [*ordered, *by_id.values()]


def refusal_sentence(
    refusal: ProtocolError | None, membership: MembershipState | None, group_id: str = ""
) -> str:
    """The write path's refusal of ``mission.approve``, as a sentence a person acts on; the
    unfinished WorkItems it lists are named by their goals when ``group_id`` is given."""
    if refusal is None:
        return ""
    if refusal.code == ErrorCode.FORBIDDEN:
        return who_may("mission.approve", "approve", membership)
    unfinished = (refusal.details or {}).get("unfinished")
    asked = (refusal.details or {}).get("changes_requested")
    if refusal.code == ErrorCode.ILLEGAL_TRANSITION and asked:  # issue 36 §5
        named = [str(item) for item in asked]
        return changes_sentence(named, titles_of(group_id, named) if group_id else {})
    if refusal.code == ErrorCode.ILLEGAL_TRANSITION and unfinished:
        named = [str(item) for item in unfinished]
        titles = titles_of(group_id, named) if group_id else {}
        return (
            f"{unfinished_sentence(named, titles)} The mission can be "
            "approved once every WorkItem has ended."
        )
    if refusal.code == ErrorCode.ILLEGAL_TRANSITION:
        return "This mission has ended: there is nothing left to approve."
    return plain_refusal(refusal)


def _approval_refusal(
    group_id: str,
    mission: Mission,
    states: dict[str, str],
    caller: Caller,
    membership: MembershipState | None,
) -> str:
    """Why this person's ``mission.approve`` would be refused now, in words ("" if not).

    The role is judged as the write path judges it (``preview.permitted_by``); while the
    projection shows unfinished WorkItems the form is not offered and they are named (the
    decider's R10.2-22, which it judges again on submit); only then is the whole command
    previewed — which reads every WorkItem, too slow to ask of a mission still running."""
    if "mission.approve" not in preview.permitted_by(caller, membership, ["mission.approve"]):
        return who_may("mission.approve", "approve", membership)
    unfinished = [item for item in mission.work_items if states.get(item) in S.UNFINISHED]
    if unfinished:
        named = unfinished_sentence(unfinished, titles_of(group_id, unfinished))
        return f"{named} The mission can be approved once every WorkItem has ended."
    body = {"mission": mission.mission_id, "comment": ""}
    refusal = preview.refusal(caller, group_id, "mission.approve", body)
    return refusal_sentence(refusal, membership, group_id)


def final_approval(
    group_id: str,
    mission_id: str,
    *,
    caller: Caller,
    membership: MembershipState | None,
    page: int = 1,
) -> FinalApproval | None:
    """The final-approval screen's contents, or ``None`` when the group has no such mission.

    Whether the form shows is the write path's answer for this person now
    (``preview.refusal`` of ``mission.approve``): the role, the human-only rule and the
    unfinished WorkItems are the decider's, never re-judged here.
    """
    mission = Mission.objects.filter(group_id=group_id, mission_id=mission_id).first()
    if mission is None:
        return None
    rows = dict(
        WorkItem.objects.filter(group_id=group_id, mission=mission_id).values_list(
            "work_item_id", "state"
        )
    )
    states = list(rows.values())
    pages = max(1, -(-len(mission.work_items) // REVIEWS_PER_PAGE))
    page = min(max(page, 1), pages)
    start = (page - 1) * REVIEWS_PER_PAGE
    items = reviewed_items(mission, mission.work_items[start : start + REVIEWS_PER_PAGE])
    if mission.state == MissionStatus.ACTIVE:
        refusal = _approval_refusal(group_id, mission, rows, caller, membership)
        ending = None
    else:
        refusal = f"This mission is {mission.state}: there is nothing left to approve."
        ending = mission_ending(mission, latest_sequence(mission))
    names: dict[str, str] = {}
    for item in items:
        names.update(output_names(item.named_outputs))
    facts = {
        fact.digest: fact
        for fact in artifact_facts(
            group_id, [d for item in items for d in item.outputs], names=names
        )
    }
    items = [
        replace(item, output_facts=tuple(facts[d] for d in item.outputs if d in facts))
        for item in items
    ]
    return FinalApproval(
        mission=mission,
        items=tuple(items),
        artifacts=facts,
        counts=state_counts(states),
        refusal_text=refusal,
        ending=ending,
        total=len(states),
        page=page,
        pages=pages,
        unblocks=parent_work(mission, caller.principal),
    )
