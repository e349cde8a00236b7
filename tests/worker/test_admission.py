"""Admission control refuses what the Worker cannot honour, with structured reasons.

R10.3-08 (what is checked), R10.3-09 (reject without a credible commitment), R10.3-10 (the
reason codes, the protocol's ``REJECT_REASONS``).
"""

from __future__ import annotations

from datetime import timedelta
from typing import cast

import pytest

from missionweave.protocol.examples import example_contract
from missionweave.protocol.timefmt import format_timestamp
from missionweave.protocol.work.checks import REJECT_REASONS
from missionweave.protocol.work.offers import validate_reject
from missionweave.worker.admission import (
    PRECEDENCE,
    AdmissionOffer,
    AdmissionState,
    admit,
)
from missionweave.worker.offers import refused_execution
from missionweave.worker.queues import OfferRow
from missionweave.worker.scheduler import (
    Needs,
    QueuedItem,
    Resources,
    Scheduler,
    SchedulingPolicy,
    Share,
)

from .scheduler_sim import T0, at

CAPABILITY = ("summarize", "1.0")


def _offer(**fields: object) -> AdmissionOffer:
    item_fields = {
        "urgency": fields.pop("urgency", "normal"),
        "deadline": fields.pop("deadline", at(3600)),
        "needs": fields.pop("needs", Needs()),
        "estimated_seconds": fields.pop("estimated_seconds", 60.0),
    }
    item = QueuedItem(
        group=fields.pop("group", "g1"),  # type: ignore[arg-type]
        work_item="wi-new",
        mission="m-1",
        queued_at=T0,
        **item_fields,  # type: ignore[arg-type]
    )
    values: dict[str, object] = {"item": item, "offer": "of-1", "capabilities": (CAPABILITY,)}
    return AdmissionOffer(**(values | fields))  # type: ignore[arg-type]


def _state(scheduler: Scheduler | None = None, **fields: object) -> AdmissionState:
    values: dict[str, object] = {
        "now": T0,
        "scheduler": Scheduler() if scheduler is None else scheduler,
        "slots": 2,
        "resources": Resources(slots=2, capabilities=frozenset({"gpu"})),
        "capabilities": frozenset({CAPABILITY}),
        "authorized_groups": frozenset({"g1"}),
        "max_queued": 10,
    }
    return AdmissionState(**(values | fields))  # type: ignore[arg-type]


def _queued(group: str, n: int, urgency: str = "normal") -> QueuedItem:
    return QueuedItem(
        group=group,
        work_item=f"wi-{group}-{n}",
        mission="m",
        urgency=urgency,
        deadline=None,
        queued_at=T0,
        estimated_seconds=600,
    )


def test_an_offer_the_worker_can_honour_is_admitted() -> None:
    """R10.3-08: every check passes."""
    admission = admit(_offer(), _state())
    assert admission.accepted
    assert admission.reason is None
    with pytest.raises(ValueError, match="accepted"):
        admission.reject_body(work_item="wi-new", offer="of-1")


@pytest.mark.parametrize(
    ("offer", "state", "reason"),
    [
        ({"group": "g2"}, {}, "authorization"),
        ({"capabilities": (("translate", "2.0"),)}, {}, "capability"),
        ({"capabilities": (("summarize", "2.0"),)}, {}, "capability"),
        ({"needs": Needs.of("tpu")}, {}, "capability"),
        ({"depends_on": ("wi-x",)}, {}, "dependency"),
        ({"depends_on": ("wi-x",)}, {"dependency_states": {"wi-x": "cancelled"}}, "dependency"),
        ({"estimated_cost": {"money": 5}, "budgets": {"money": 1}}, {}, "budget"),
        ({"estimated_cost": {"tokens": 500}}, {"remaining_budget": {"tokens": 100}}, "budget"),
        ({"deadline": at(-1)}, {}, "deadline"),
        ({"deadline": at(30)}, {}, "deadline"),
        ({}, {"slots": 0}, "capacity"),
        ({}, {"max_queued": 0}, "capacity"),
        ({}, {"max_queued_per_group": 0}, "capacity"),
    ],
)
def test_each_condition_of_admission_refuses_with_its_reason(
    offer: dict[str, object], state: dict[str, object], reason: str
) -> None:
    """R10.3-08, R10.3-09, R10.3-10: the refusal names the structured reason."""
    admission = admit(_offer(**offer), _state(**state))
    assert not admission.accepted
    assert admission.reason == reason
    assert reason in REJECT_REASONS


def test_dependencies_that_may_still_verify_are_admitted() -> None:
    """R10.4-03: a dependency still in progress is no reason to refuse; under
    ``all_terminal`` a failed one satisfies the policy."""
    states = {"wi-x": "active", "wi-y": "failed"}
    assert not admit(_offer(depends_on=("wi-x", "wi-y")), _state(dependency_states=states)).accepted
    offer = _offer(depends_on=("wi-x", "wi-y"), dependency_policy="all_terminal")
    assert admit(offer, _state(dependency_states=states)).accepted
    assert admit(_offer(depends_on=("wi-x",)), _state(dependency_states=states)).accepted


def test_a_backlog_that_would_miss_the_deadline_refuses_it() -> None:
    """R10.3-09: no credible commitment when the expected finish at this Group's share of
    the slots is after the deadline."""
    scheduler = Scheduler()
    for n in range(4):
        scheduler.enqueue(_queued("g1", n, urgency="critical"))  # ahead of any new item
    # 4 x 600 s on 2 slots: expected to start at 1200 s, to finish at 1260 s
    admission = admit(_offer(deadline=at(1259)), _state(scheduler))
    assert admission.reason == "deadline"
    assert "after the deadline" in admission.refusals[0].detail
    assert admit(_offer(deadline=at(1260)), _state(scheduler)).accepted


def test_busy_slots_delay_the_expected_start() -> None:
    """R10.3-09: with every slot running, nothing starts before the first should end."""
    scheduler = Scheduler()
    for n in range(2):
        scheduler.enqueue(_queued("other", n))
        assert scheduler.pick(Resources(slots=1), T0) is not None
    assert admit(_offer(deadline=at(600 + 59)), _state(scheduler)).reason == "deadline"
    assert admit(_offer(deadline=at(600 + 60)), _state(scheduler)).accepted


def test_a_full_group_queue_refuses_with_capacity_and_a_quota_of_zero_too() -> None:
    """R10.3-08 queue capacity and concurrency: per Group and in total."""
    scheduler = Scheduler(SchedulingPolicy(shares={"g2": Share(quota=0)}))
    scheduler.enqueue(_queued("g1", 0))
    assert admit(_offer(), _state(scheduler, max_queued_per_group=1)).reason == "capacity"
    assert admit(_offer(), _state(scheduler, max_queued_per_group=2)).accepted
    zero = _offer(group="g2")
    assert admit(zero, _state(scheduler, authorized_groups=frozenset({"g2"}))).reason == "capacity"


def test_every_refusal_is_reported_and_the_most_lasting_is_primary() -> None:
    """R10.3-10: all reasons at once, the primary one first by ``PRECEDENCE``."""
    offer = _offer(
        group="g2",
        capabilities=(("translate", "2.0"),),
        deadline=at(-5),
        estimated_cost={"money": 9},
        budgets={"money": 1},
    )
    admission = admit(offer, _state(max_queued=0))
    reasons = [refusal.reason for refusal in admission.refusals]
    assert reasons == ["authorization", "capability", "budget", "deadline", "capacity"]
    assert reasons == sorted(reasons, key=PRECEDENCE.index)


def test_reject_body_is_a_valid_work_reject_offer() -> None:
    """R10.3-10: the body passes the protocol's ``work.reject_offer`` validation."""
    admission = admit(_offer(group="g2", deadline=at(-1)), _state())
    body = admission.reject_body(work_item="wi-new", offer="of-1")
    validate_reject(body)
    assert body["reason"] == "authorization"
    assert "deadline" in body["detail"]


def test_details_never_name_another_groups_work() -> None:
    """R11.2-02: a refusal speaks of this offer only, not of what else is queued."""
    scheduler = Scheduler()
    for n in range(9):
        scheduler.enqueue(_queued("secret-group", n))
        scheduler.enqueue(_queued("g1", n, urgency="critical"))
    admission = admit(_offer(deadline=at(900)), _state(scheduler, max_queued=18))
    assert {r.reason for r in admission.refusals} == {"deadline", "capacity"}
    assert all("secret" not in r.detail for r in admission.refusals)


def test_offer_from_a_work_contract_reads_its_fields() -> None:
    """R10.1-01: urgency, deadline, capabilities, budgets, dependency policy and the risk
    gate come from the contract."""
    deadline = T0 + timedelta(hours=2)
    contract = example_contract(
        urgency="high",
        deadline=format_timestamp(deadline),
        risk={"class": "high", "requires_execution_approval": True, "approvals_required": 1},
    )
    offer = AdmissionOffer.from_contract(
        group="g1",
        work_item="wi-1",
        mission="m-1",
        offer="of-1",
        contract=contract,
        queued_at=T0,
        estimated_seconds=120,
    )
    assert offer.item.urgency == "high"
    assert offer.item.deadline == deadline
    assert offer.item.risk_gated
    assert offer.capabilities == tuple((c["id"], c["version"]) for c in contract["capabilities"])
    assert offer.budgets == contract["budgets"]
    assert offer.dependency_policy == contract["dependency_policy"]


def test_an_offer_of_a_refused_revision_is_rejected_naming_who_refused_and_why() -> None:
    """R10.2-06, R10.3-10, issue 34: the WorkItem the authority serves says the offered
    revision was refused; the worker does not take it on — an ``authorization`` refusal
    naming who refused and why; a refusal of an earlier revision does not count."""
    refusal = {"principal": "user:olga", "comment": "reads customer data", "revision": 1}
    offer = cast(OfferRow, {"revision": 1})
    (found,) = refused_execution(offer, {"refusal": refusal})
    assert (found.reason, found.requirement) == ("authorization", "R10.2-06")
    assert "user:olga" in found.detail
    assert "reads customer data" in found.detail
    assert refused_execution(cast(OfferRow, {"revision": 2}), {"refusal": refusal}) == []
    assert refused_execution(offer, {"refusal": None}) == []
