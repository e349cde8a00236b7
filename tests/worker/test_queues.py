"""The worker's per-group projection: inbox, work queue and held items, folded from the group's
events (R0-01, R0-02, R11.1-01..03; MWP-WRK-008).

Each story is a log of real commands decided by the pure protocol core, served as wire.md §6
documents; the fold must tell the same story the protocol's own WorkItems tell.
"""

from __future__ import annotations

import copy
import json
import random
from datetime import timedelta
from typing import Any

import pytest

from missionweave.client.errors import ChainBroken
from missionweave.protocol import decider, snapshots
from missionweave.protocol import states as S
from missionweave.protocol.facts import Fact, StateKey
from missionweave.protocol.memberships import GRANT, REVOKE
from missionweave.protocol.work.checks import approvals_required
from missionweave.protocol.work.items import WorkItem
from missionweave.worker.local_store import from_group_snapshot
from missionweave.worker.queues import (
    INBOX,
    INBOX_HEAD,
    INBOX_LIMIT,
    ITEM,
    MEMBERSHIP,
    OFFER,
    WORK,
    GroupQueues,
    SnapshotInvalid,
    apply,
    evolve,
    fold_into,
    folded_types,
    gate_is_open,
    replay,
    terms_of,
)
from tests.protocol.work_scenarios import (
    COORDINATOR,
    DEADLINE,
    MISSION_OWNER,
    OTHER_WORKER,
    SECOND_OWNER,
    Call,
    WorkStory,
    work_contract,
)

from .streams import ME, GroupWalk, documents, group_log

GROUP = "g-research"
GATED = {"class": "high", "requires_execution_approval": True, "approvals_required": 2}


class Told:
    """A group's log told by real, decided commands, and the worker's fold of it."""

    def __init__(self, contract: dict[str, Any] | None = None) -> None:
        self.walk = GroupWalk(random.Random(0), items=0)
        self.walk.admin(GRANT, {"principal": ME, "roles": ["worker"]})
        self.walk.admin(GRANT, {"principal": OTHER_WORKER, "roles": ["worker"]})
        self.story = self.walk.new_story(contract or work_contract())
        self.item = self.story.item

    def do(self, command: str, **options: Any) -> Told:
        self.walk._do(self.story, command, options)
        return self

    def later(self, seconds: int) -> Told:
        self.walk.driver.at += timedelta(seconds=seconds)
        return self

    def queued(self) -> Told:
        return self.do("work.offer", workers=(ME,)).do("work.accept_offer", worker=ME)

    def active(self) -> Told:
        return self.queued().do("work.start")

    @property
    def events(self) -> list[dict[str, Any]]:
        return documents(GROUP, self.walk.scenario.log)

    def last(self, type_: str) -> dict[str, Any]:
        return next(event for event in reversed(self.events) if event["type"] == type_)

    @property
    def state(self) -> GroupQueues:
        return replay(self.events, group=GROUP, worker=ME)

    def inbox(self, kind: str) -> list[dict[str, Any]]:
        return [entry for entry in self.state.inbox() if entry["kind"] == kind]


# --- remembering items, and offers -------------------------------------------------------------


def test_an_authorized_item_is_remembered_with_the_terms_the_scheduler_reads() -> None:
    """R0-03, R10.1-01(f), R10.1-01(i): urgency, deadline, impact, the risk gate and the
    declared compute estimate come from the contract of ``work.authorized``."""
    contract = work_contract(
        urgency="high",
        business_impact="critical",
        risk=GATED,
        resources={"max_concurrency": 1, "estimated_compute_s": 90},
    )
    told = Told(contract)
    row = told.state.item(told.item)
    assert row is not None
    assert (row["mission"], row["revision"], row["approvals"]) == ("m-1", 1, [])
    assert row["terms"] == {
        "urgency": "high",
        "deadline": DEADLINE,
        "business_impact": "critical",
        "risk_class": "high",
        "requires_execution_approval": True,
        "approvals_required": 2,
        "compute_s": 90,
        "compute_source": "estimate",
        "max_concurrency": 1,
        "needs": {},  # the estimate and the concurrency are not held amounts (R11.1-09)
    }
    # the protocol core counts the same gate (R10.1-01(i))
    item: WorkItem = told.walk.scenario.state["work_item", told.item]
    assert row["terms"]["approvals_required"] == approvals_required(item)
    assert told.state.queue() == []
    assert told.state.offers() == []


def test_without_an_estimate_the_compute_figure_is_the_contracts_ceiling() -> None:
    """R10.1-01: ``budgets.compute`` bounds the item's compute when no estimate is declared."""
    assert terms_of(work_contract())["compute_s"] == 3600
    assert terms_of(work_contract())["compute_source"] == "budget"
    assert (
        terms_of(work_contract(risk={"class": "low", "requires_execution_approval": False}))[
            "approvals_required"
        ]
        == 0
    )
    assert terms_of(None)["compute_s"] is None


def test_an_offer_to_this_worker_is_in_its_offers_and_its_inbox() -> None:
    """R10.3-01, R11.1-01: the inbox holds the offers addressed to this worker."""
    told = Told().do("work.offer", workers=(ME,))
    offered = told.last("work.offered")
    [offer] = told.state.offers()
    sent = offered["payload"]["offers"][0]
    assert offer["offer"] == sent["offer"]
    assert (offer["mode"], offer["rank"], offer["revision"], offer["ahead"]) == (
        "sequential",
        0,
        1,
        [],
    )
    assert offer["expires_at"] == sent["expires_at"]
    assert (offer["offered_at"], offer["offered_sequence"]) == (
        offered["recorded_at"],
        offered["sequence"],
    )
    [entry] = told.inbox("offer")
    assert entry["work_item"] == told.item
    assert entry["detail"]["offer"] == sent["offer"]
    assert entry["event_id"] == offered["event_id"]


def test_an_offer_made_only_to_another_worker_is_not_this_workers() -> None:
    """R0-01: another worker's offer is nothing this worker holds."""
    told = Told().do("work.offer", workers=(OTHER_WORKER,))
    assert told.state.offers() == []
    assert told.inbox("offer") == []


def test_a_sequential_offer_knows_who_is_asked_first_until_they_reject() -> None:
    """R10.3-03: a sequential offer is live once the ones ranked before it are not."""
    told = Told().do("work.offer", workers=(OTHER_WORKER, ME))
    first = told.last("work.offered")["payload"]["offers"][0]
    [offer] = told.state.offers()
    assert offer["rank"] == 1
    assert offer["ahead"] == [{"offer": first["offer"], "expires_at": first["expires_at"]}]
    told.do("work.reject_offer", worker=OTHER_WORKER)
    assert told.state.offers()[0]["ahead"] == []


def test_accepting_queues_the_item_with_what_the_scheduler_needs() -> None:
    """R11.1-01, MWP-WRK-008, R0-10: the acceptance starts the ownership epoch and queues the
    item with group, mission, revision, the contract's terms, the risk gate, the authority
    time it was queued at, the epoch and the start deadline (R11.3-02)."""
    told = Told(work_contract(urgency="critical", risk=GATED)).queued()
    accepted = told.last("work.offer_accepted")
    [queued] = told.state.queue()
    assert queued == {
        "group": GROUP,
        "work_item": told.item,
        "mission": "m-1",
        "revision": 1,
        "state": S.QUEUED,
        "ownership_epoch": 1,
        "start_deadline": accepted["payload"]["start_deadline"],
        "retry_at": None,
        "queued_at": accepted["recorded_at"],
        "queued_sequence": accepted["sequence"],
        "attempt": 0,
        "terms": terms_of(work_contract(urgency="critical", risk=GATED)),
        "gate": {
            "requires_execution_approval": True,
            "approvals_required": 2,
            "approvals": [],
            "refused_by": None,
        },
        "lease": None,
        "resume_from": None,
    }
    assert told.state.offers() == []
    assert told.state.active() == []


def test_another_workers_acceptance_withdraws_this_workers_offer() -> None:
    """R10.3-05, R10.3-06: the first acceptance wins; the losing offer is withdrawn."""
    told = Told().do("work.offer", workers=(ME, OTHER_WORKER), mode="urgent")
    told.do("work.accept_offer", worker=OTHER_WORKER)
    assert told.state.offers() == []
    assert told.state.queue() == []
    [closed] = told.inbox("offer_closed")
    assert closed["detail"]["reason"] == "accepted_by_another"


def test_this_workers_own_rejection_closes_its_offer_without_a_notice() -> None:
    """R10.3-09: the worker decided it; nothing new to tell it."""
    told = Told().do("work.offer", workers=(ME,)).do("work.reject_offer", worker=ME)
    assert told.state.offers() == []
    assert told.inbox("offer_closed") == []


def test_grants_and_a_refusal_fill_the_risk_gate() -> None:
    """R10.2-06, R10.1-01(i): the gate opens with enough distinct grants; a refusal holds the
    revision whatever the grants."""
    told = Told(work_contract(risk=GATED)).queued().do("approval.grant_execution")
    gate = told.state.queue()[0]["gate"]
    assert gate["approvals"] == [MISSION_OWNER]
    assert not gate_is_open(gate)
    told.do("approval.grant_execution", actor=SECOND_OWNER)
    gate = told.state.queue()[0]["gate"]
    assert gate["approvals"] == [MISSION_OWNER, SECOND_OWNER]
    assert gate_is_open(gate)
    assert [e["detail"]["decision"] for e in told.inbox("gate")] == ["granted", "granted"]

    refused = Told(work_contract(risk=GATED)).queued().do("approval.refuse_execution")
    gate = refused.state.queue()[0]["gate"]
    assert gate["refused_by"] == MISSION_OWNER
    assert not gate_is_open(gate)


# --- execution ---------------------------------------------------------------------------------


def test_starting_moves_the_item_from_the_queue_to_active_with_its_lease() -> None:
    """R10.2-07, R11.3-03: the lease id, epochs and expiry of the item the worker holds."""
    told = Told().active()
    lease = told.last("work.started")["payload"]["lease"]
    assert told.state.queue() == []
    [active] = told.state.active()
    assert active["state"] == S.ACTIVE
    assert active["attempt"] == 1
    assert active["lease"] == {
        "lease_id": lease["lease_id"],
        "ownership_epoch": 1,
        "session_epoch": 1,
        "started_at": lease["started_at"],
        "expires_at": lease["expires_at"],
        "status": "active",
    }
    told.later(60).do("lease.renew")
    renewed = told.last("lease.renewed")["payload"]
    assert told.state.active()[0]["lease"]["expires_at"] == renewed["expires_at"]


def test_a_checkpoint_requeues_the_item_to_resume_from_it() -> None:
    """R10.2-08, R11.3-12: the checkpoint releases execution; the item waits queued, still
    owned, and resumes from that checkpoint, in the same attempt."""
    told = Told().active().later(30).do("work.checkpoint")
    event = told.last("work.checkpointed")
    [queued] = told.state.queue()
    expected = {
        **event["payload"]["checkpoint"],
        "sequence": event["sequence"],
        "at": event["recorded_at"],
    }
    assert queued["resume_from"] == expected
    assert told.state.checkpoints() == {told.item: expected}
    assert (queued["queued_at"], queued["queued_sequence"]) == (
        event["recorded_at"],
        event["sequence"],
    )
    assert queued["start_deadline"] == event["payload"]["start_deadline"]
    assert queued["lease"] is None
    told.do("work.start")
    [active] = told.state.active()
    assert active["resume_from"] == expected
    assert active["attempt"] == 1  # the resumed start continues its attempt (R11.4-08)


def test_a_blocked_item_stays_owned_and_comes_back_when_unblocked_to_queued() -> None:
    """R10.2-09, R10.2-10, R11.4-05: blocked keeps ownership; unblocking re-queues it."""
    told = Told().active().do("work.block")
    assert [row["state"] for row in told.state.blocked()] == [S.BLOCKED]
    assert told.state.queue() == []
    assert told.state.active() == []
    told.do("work.unblock", to=S.QUEUED)
    [queued] = told.state.queue()
    assert queued["queued_sequence"] == told.last("work.unblocked")["sequence"]


def test_unblocking_to_open_fences_this_worker() -> None:
    """R10.2-10: re-opened means re-offered; the former owner's slot must stop."""
    told = Told().active().do("work.block").do("work.unblock", to=S.OPEN)
    assert told.state.owned(told.item) is None
    [lost] = told.inbox("work_lost")
    assert lost["detail"]["reason"] == "unblocked_to_open"


def test_a_submission_releases_the_item() -> None:
    """R10.2-11: submitted, the result is the reviewers'; nothing is held any more."""
    told = Told().active().do("work.submit")
    assert told.state.owned(told.item) is None
    assert told.state.item(told.item) is not None


def test_an_owner_failure_with_attempts_left_requeues_it_after_the_backoff() -> None:
    """R11.4-08: the same owner retries once ``retry_at`` has passed."""
    told = Told().active().do("owner.fail")
    retry = told.last("work.retry_scheduled")["payload"]
    [queued] = told.state.queue()
    assert queued["retry_at"] == retry["retry_at"]
    assert queued["start_deadline"] == retry["start_deadline"]


def test_an_expired_lease_then_the_reassignment_take_the_item_away() -> None:
    """R11.3-09, R11.5-01: the lease runs out, then the item is fenced in the same command."""
    told = Told().active().later(301).do("work.reassign")
    events = told.events
    expired_at = next(i for i, e in enumerate(events) if e["type"] == "lease.expired")
    between = replay(events[: expired_at + 1], group=GROUP, worker=ME)
    assert between.active()[0]["lease"]["status"] == "expired"
    assert told.state.owned(told.item) is None
    assert [e["detail"]["reason"] for e in told.inbox("lease_ended")] == ["expired"]
    assert [e["detail"]["reason"] for e in told.inbox("work_lost")] == ["lease_expired"]


def test_a_replaced_session_requeues_the_item_with_a_new_start_deadline() -> None:
    """R11.3-10: the old session's lease is revoked; the item waits queued for the owner."""
    told = Told().active().do("lease.revoke")
    revoked = told.last("lease.revoked")
    [queued] = told.state.queue()
    assert queued["start_deadline"] == revoked["payload"]["start_deadline"]
    assert queued["lease"] is None
    [ended] = told.inbox("lease_ended")
    assert ended["detail"]["reason"] == "session_replaced"


def test_a_failed_child_under_fail_parent_takes_the_item_away() -> None:
    """R10.2-15, R10.2-17: blocked while the child runs; its failure fails the item."""
    told = Told().active().do("mission.create_child", failure_policy="fail_parent")
    assert [row["state"] for row in told.state.blocked()] == [S.BLOCKED]
    told.do("link.child_failed")
    assert told.state.owned(told.item) is None
    assert [e["detail"]["reason"] for e in told.inbox("work_lost")] == ["child_failed"]


def test_a_cancelled_item_is_forgotten() -> None:
    """R10.2-14, R10.2-19: cancelled is terminal; the open offer closes."""
    told = Told().do("work.offer", workers=(ME,)).do("work.cancel")
    assert told.state.offers() == []
    assert told.state.item(told.item) is None
    assert [e["detail"]["reason"] for e in told.inbox("offer_closed")] == ["cancelled"]


def test_a_queued_items_ended_dependency_and_its_replacement_reach_the_inbox() -> None:
    """Issue 35 §6 (docs/protocol.md, "Cancel cleans up"): an item queued for this worker whose
    dependency is cancelled keeps its place (it cannot start, nor is it lost), and the inbox
    says why it waits; when a replacement takes the cancelled item's work on, the inbox says
    so too."""
    told = Told()
    waiting = WorkStory(told.walk.driver, item="wi-w", proposal="p-w", contract=work_contract())
    waiting.do("work.authorize", depends_on=[told.item])
    waiting.do("work.offer", workers=(ME,))
    waiting.do("work.accept_offer", worker=ME)
    told.do("work.cancel")

    assert [row["work_item"] for row in told.state.queue()] == ["wi-w"]
    (ended,) = told.inbox("dependency_ended")
    assert ended["work_item"] == "wi-w"
    assert ended["type"] == "work.dependency_ended"
    detail = ended["detail"]
    assert (detail["dependency"], detail["outcome"]) == (told.item, "cancelled")
    assert detail["reason"]

    body = {
        "work_item": "wi-r",
        "mission": "m-1",
        "contract": work_contract(),
        "depends_on": [],
        "replaces": told.item,
    }
    told.walk.driver.run(Call("work.authorize", COORDINATOR, body))
    (restored,) = told.inbox("dependency_restored")
    assert restored["work_item"] == "wi-w"
    assert restored["detail"] == {"dependency": told.item, "replaced_by": "wi-r"}


def test_an_ended_dependency_of_someone_elses_item_is_not_noted() -> None:
    """Only this worker's offers and queued items are its business: another's waiting item is
    not noted."""
    told = Told()
    other = WorkStory(told.walk.driver, item="wi-o", proposal="p-o", contract=work_contract())
    other.do("work.authorize", depends_on=[told.item])
    told.do("work.cancel")
    assert "work.dependency_ended" in [event["type"] for event in told.events]
    assert told.inbox("dependency_ended") == []


def test_a_corrected_contract_is_a_new_revision_decided_afresh() -> None:
    """R10.1-05, R10.2-06: a new revision carries its own terms; grants never carry over;
    the owner whose start deadline passed is fenced by the new offer (R10.2-03)."""
    told = Told(work_contract(risk=GATED)).queued().do("approval.grant_execution")
    told.later(601).do("work.offer", workers=(ME,), contract=work_contract(urgency="critical"))
    row = told.state.item(told.item)
    assert row is not None
    assert (row["revision"], row["approvals"], row["terms"]["urgency"]) == (2, [], "critical")
    assert told.state.owned(told.item) is None
    [offer] = told.state.offers()
    assert (offer["revision"], offer["terms"]["urgency"]) == (2, "critical")
    assert [e["detail"]["reason"] for e in told.inbox("work_lost")] == ["fenced_by_offer"]


# --- messages and memberships ------------------------------------------------------------------


def test_messages_on_this_workers_items_reach_its_inbox_but_not_its_own() -> None:
    """R10.1-02, R10.1-03: questions on an item offered to or owned by this worker."""
    told = Told().do("work.offer", workers=(ME,))
    told.do("work.message", actor=COORDINATOR, essential=True).do("work.message", actor=ME)
    [message] = told.inbox("message")
    posted = next(e for e in told.events if e["actor"] == COORDINATOR and "text" in e["payload"])
    assert message["detail"] == {
        "message": posted["payload"]["message"],
        "by": COORDINATOR,
        "text": posted["payload"]["text"],
        "essential": True,
        "in_reply_to": None,
        "resolves": None,
    }
    elsewhere = Told().do("work.message", actor=COORDINATOR)
    assert elsewhere.inbox("message") == []


def test_a_reply_says_in_the_inbox_whether_it_settled_the_question() -> None:
    """R10.1-04: the worker learns from its inbox that its question was settled (by the
    coordinator), or only answered (by anyone else)."""
    told = Told().do("work.offer", workers=(ME,)).do("work.message", actor=ME, essential=True)
    asked = told.events[-1]["payload"]["message"]
    told.do("work.message", actor=OTHER_WORKER, in_reply_to=asked)
    told.do("work.message", actor=COORDINATOR, in_reply_to=asked)
    replies = [(e["detail"]["by"], e["detail"]["resolves"]) for e in told.inbox("message")]
    assert replies == [(OTHER_WORKER, False), (COORDINATOR, True)]


def test_a_priority_change_reaches_the_terms_of_the_offer_and_the_queue_at_once() -> None:
    """R0-12, R11.3-11: ``work.reprioritized`` changes the urgency and deadline the scheduler
    reads — of the remembered item, this worker's open offer and its queue entry — without
    moving the item in the queue (same ``queued_at``), and says so in the inbox."""
    told = Told().do("work.offer", workers=(ME,))
    told.do("work.reprioritize", urgency="high")
    [offer] = told.state.offers()
    assert offer["terms"]["urgency"] == "high"
    told.do("work.accept_offer", worker=ME)
    queued = told.state.owned(told.item)
    assert queued is not None
    assert queued["terms"]["urgency"] == "high"
    told.do(
        "work.reprioritize",
        actor=MISSION_OWNER,
        urgency="critical",
        deadline="2029-06-01T00:00:00Z",
    )
    after = told.state.owned(told.item)
    assert after is not None
    assert (after["terms"]["urgency"], after["terms"]["deadline"]) == (
        "critical",
        "2029-06-01T00:00:00Z",
    )
    assert after["queued_at"] == queued["queued_at"]
    item = told.state.item(told.item)
    assert item is not None
    assert item["terms"]["urgency"] == "critical"
    changes = [(e["detail"]["by"], e["detail"]["urgency"]) for e in told.inbox("priority")]
    assert changes == [(COORDINATOR, "high"), (MISSION_OWNER, "critical")]


def test_membership_changes_reach_the_inbox() -> None:
    """wire.md §2: this worker's roles and epoch; another member's changes are not its own."""
    told = Told()
    told.walk.admin(GRANT, {"principal": ME, "roles": ["reviewer", "worker"]})
    assert told.state.membership == {"roles": ["reviewer", "worker"], "epoch": 2, "active": True}
    assert [e["detail"]["epoch"] for e in told.inbox("membership")] == [1, 2]


def test_revoking_this_workers_membership_fences_its_queued_work_but_not_its_blocked_work() -> None:
    """R11.5-01, R11.3-07 (wire.md §6): the revocation fences what the member holds queued or
    under a live lease; a blocked item keeps its bounded blocked lease (R11.4-05)."""
    told = Told().queued()
    blocked = told.walk.new_story(work_contract())
    told.walk._do(blocked, "work.offer", {"workers": (ME,)})
    for command in ("work.accept_offer", "work.start", "work.block"):
        told.walk._do(blocked, command, {})
    told.walk.admin(REVOKE, {"principal": ME})
    state = told.state
    assert state.membership == {"roles": ["worker"], "epoch": 2, "active": False}
    assert state.owned(told.item) is None
    assert [row["work_item"] for row in state.blocked()] == [blocked.item]
    # already after ``membership.revoked``, before the fencing events of the same command
    events = told.events
    at = next(i for i, e in enumerate(events) if e["type"] == "membership.revoked")
    assert replay(events[: at + 1], group=GROUP, worker=ME).queue() == []


def test_events_the_worker_has_no_use_for_change_nothing() -> None:
    """Progress, usage and mission events are in the log; they move none of its queues."""
    told = Told().active().do("work.progress").do("work.usage")
    before = replay(told.events[:-2], group=GROUP, worker=ME)
    for event in told.events[-2:]:
        assert event["type"] not in folded_types()
        assert evolve(before.rows, event, ME) == {}
    assert told.state.rows == before.rows


def test_the_inbox_keeps_the_latest_entries() -> None:
    """The inbox is bounded; the group log keeps every event (R16-08)."""
    rows: dict[str, dict[str, Any]] = {WORK: {"wi-1": {"state": S.QUEUED}}}
    for sequence in range(1, INBOX_LIMIT + 6):
        event = {
            "event_id": f"ev-{sequence}",
            "sequence": sequence,
            "type": "work.message_posted",
            "actor": COORDINATOR,
            "payload": {"work_item": "wi-1", "text": f"question {sequence}"},
        }
        fold_into(rows, evolve(rows, event, ME))
    state = GroupQueues(GROUP, ME, rows=rows)
    inbox = state.inbox()
    assert len(inbox) == INBOX_LIMIT
    assert [inbox[0]["index"], inbox[-1]["index"]] == [5, INBOX_LIMIT + 4]
    assert [entry["index"] for entry in state.inbox(after=INBOX_LIMIT + 2)] == [
        INBOX_LIMIT + 3,
        INBOX_LIMIT + 4,
    ]
    assert rows[INBOX_HEAD][""] == {"next": INBOX_LIMIT + 5}


# --- apply and replay ----------------------------------------------------------------------------


def test_apply_is_pure_and_folds_to_what_replay_gives() -> None:
    """R11.1-02: live application and replay are the same fold; a state once handed out never
    changes."""
    events = group_log(GROUP, random.Random(11), steps=160)
    states = [GroupQueues(GROUP, ME)]
    kept = []
    for event in events:
        kept.append(copy.deepcopy(states[-1].rows))
        states.append(apply(states[-1], event))
    assert all(state.rows == rows for state, rows in zip(states, kept, strict=False))
    assert states[-1] == replay(events, group=GROUP, worker=ME)
    assert states[-1].sequence == len(events)
    assert states[-1].event_hash == events[-1]["hash"]


def test_apply_refuses_what_is_not_the_next_event_of_the_group() -> None:
    """R16-03, wire.md §6: in sequence order, chained, of this group, its hash its digest."""
    events = Told().queued().events
    state = replay(events[:2], group=GROUP, worker=ME)
    with pytest.raises(ChainBroken):
        apply(state, events[3])
    tampered = {**events[2], "payload": {**events[2]["payload"], "roles": ["coordinator"]}}
    with pytest.raises(ChainBroken):
        apply(state, tampered)
    with pytest.raises(ChainBroken):
        apply(GroupQueues("g-other", ME), events[0])


# --- the same story as the protocol's WorkItems --------------------------------------------------


def _agrees(mine: GroupQueues, state: dict[StateKey, Any]) -> None:
    """What the worker holds is what the protocol's own aggregates say (R11.1-03)."""
    items = {ident: item for (kind, ident), item in state.items() if kind == "work_item"}
    assert set(mine.of(ITEM)) == {i for i, item in items.items() if item.state not in S.TERMINAL}
    for ident, item in items.items():
        remembered = mine.item(ident)
        if remembered is not None:
            assert remembered["revision"] == item.revision
            assert remembered["approvals"] == list(item.approvals)
            assert remembered["refused_by"] == (item.refusal or {}).get("principal")
            assert remembered["last_checkpoint"] == item.last_checkpoint
            assert remembered["attempts"] == item.attempts
            assert remembered["terms"]["approvals_required"] == approvals_required(item)
            # R11.3-11: a priority change reaches the terms the scheduler reads
            assert remembered["terms"]["urgency"] == item.contract["urgency"]
            assert remembered["terms"]["deadline"] == item.contract["deadline"]
        owned = mine.owned(ident)
        if item.owner == ME and item.state in (S.QUEUED, S.ACTIVE, S.BLOCKED):
            assert owned is not None, ident
            assert owned["state"] == item.state
            assert owned["ownership_epoch"] == item.ownership_epoch
            assert owned["start_deadline"] == item.start_deadline
            assert owned["retry_at"] == item.retry_at
            assert owned["revision"] == item.revision
            assert owned["gate"]["approvals"] == list(item.approvals)
            assert owned["resume_from"] == item.last_checkpoint
            assert owned["terms"]["urgency"] == item.contract["urgency"]
            if item.state == S.ACTIVE:
                assert item.lease is not None
                assert owned["lease"] is not None
                assert owned["lease"]["lease_id"] == item.lease.lease_id
                assert owned["lease"]["status"] == item.lease.status
        else:
            assert owned is None, ident
        mine_open = [
            o.offer
            for o in item.offers
            if o.worker == ME and o.status == "open" and o.revision == item.revision
        ]
        offer = mine.of(OFFER).get(ident)
        expected = mine_open[-1] if item.state == S.OFFERED and mine_open else None
        assert (offer["offer"] if offer else None) == expected, ident
    membership = state.get(("membership", ME))
    if membership is not None:
        assert mine.membership == {
            "roles": list(membership.roles),
            "epoch": membership.epoch,
            "active": membership.active,
        }


def _command_boundaries(events: list[dict[str, Any]]) -> list[int]:
    """The positions after the last event of each command (the log is consistent there)."""
    return [
        index + 1
        for index, event in enumerate(events)
        if index + 1 == len(events) or events[index + 1]["command_id"] != event["command_id"]
    ]


@pytest.mark.parametrize("seed", [3, 5, 8])
def test_the_projection_tells_what_the_protocols_own_work_items_tell(seed: int) -> None:
    """R11.1-03: after every command, the queue, the held items, the offers, the remembered
    items and the membership agree with the protocol's WorkItem and Membership aggregates."""
    events = group_log(GROUP, random.Random(seed), steps=260)
    boundaries = set(_command_boundaries(events))
    state: dict[StateKey, Any] = {}
    rows: dict[str, dict[str, Any]] = {}
    for position, event in enumerate(events, 1):
        decider.apply(state, Fact.of_event(event))
        fold_into(rows, evolve(rows, event, ME))
        if position in boundaries:
            _agrees(GroupQueues(GROUP, ME, position, event["hash"], rows), state)


# --- rebuilding from snapshots -------------------------------------------------------------------


def test_a_local_snapshot_plus_the_later_events_gives_what_a_full_replay_gives() -> None:
    """R11.1-02, MWP-WRK-029: restore the worker's own snapshot, replay the rest in order."""
    events = group_log(GROUP, random.Random(21), steps=200)
    full = replay(events, group=GROUP, worker=ME)
    for cut in (1, len(events) // 3, len(events) // 2, len(events) - 1):
        at_cut = replay(events[:cut], group=GROUP, worker=ME)
        document = json.loads(json.dumps(at_cut.snapshot()))  # as stored in a file
        restored = GroupQueues.from_snapshot(document)
        assert restored == at_cut
        assert replay(events[cut:], group=GROUP, worker=ME, start=restored) == full


def test_a_local_snapshot_that_does_not_hold_is_refused() -> None:
    """A snapshot whose digest does not hold, or another worker's, is not restored."""
    state = replay(Told().queued().events, group=GROUP, worker=ME)
    document = state.snapshot()
    document["rows"][WORK] = {}
    with pytest.raises(SnapshotInvalid):
        GroupQueues.from_snapshot(document)
    with pytest.raises(SnapshotInvalid):
        replay([], group=GROUP, worker=OTHER_WORKER, start=state)


def _scheduling_rows(state: GroupQueues) -> dict[str, Any]:
    """The rows a snapshot can restore exactly: not the inbox, and not the times only the
    history knows (``from_group_snapshot``)."""
    history_only = ("queued_at", "queued_sequence", "offered_at", "offered_sequence")
    return {
        kind: {
            key: {name: value for name, value in row.items() if name not in history_only}
            for key, row in state.of(kind).items()
        }
        for kind in (MEMBERSHIP, ITEM, OFFER, WORK)
    }


def test_an_authority_snapshot_restores_the_queues_a_replay_gives() -> None:
    """R16-10, R16-11, MWP-WRK-029: from the authority's snapshot of the group at S, then the
    events after S, the worker holds the queue, items, offers and membership a full replay
    gives (the inbox before S is history, which a snapshot does not hold)."""
    events = group_log(GROUP, random.Random(34), steps=240)
    full = replay(events, group=GROUP, worker=ME)
    state: dict[StateKey, Any] = {}
    cuts = set(_command_boundaries(events)[::9])
    for position, event in enumerate(events, 1):
        decider.apply(state, Fact.of_event(event))
        if position not in cuts:
            continue
        document = snapshots.build(
            group=GROUP,
            sequence=position,
            event_hash=event["hash"],
            state=state,
            created_at="2026-12-01T00:00:00.000000Z",
            authority="authority.test",
        )
        derived = from_group_snapshot(json.loads(json.dumps(document)), worker=ME)
        at_cut = replay(events[:position], group=GROUP, worker=ME)
        assert (derived.sequence, derived.event_hash) == (at_cut.sequence, at_cut.event_hash)
        assert _scheduling_rows(derived) == _scheduling_rows(at_cut)
        continued = replay(events[position:], group=GROUP, worker=ME, start=derived)
        assert _scheduling_rows(continued) == _scheduling_rows(full)
        assert continued.of(INBOX) == {} or continued.inbox()[0]["sequence"] > position
