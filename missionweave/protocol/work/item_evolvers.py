"""How each event changes a WorkItem: one small evolver per event type.

Every WorkItem evolver changes the item the payload's ``work_item`` names, and every event
lands in the item's bounded ``history``: both are declared once, on ``WORK_ITEM``. Pure: time
comes in on the facts (``recorded_at``, the authority clock).
"""

from __future__ import annotations

from typing import Any

from .. import states as S
from ..budgets import CHARGE_EVENTS, add_usage
from ..evolvers import REGISTRY, evolves
from ..facts import Fact, StateKey
from ..frozen import replace
from .approvals import APPROVAL_LOG_LIMIT, GRANTED, REFUSED, decision_entry
from .asks import ASKED, asked
from .assessment import REQUESTED, fresh_review, with_evidence, with_request
from .items import Lease, Offer, WorkItem, work_item_key
from .priorities import REPRIORITIZED, reprioritized
from .reservations import RELEASED, RESERVED, reservation_entry
from .schedule import DISCLOSED, FIELDS

HISTORY_LIMIT = 200  # the projection keeps the latest events; the log keeps them all
LEASE_HISTORY_LIMIT = 50  # closed leases kept on the projection (the log keeps every one)
LATE_RESULT_LIMIT = 50


def _the_item(fact: Fact) -> list[StateKey]:
    return [work_item_key(fact.payload["work_item"])]


def _with_history(item: WorkItem, fact: Fact) -> WorkItem:
    history = (*item.history, (fact.sequence, fact.type, fact.actor))[-HISTORY_LIMIT:]
    return replace(item, history=history)


WORK_ITEM = REGISTRY.aggregate("work_item", keys=_the_item, finish=_with_history)


# --- shared moves ------------------------------------------------------------------------


def _close_lease(item: WorkItem, status: str, fact: Fact) -> Lease | None:
    """The item's lease after ``fact`` ends it (R11.3-09): released, expired or revoked."""
    if item.lease is None or item.lease.status != "active":
        return item.lease
    return replace(item.lease, status=status, closed_at=fact.recorded_at, closed_by=fact.type)


def _set_offer(item: WorkItem, offer_id: str, **changes: Any) -> tuple[Offer, ...]:
    return tuple(
        replace(offer, **changes) if offer.offer == offer_id else offer for offer in item.offers
    )


def _fence(item: WorkItem, fact: Fact) -> WorkItem:
    """Clear the owner (kept as a former owner): its later commands are STALE_OWNERSHIP.

    Its schedule disclosure goes too: it was that owner's estimate (R11.2-01), never the next
    owner's."""
    if item.owner is None:
        return item
    former = (
        item.former_owners
        if item.owner in item.former_owners
        else (*item.former_owners, item.owner)
    )
    return replace(
        item,
        owner=None,
        former_owners=former,
        lease=_close_lease(item, "revoked", fact),
        start_deadline=None,
        retry_at=None,
        schedule=None,
    )


def _lease_history(item: WorkItem) -> tuple[Lease, ...]:
    """The closed leases with the current one (if any) appended, bounded."""
    if item.lease is None:
        return item.lease_history
    return (*item.lease_history, item.lease)[-LEASE_HISTORY_LIMIT:]


def _checkpoint(fact: Fact) -> dict[str, Any]:
    return {**fact.payload["checkpoint"], "sequence": fact.sequence, "at": fact.recorded_at}


# --- authorize and offer (R10.2-03..06) ----------------------------------------------------


@evolves("work.authorized", aggregate=WORK_ITEM, creates=True)
def _authorized(current: None, fact: Fact, key: StateKey) -> WorkItem:
    p = fact.payload
    return WorkItem(
        id=p["work_item"],
        mission=p["mission"],
        state=S.OPEN,
        revision=p["revision"],
        contract=p["contract"],
        depends_on=tuple(p.get("depends_on", ())),
        authorized_by=fact.actor,
        proposal=p.get("proposal"),
        proposed_by=p.get("proposed_by"),
        replaces=p.get("replaces"),
    )


@evolves("work.offered", aggregate=WORK_ITEM)
def _offered(item: WorkItem, fact: Fact, key: StateKey) -> WorkItem:
    # R10.3-02: an offer names who may accept; it sets no owner and no ownership epoch (it
    # fences a former owner instead). Only ``work.offer_accepted`` below makes an owner.
    p = fact.payload
    superseded = tuple(
        replace(offer, status="superseded") if offer.status == "open" else offer
        for offer in item.offers
    )
    new_offers = tuple(
        Offer(
            offer=o["offer"],
            worker=o["worker"],
            expires_at=o["expires_at"],
            mode=p["mode"],
            rank=rank,
            revision=p["revision"],
        )
        for rank, o in enumerate(p["offers"])
    )
    item = _fence(item, fact)
    item = replace(
        item,
        state=S.OFFERED,
        offers=(*superseded, *new_offers),
        selection_basis=p["selection_basis"],
        start_deadline=None,
        start_window_s=p.get("start_within_s"),
    )
    if p["revision"] != item.revision:  # a corrected contract (R10.1-05), decided afresh
        item = replace(
            item,
            revision=p["revision"],
            contract=p["contract"],
            approvals=(),
            refusal=None,
            open_questions=(),
            question_askers={},
        )
    return item


@evolves("work.offer_accepted", aggregate=WORK_ITEM)
def _offer_accepted(item: WorkItem, fact: Fact, key: StateKey) -> WorkItem:
    # A new ownership epoch starts with no lease: a lease of an earlier epoch (a fenced
    # owner's) goes to the history, so it can never pass for the new owner's current
    # lease (R11.3-03 binds a lease to its epoch; R11.3-04, R11.3-05).
    p = fact.payload
    return replace(
        item,
        state=S.QUEUED,
        owner=p["worker"],
        ownership_epoch=p["ownership_epoch"],
        start_deadline=p["start_deadline"],
        offers=_set_offer(item, p["offer"], status="accepted"),
        lease=None,
        lease_history=_lease_history(item),
    )


@evolves("work.offer_withdrawn", aggregate=WORK_ITEM)
def _offer_withdrawn(item: WorkItem, fact: Fact, key: StateKey) -> WorkItem:
    p = fact.payload
    return replace(
        item, offers=_set_offer(item, p["offer"], status="withdrawn", reason=p["reason"])
    )


@evolves("work.offer_rejected", aggregate=WORK_ITEM)
def _offer_rejected(item: WorkItem, fact: Fact, key: StateKey) -> WorkItem:
    p = fact.payload
    return replace(item, offers=_set_offer(item, p["offer"], status="rejected", reason=p["reason"]))


@evolves("work.message_posted", aggregate=WORK_ITEM)
def _message_posted(item: WorkItem, fact: Fact, key: StateKey) -> WorkItem:
    """An essential message opens a question; a reply the decider judged ``resolves`` closes
    it (R10.1-04, ``questions``). A reply recorded before that verdict existed carries none
    and closes it, as it did then, so a rebuild of an old log equals its projection."""
    p = fact.payload
    questions, askers = item.open_questions, item.question_askers
    if p.get("essential"):
        questions = (*questions, p["message"])
        askers = {**askers, p["message"]: fact.actor}
    answered = p.get("in_reply_to")
    if answered in questions and p.get("resolves", True):
        questions = tuple(q for q in questions if q != answered)
        askers = {q: who for q, who in askers.items() if q != answered}
    return replace(
        item, messages=item.messages + 1, open_questions=questions, question_askers=askers
    )


def _logged_decision(fact: Fact, decision: str) -> dict[str, Any]:
    return decision_entry(
        decision,
        principal=fact.actor,
        payload=fact.payload,
        sequence=fact.sequence,
        recorded_at=fact.recorded_at,
    )


def _with_decision(item: WorkItem, entry: dict[str, Any]) -> tuple[dict[str, Any], ...]:
    return (*item.approval_log, entry)[-APPROVAL_LOG_LIMIT:]


@evolves(GRANTED, aggregate=WORK_ITEM)
def _execution_granted(item: WorkItem, fact: Fact, key: StateKey) -> WorkItem:
    entry = _logged_decision(fact, "granted")
    return replace(
        item, approvals=(*item.approvals, fact.actor), approval_log=_with_decision(item, entry)
    )


@evolves(REFUSED, aggregate=WORK_ITEM)
def _execution_refused(item: WorkItem, fact: Fact, key: StateKey) -> WorkItem:
    """R10.2-06: the revision is refused until a corrected contract raises it; its start-by
    clock stops (nothing is due: ``WorkItem.due``), as it waits for no worker (issue 34)."""
    entry = _logged_decision(fact, "refused")
    return replace(
        item, refusal=entry, approval_log=_with_decision(item, entry), start_deadline=None
    )


# --- execution under a lease (R10.2-07..11, R11.3) -----------------------------------------


@evolves("work.started", aggregate=WORK_ITEM)
def _started(item: WorkItem, fact: Fact, key: StateKey) -> WorkItem:
    lease = fact.payload["lease"]
    return replace(
        item,
        state=S.ACTIVE,
        attempts=item.next_attempt(),
        resumes_attempt=False,
        retry_at=None,
        lease_history=_lease_history(item),
        lease=Lease(
            lease_id=lease["lease_id"],
            agent=lease["agent"],
            session_epoch=lease["session_epoch"],
            ownership_epoch=lease["ownership_epoch"],
            started_at=lease["started_at"],
            expires_at=lease["expires_at"],
        ),
    )


@evolves("lease.renewed", aggregate=WORK_ITEM)
def _lease_renewed(item: WorkItem, fact: Fact, key: StateKey) -> WorkItem:
    assert item.lease is not None
    lease = replace(
        item.lease,
        expires_at=fact.payload["expires_at"],
        renewals=(*item.lease.renewals, fact.recorded_at),
    )
    return replace(item, lease=lease)


#: what the item keeps of a progress report: structure, never a percentage (R11.4-01, R11.4-02)
PROGRESS_FIELDS = (
    "phase", "milestones_completed", "next_checkpoint", "blockers", "estimate", "evidence_refs",
)  # fmt: skip


@evolves("work.progress_reported", aggregate=WORK_ITEM)
def _progress_reported(item: WorkItem, fact: Fact, key: StateKey) -> WorkItem:
    """The latest structured progress, with who reported it and when (R11.4-01); it moves
    nothing."""
    p = fact.payload
    progress = {name: p[name] for name in PROGRESS_FIELDS if name in p}
    progress.update(by=fact.actor, sequence=fact.sequence, recorded_at=fact.recorded_at)
    return replace(item, progress=progress)


@evolves(REPRIORITIZED, aggregate=WORK_ITEM)
def _reprioritized(item: WorkItem, fact: Fact, key: StateKey) -> WorkItem:
    """A new urgency or deadline in place; nothing else moves (R0-12, R11.3-11)."""
    return reprioritized(item, fact)


@evolves(ASKED, aggregate=WORK_ITEM)
def _asked(item: WorkItem, fact: Fact, key: StateKey) -> WorkItem:
    """Who was asked to act, by whom and when; nothing else moves (R10.2-06, R13.2-03)."""
    return asked(item, fact)


@evolves(DISCLOSED, aggregate=WORK_ITEM)
def _schedule_disclosed(item: WorkItem, fact: Fact, key: StateKey) -> WorkItem:
    """The owner's latest estimate replaces the previous one; it moves nothing (R11.2-01).
    Only the declared fields are kept, whatever a payload holds (R11.2-02)."""
    p = fact.payload
    schedule = {name: p[name] for name in FIELDS if name in p and name != "work_item"}
    schedule.update(by=fact.actor, sequence=fact.sequence, recorded_at=fact.recorded_at)
    return replace(item, schedule=schedule)


@evolves(*sorted(CHARGE_EVENTS), aggregate=WORK_ITEM)
def _charged(item: WorkItem, fact: Fact, key: StateKey) -> WorkItem:
    return replace(item, used=add_usage(item.used, fact.payload["usage"]))


@evolves("work.checkpointed", aggregate=WORK_ITEM)
def _checkpointed(item: WorkItem, fact: Fact, key: StateKey) -> WorkItem:
    p = fact.payload
    if p.get("offline") is not None:  # a reconciled buffered checkpoint (R11.5-12)
        return replace(item, last_checkpoint=_checkpoint(fact))
    return replace(
        item,
        state=S.QUEUED,
        lease=_close_lease(item, "released", fact),
        start_deadline=p.get("start_deadline", item.start_deadline),
        last_checkpoint=_checkpoint(fact),
        resumes_attempt=True,
    )


@evolves("work.blocked", aggregate=WORK_ITEM)
def _blocked(item: WorkItem, fact: Fact, key: StateKey) -> WorkItem:
    return replace(
        item,
        state=S.BLOCKED,
        lease=_close_lease(item, "released", fact),
        blocked_at=fact.recorded_at,
        blocked_for={
            "resolution": fact.payload["required_resolution"],
            "by": fact.actor,
            "at": fact.recorded_at,
        },
        last_checkpoint=_checkpoint(fact),
        resumes_attempt=True,
    )


@evolves("work.unblocked", aggregate=WORK_ITEM)
def _unblocked(item: WorkItem, fact: Fact, key: StateKey) -> WorkItem:
    p = fact.payload
    item = replace(
        item,
        state=p["to"],
        blocked_at=None,
        blocked_for=None,
        start_deadline=p.get("start_deadline", item.start_deadline),
    )
    return _fence(item, fact) if p["to"] == S.OPEN else item


@evolves("work.submitted", aggregate=WORK_ITEM)
def _submitted(item: WorkItem, fact: Fact, key: StateKey) -> WorkItem:
    p = fact.payload
    return replace(
        item,
        state=S.SUBMITTED,
        lease=_close_lease(item, "released", fact),
        submission={
            "artifacts": p["artifacts"],
            "evidence": p["evidence"],
            "outputs": p.get("outputs", {}),
            "sequence": fact.sequence,
        },
        review=_opened_review(item, fact),
    )


def _opened_review(item: WorkItem, fact: Fact) -> dict[str, Any]:
    """A fresh review holding the submitter's own evidence: on record, never a pass by
    itself (R13.2-01)."""
    review = fresh_review(item.contract, fact.sequence, fact.actor)
    for evidence in fact.payload["evidence"]:
        review = with_evidence(review, evidence, fact.sequence)
    return review


@evolves("work.late_result_recorded", aggregate=WORK_ITEM)
def _late_result_recorded(item: WorkItem, fact: Fact, key: StateKey) -> WorkItem:
    """A former owner's result, kept for audit only (R11.5-02)."""
    p = fact.payload
    entry = {
        "sequence": fact.sequence,
        "recorded_at": fact.recorded_at,
        "former_owner": p["former_owner"],
        "lease_id": p.get("lease_id"),
        "artifacts": p.get("artifacts", []),
    }
    keys = dict(item.late_result_keys)
    if "late_result_key" in p:
        keys[p["late_result_key"]] = fact.sequence
    return replace(
        item,
        late_results=item.late_results + 1,
        late_result_log=(*item.late_result_log, entry)[-LATE_RESULT_LIMIT:],
        late_result_keys=keys,
    )


@evolves("capability.issued", aggregate=WORK_ITEM)
def _capability_issued(item: WorkItem, fact: Fact, key: StateKey) -> WorkItem:
    """Tokens a narrower one replaces are revoked for the rest of its lease (R11.3-07)."""
    p = fact.payload
    if item.lease is None or item.lease.lease_id != p["lease_id"]:
        return item
    revoked = (*item.lease.revoked_tokens, *p.get("revokes", ()))
    return replace(item, lease=replace(item.lease, revoked_tokens=revoked))


# --- review and the end of the item (R10.2-12..14) -----------------------------------------


@evolves("evidence.recorded", aggregate=WORK_ITEM)
def _evidence_recorded(item: WorkItem, fact: Fact, key: StateKey) -> WorkItem:
    p = fact.payload
    evidence = {**p, "producer": p.get("producer", fact.actor)}
    review = item.review
    if review is not None:
        review = with_evidence(review, evidence, fact.sequence)
    return replace(item, evidence=(*item.evidence, evidence), review=review)


@evolves(REQUESTED, aggregate=WORK_ITEM)
def _review_requested(item: WorkItem, fact: Fact, key: StateKey) -> WorkItem:
    """A reviewer agent is asked for evidence (R13.2-03 step 3)."""
    if item.review is None:
        return item
    return replace(item, review=with_request(item.review, fact.payload, fact.sequence))


@evolves(RESERVED, aggregate=WORK_ITEM)
def _review_reserved(item: WorkItem, fact: Fact, key: StateKey) -> WorkItem:
    """Advisory: who is reviewing the submission, until when (``reservations``)."""
    if item.review is None:
        return item
    reservation = reservation_entry(fact.payload, fact.sequence)
    return replace(item, review={**item.review, "reservation": reservation})


@evolves(RELEASED, aggregate=WORK_ITEM)
def _review_released(item: WorkItem, fact: Fact, key: StateKey) -> WorkItem:
    return _unreserved(item)


def _unreserved(item: WorkItem) -> WorkItem:
    """The item leaving ``submitted`` (or released): nobody is reviewing it any more."""
    if item.review is None or item.review.get("reservation") is None:
        return item
    return replace(item, review={**item.review, "reservation": None})


def _judgement(fact: Fact, **fields: Any) -> dict[str, Any]:
    return {"by": fact.actor, "sequence": fact.sequence, "recorded_at": fact.recorded_at, **fields}


@evolves("work.result_accepted", aggregate=WORK_ITEM)
def _result_accepted(item: WorkItem, fact: Fact, key: StateKey) -> WorkItem:
    """Verified; the accepting review is kept for the mission's final approval (R13.2-03)."""
    review = fact.payload["review"]
    accepted = _judgement(fact, verdicts=review["verdicts"], summary=review["summary"])
    return replace(_unreserved(item), state=S.VERIFIED, accepted_review=accepted)


_ENDED = {"work.failed": S.FAILED, "work.cancelled": S.CANCELLED}


@evolves(*_ENDED, aggregate=WORK_ITEM)
def _ended(item: WorkItem, fact: Fact, key: StateKey) -> WorkItem:
    """A terminal state: the lease is revoked and nothing waits for a deadline or a retry.

    A submission failed by a judge (not by its mission's end) keeps why: ``failed_review``
    with the evidence, as the accepting review is kept (R13.2-03 step 5)."""
    failed_review = item.failed_review
    sent_back = (
        fact.type == "work.failed"
        and item.state == S.SUBMITTED
        and not fact.payload.get("propagated_from")
    )
    if sent_back:
        failed_review = _judgement(fact, evidence=fact.payload["evidence"])
    return replace(
        _unreserved(item),
        state=_ENDED[fact.type],
        lease=_close_lease(item, "revoked", fact),
        start_deadline=None,
        retry_at=None,
        failed_review=failed_review,
    )


# --- a child mission the item waits for (R10.2-15..17) -------------------------------------


@evolves("mission.child_created", aggregate=WORK_ITEM)
def _child_created(item: WorkItem, fact: Fact, key: StateKey) -> WorkItem:
    p = fact.payload
    child = {
        **p["child"],
        "failure_policy": p["failure_policy"],
        "correlation_id": p["correlation_id"],
        "status": "running",
    }
    return replace(item, state=S.BLOCKED, lease=_close_lease(item, "released", fact), child=child)


@evolves("mission.child_approved", aggregate=WORK_ITEM)
def _child_approved(item: WorkItem, fact: Fact, key: StateKey) -> WorkItem:
    assert item.child is not None
    return replace(
        item,
        state=S.VERIFIED,
        child={**item.child, "status": "approved"},
        evidence=(*item.evidence, fact.payload["evidence"]),
    )


@evolves("mission.child_failed", aggregate=WORK_ITEM)
def _child_failed(item: WorkItem, fact: Fact, key: StateKey) -> WorkItem:
    p = fact.payload
    assert item.child is not None
    return replace(
        item,
        state=S.FAILED if p["failure_policy"] == "fail_parent" else S.BLOCKED,
        child={**item.child, "status": p["outcome"]},
    )


# --- the authority's recovery moves (R11.3-09, R11.3-10, R11.4-08, R11.5-01) ---------------


@evolves("lease.expired", aggregate=WORK_ITEM)
def _lease_expired(item: WorkItem, fact: Fact, key: StateKey) -> WorkItem:
    return replace(item, lease=_close_lease(item, "expired", fact))


@evolves("lease.revoked", aggregate=WORK_ITEM)
def _lease_revoked(item: WorkItem, fact: Fact, key: StateKey) -> WorkItem:
    """R11.3-10: a replaced session's lease; the item waits in ``queued`` for the owner's new
    runtime, with a fresh start deadline."""
    return replace(
        item,
        state=S.QUEUED,
        lease=_close_lease(item, "revoked", fact),
        start_deadline=fact.payload["start_deadline"],
        resumes_attempt=True,
    )


@evolves("work.reassigned", aggregate=WORK_ITEM)
def _reassigned(item: WorkItem, fact: Fact, key: StateKey) -> WorkItem:
    """R11.5-01: the owner is fenced; the next acceptance raises the ownership epoch."""
    item = _fence(item, fact)
    # A new owner's first start is a fresh attempt: the fenced one's ended unfinished.
    return replace(
        item,
        state=S.OPEN,
        blocked_at=None,
        blocked_for=None,
        reassignments=item.reassignments + 1,
        resumes_attempt=False,
    )


@evolves("work.retry_scheduled", aggregate=WORK_ITEM)
def _retry_scheduled(item: WorkItem, fact: Fact, key: StateKey) -> WorkItem:
    """R11.4-08: the same owner tries again after the backoff."""
    p = fact.payload
    return replace(
        item,
        state=S.QUEUED,
        lease=_close_lease(item, "revoked", fact),
        retry_at=p["retry_at"],
        start_deadline=p["start_deadline"],
        resumes_attempt=False,
    )
