"""Bodies and helpers for WorkItem tests that run through the real write path.

Shared by the urgent-offer race and the lifecycle property test: contracts that a coordinator
agent can review (or that need a human), a valid ``selection_basis`` (R10.3-11), evidence
items (R13.2-04), one way to send a command and get either its outcome or its refusal, a
tracker that follows a group's log and checks every WorkItem move against ``states.py``, and
the small model the property test predicts answers with.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from apps.ledger.models import Event, GroupLog
from apps.ledger.write_path import Outcome, submit_command
from missionweave.protocol import decider
from missionweave.protocol import states as S
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.examples import example_contract
from missionweave.protocol.facts import Fact, StateKey
from missionweave.protocol.timefmt import parse_timestamp
from missionweave.protocol.work.checks import SELECTION_BASIS_FIELDS
from missionweave.protocol.work.items import Offer, WorkItem, work_item_key
from tests.factories import AgentPersona, HumanPersona, now_text

Persona = AgentPersona | HumanPersona

#: the events that change a WorkItem, as the evolver registry knows them
WORK_ITEM_EVENTS = decider.events_changing("work_item")

#: far enough ahead that a start deadline is always START_WINDOW from acceptance
DEADLINE = "2099-01-01T00:00:00Z"


def selection_basis() -> dict[str, Any]:
    """The structured basis of an offer: the six keys of R10.3-11, no private reasoning."""
    return {name: f"{name} checked" for name in SELECTION_BASIS_FIELDS}


def contract(
    *,
    human_review: bool = False,
    approvals: int = 0,
    dependency_policy: str = "all_verified",
    goal: str | None = None,
) -> dict[str, Any]:
    """A valid Work Contract (wire.md §10).

    ``human_review`` keeps the example's criterion c2 (then only a human mission_owner may
    accept the result); ``approvals`` > 0 puts the start behind that many execution approvals.
    """
    criteria = example_contract()["acceptance_criteria"]
    overrides: dict[str, Any] = {
        "deadline": DEADLINE,
        "dependency_policy": dependency_policy,
        "acceptance_criteria": criteria if human_review else criteria[:1],
        "risk": {
            "class": "high" if approvals else "low",
            "requires_execution_approval": bool(approvals),
            "approvals_required": max(approvals, 1),
        },
    }
    if goal is not None:
        overrides["goal"] = goal
    return example_contract(**overrides)


def evidence(
    criterion: str, producer: str, verdict: str = "pass", method: str = "deterministic"
) -> dict[str, Any]:
    """One evidence item, produced by its sender with its criterion's ``method`` (R13.2-04)."""
    return {
        "criterion": criterion,
        "method": method,
        "result": {"verdict": verdict, "summary": f"{criterion}: {verdict}", "data": {}},
        "producer": producer,
        "artifacts": [],
    }


def offer_entry(offer: str, worker: Persona, *, expires_in: float = 3600) -> dict[str, Any]:
    return {"offer": offer, "worker": worker.principal, "expires_at": now_text(expires_in)}


def offer_body(
    work_item: str, offers: list[dict[str, Any]], *, mode: str = "urgent", **extra: Any
) -> dict[str, Any]:
    return {
        "work_item": work_item,
        "offers": offers,
        "mode": mode,
        "selection_basis": selection_basis(),
        **extra,
    }


def submit(persona: Persona, group: str, type_: str, body: dict[str, Any]) -> Outcome:
    """Send one command as ``persona``; a refusal raises ``ProtocolError``."""
    return submit_command(
        group_id=group, document=persona.command(group, type_, body), caller=persona.caller
    )


def attempt(
    persona: Persona, group: str, type_: str, body: dict[str, Any]
) -> Outcome | ProtocolError:
    """Send one command as ``persona``; its outcome or its refusal, whichever it got."""
    try:
        return submit(persona, group, type_, body)
    except ProtocolError as refusal:
        return refusal


def head(group: str) -> int:
    return GroupLog.objects.get(group_id=group).head_sequence


# --- following a group's log, event by event ------------------------------------------------

#: events that move a WorkItem, and the table row (by command) that must allow the move
MOVES = {
    "work.authorized": "work.authorize",
    "work.offered": "work.offer",
    "work.offer_accepted": "work.accept_offer",
    "approval.execution_granted": "approval.grant_execution",
    "approval.execution_refused": "approval.refuse_execution",
    "work.started": "work.start",
    "work.checkpointed": "work.checkpoint",
    "work.blocked": "work.block",
    "work.unblocked": "work.unblock",
    "work.submitted": "work.submit",
    # an active owner's failure while the contract allows another attempt (R11.4-08)
    "work.retry_scheduled": "work.fail",
    "work.result_accepted": "work.accept_result",
    "mission.child_created": "mission.create_child",
    "mission.child_approved": "link.child_approved",
    "mission.child_failed": "link.child_failed",
}
#: events that act on a WorkItem without moving it, and the ``IN_STATE`` entry allowing them
STAYS = {
    "work.offer_rejected": "work.reject_offer",
    "lease.renewed": "lease.renew",
    "work.progress_reported": "work.progress",
    "work.usage_recorded": "work.usage",
    "evidence.recorded": "evidence.record",
    "work.message_posted": "work.message",
    "work.reprioritized": "work.reprioritize",
}
#: part of another command (an acceptance's withdrawals, an ending's cleanup: issue 35 §6) or
#: audit only (a late result); the WorkItem keeps its state
NEUTRAL = {
    "work.offer_withdrawn": S.QUEUED,
    "work.late_result_recorded": None,
    "mission.child_cancelled": None,
    "work.dependency_ended": None,
    "work.dependency_restored": None,
    "work.replaced": None,
}


def row_command(document: dict[str, Any]) -> str | None:
    """The table row an event is judged by: its command, or the mission's for propagation."""
    kind, payload = document["type"], document["payload"]
    if kind in ("work.failed", "work.cancelled"):
        verb = "fail" if kind == "work.failed" else "cancel"
        return f"mission.{verb}" if payload.get("propagated_from") else f"work.{verb}"
    return MOVES.get(kind)


def check_transition(document: dict[str, Any], before: str, after: str) -> None:
    """R10.2-22: the WorkItem moved from ``before`` to ``after`` only as the table allows."""
    kind = document["type"]
    where = f"{kind} at {document['sequence']}: {before} -> {after}"
    assert after in (*S.STATES, S.NONE), where
    if kind in STAYS:
        assert before == after, where
        assert before in S.IN_STATE[STAYS[kind]], where
    elif kind in NEUTRAL:
        assert before == after != S.NONE, where
        assert NEUTRAL[kind] in (None, before), where
    else:
        command = row_command(document)
        assert command is not None, f"{kind} is not a WorkItem event this test knows"
        row = S.transition_for(command)
        assert row is not None, where
        assert before in row.sources, f"{where} not allowed by {row.rid}"
        assert after in row.targets, f"{where} not a target of {row.rid}"


class LogTracker:
    """A group's log folded event by event with ``decider.apply`` (an incremental replay).

    Each new event's WorkItem state before and after is checked against the table; the
    folded state is what a test predicts outcomes from.
    """

    def __init__(self, group: str) -> None:
        self.group = group
        self.seen = 0
        self.state: dict[StateKey, Any] = {}
        #: sequence -> (WorkItem, its state after that event), for WorkItem events
        self.moved: dict[int, tuple[str, str]] = {}

    def item(self, work_item: str) -> WorkItem | None:
        return self.state.get(work_item_key(work_item))

    def item_state(self, work_item: str | None) -> str:
        item = self.item(work_item) if work_item is not None else None
        return item.state if item is not None else S.NONE

    def catch_up(self) -> list[dict[str, Any]]:
        """Fold the events appended since the last call; return them."""
        documents = [
            json.loads(text)
            for text in Event.objects.filter(group_id=self.group, sequence__gt=self.seen)
            .order_by("sequence")
            .values_list("document", flat=True)
        ]
        for document in documents:
            assert document["sequence"] == self.seen + 1, "a gap in the log"
            work_item = (
                document["payload"].get("work_item")
                if document["type"] in WORK_ITEM_EVENTS
                else None
            )
            before = self.item_state(work_item)
            fact = Fact.of_event(document)
            decider.apply(self.state, fact)
            if work_item is not None:
                after = self.item_state(work_item)
                check_transition(document, before, after)
                self.moved[document["sequence"]] = (work_item, after)
            self.seen = document["sequence"]
        return documents


# --- the model: the answer a command should get, from the state folded out of the log --------

OK = "ok"  # accepted, 201
LATE = "late"  # accepted for audit only, 202 (R11.5-02)
Expected = ErrorCode | str

FORBIDDEN = ErrorCode.FORBIDDEN
ILLEGAL = ErrorCode.ILLEGAL_TRANSITION
NOT_FOUND = ErrorCode.NOT_FOUND
STALE_OWNERSHIP = ErrorCode.STALE_OWNERSHIP
STALE_LEASE = ErrorCode.STALE_LEASE


def offer_expired(offer_expires_at: str) -> bool:
    return parse_timestamp(offer_expires_at) <= datetime.now(UTC)


def owner_holds(item: WorkItem) -> bool:
    """Whether an owner still holds the item, so it may not be offered (R10.2-03, R11.4-05).

    No lease, start window or blocked lease runs out during a test run, so the owner holds a
    queued or active item, and a blocked one while its blocked lease or a child runs."""
    if item.owner is None:
        return False
    if item.state == S.QUEUED and item.refusal is not None:
        return False  # R10.2-06: an owner queued on a refused revision holds nothing
    if item.state in (S.QUEUED, S.ACTIVE, S.SUBMITTED):
        return True
    if item.state == S.BLOCKED:
        return item.blocked_at is not None or child_running(item)
    return False


def retry_waits(item: WorkItem) -> bool:
    """R11.4-08: the owner failed an attempt and the retry's backoff has not run out yet."""
    return item.retry_at is not None and parse_timestamp(item.retry_at) > datetime.now(UTC)


def child_running(item: WorkItem) -> bool:
    return item.child is not None and item.child.get("status") == "running"


def names_current_lease(item: WorkItem, lease_id: str) -> bool:
    """wire.md §8 (clarified 2026-12-03): the current lease is a live one, or the one a block
    closed while the item is blocked; any other id, a closed lease's included, is stale."""
    lease = item.lease
    if lease is None or lease.lease_id != lease_id:
        return False
    return lease.status == "active" or item.state == S.BLOCKED


def owner_precedence(item: WorkItem, actor: str, lease_id: str, command: str) -> Expected:
    """wire.md §8 for an owner's command under its lease: who, which lease, then state."""
    if item.owner != actor:
        return STALE_OWNERSHIP if actor in item.former_owners else FORBIDDEN
    if item.lease is None or not names_current_lease(item, lease_id):
        return STALE_LEASE
    if item.state not in S.allowed_from(command):
        return ILLEGAL
    if item.lease.status != "active":
        return STALE_LEASE
    return OK


def find_offer(item: WorkItem, offer_id: str) -> Offer | None:
    """The latest offer with that id (ids are unique per item in this test)."""
    return next((o for o in reversed(item.offers) if o.offer == offer_id), None)


def live_offer(item: WorkItem) -> Offer | None:
    """The offer that may be accepted now: open, unexpired, current revision, first in rank."""
    live = [
        o
        for o in item.offers
        if o.status == "open" and o.revision == item.revision and not offer_expired(o.expires_at)
    ]
    return min(live, key=lambda o: o.rank) if live else None


def predict_accept(item: WorkItem, offer_id: str, actor: str, revision: int) -> Expected:
    """R10.2-04, R10.2-05, R10.3-03, R10.3-06, R10.1-05, R10.1-03 in wire.md §8 order."""
    offer = find_offer(item, offer_id)
    if offer is None:
        return NOT_FOUND
    if offer.worker != actor:
        return FORBIDDEN
    if offer.status in ("withdrawn", "superseded"):
        return ErrorCode.OFFER_WITHDRAWN
    if item.state != S.OFFERED or offer.status != "open":
        return ILLEGAL
    if offer_expired(offer.expires_at):
        return ErrorCode.OFFER_EXPIRED
    if offer.mode == "sequential" and any(
        o.mode == "sequential"
        and o.revision == offer.revision
        and o.rank < offer.rank
        and o.status == "open"
        and not offer_expired(o.expires_at)
        for o in item.offers
    ):
        return ILLEGAL  # R10.3-03: not its turn yet
    if revision != item.revision or offer.revision != item.revision:
        return ErrorCode.STALE_REVISION
    if item.refusal is not None:
        return ErrorCode.APPROVAL_REQUIRED  # R10.2-06: a refused revision is not taken on
    if item.open_questions:
        return ILLEGAL
    return OK


def lease_id_of(item: WorkItem | None, *, stale: bool = False) -> str:
    if stale or item is None or item.lease is None:
        return "lease_not_current"
    return item.lease.lease_id
