"""Admission control: accept an offer only when the Worker can honour it (R10.3-08..10).

R10.3-08 lists what a Worker checks before accepting: queue capacity, concurrency, capability
availability, deadlines, authorisation eligibility, dependencies and budgets. R10.3-09: when
it cannot make a credible commitment it rejects, and (R10.3-10) says why with a structured
reason — the protocol's own list, ``REJECT_REASONS``, which ``work.reject_offer`` validates.

``admit`` is pure: it reads an ``AdmissionState`` (the Worker's view at ``now``) and returns
an ``Admission`` holding *every* refusal found, so a Coordinator learns all of them at once,
and a primary reason for the ``work.reject_offer`` body. The primary is the most lasting
reason in ``PRECEDENCE``: one that would still hold on a retry (not authorised, no such
capability) outranks one that may pass soon (queue full), so a Coordinator does not re-offer
work that can never be accepted.

Details name only the offered item's own requirements, never another Group's work or the
Worker's queue position (R11.2-02).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from missionweave.protocol import states as S
from missionweave.protocol.timefmt import format_timestamp, parse_timestamp
from missionweave.protocol.work.checks import REJECT_REASONS

from .resources import shortfall
from .scheduler import NO_NEEDS, Needs, QueuedItem, Resources, Scheduler

CAPACITY = "capacity"
DEADLINE = "deadline"
CAPABILITY = "capability"
AUTHORIZATION = "authorization"
DEPENDENCY = "dependency"
BUDGET = "budget"
#: the most lasting reason first: it becomes the primary reason of a rejection
PRECEDENCE = (AUTHORIZATION, CAPABILITY, DEPENDENCY, BUDGET, DEADLINE, CAPACITY)
# the reasons are the protocol's, which ``work.reject_offer`` validates against
assert sorted(PRECEDENCE) == sorted(REJECT_REASONS)


@dataclass(frozen=True, slots=True)
class AdmissionOffer:
    """An offer as admission sees it: the item it would queue and the contract's demands."""

    item: QueuedItem
    offer: str
    #: required capability ``(id, version)`` pairs, R10.1-01(e)
    capabilities: tuple[tuple[str, str], ...] = ()
    depends_on: tuple[str, ...] = ()
    dependency_policy: str = "all_verified"
    #: the contract's budgets by dimension; a dimension left out is unlimited (wire.md §10)
    budgets: Mapping[str, float] = field(default_factory=dict)
    #: what this Worker expects the work to cost, by budget dimension
    estimated_cost: Mapping[str, float] = field(default_factory=dict)

    @classmethod
    def from_contract(
        cls,
        *,
        group: str,
        work_item: str,
        mission: str,
        offer: str,
        contract: Mapping[str, Any],
        queued_at: datetime,
        depends_on: tuple[str, ...] = (),
        estimated_seconds: float | None = None,
        estimated_cost: Mapping[str, float] | None = None,
        needs: Needs = NO_NEEDS,
        org_priority_class: str = "normal",
    ) -> AdmissionOffer:
        """From a validated Work Contract (``protocol.contracts``): urgency, deadline,
        capabilities, budgets, dependency policy and risk gate come from its fields."""
        item = QueuedItem(
            group=group,
            work_item=work_item,
            mission=mission,
            urgency=contract["urgency"],
            deadline=parse_timestamp(contract["deadline"]),
            queued_at=queued_at,
            risk_gated=bool(contract["risk"]["requires_execution_approval"]),
            needs=needs,
            estimated_seconds=estimated_seconds,
            org_priority_class=org_priority_class,
        )
        return cls(
            item=item,
            offer=offer,
            capabilities=tuple((c["id"], c["version"]) for c in contract["capabilities"]),
            depends_on=depends_on,
            dependency_policy=contract["dependency_policy"],
            budgets=dict(contract["budgets"]),
            estimated_cost=dict(estimated_cost or {}),
        )


@dataclass(frozen=True, slots=True)
class AdmissionState:
    """The Worker's view when an offer arrives."""

    now: datetime
    scheduler: Scheduler
    #: the Agent Card's declared maximum concurrency (R11.1-11)
    slots: int
    #: everything the Worker has, busy or not: needs beyond it can never be met
    resources: Resources
    capabilities: frozenset[tuple[str, str]]
    #: the Groups in which this Worker may execute work (membership and role)
    authorized_groups: frozenset[str]
    max_queued: int
    max_queued_per_group: int | None = None
    #: WorkItem → state in the offer's Group, as this Worker's projection knows it
    dependency_states: Mapping[str, str] = field(default_factory=dict)
    #: the Worker's own budget left, by dimension (absent: unlimited)
    remaining_budget: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Refusal:
    reason: str
    detail: str
    requirement: str


@dataclass(frozen=True, slots=True)
class Admission:
    """``accepted``, or every reason not to, most lasting first (R10.3-09, R10.3-10)."""

    refusals: tuple[Refusal, ...] = ()

    @property
    def accepted(self) -> bool:
        return not self.refusals

    @property
    def reason(self) -> str | None:
        return self.refusals[0].reason if self.refusals else None

    def reject_body(self, *, work_item: str, offer: str) -> dict[str, Any]:
        """The ``work.reject_offer`` body: the primary reason, every refusal in the detail."""
        if self.accepted:
            raise ValueError("an accepted offer has nothing to reject")
        detail = "; ".join(f"{r.reason}: {r.detail}" for r in self.refusals)
        return {"work_item": work_item, "offer": offer, "reason": self.reason, "detail": detail}


def admit(offer: AdmissionOffer, state: AdmissionState) -> Admission:
    """Check every condition of R10.3-08; refuse with each one that fails."""
    found: dict[str, list[Refusal]] = {reason: [] for reason in PRECEDENCE}
    for check in (_authorization, _capability, _dependency, _budget, _deadline, _capacity):
        for refusal in check(offer, state):
            found[refusal.reason].append(refusal)
    return Admission(tuple(r for reason in PRECEDENCE for r in found[reason]))


def _authorization(offer: AdmissionOffer, state: AdmissionState) -> list[Refusal]:
    if offer.item.group in state.authorized_groups:
        return []
    return [Refusal(AUTHORIZATION, "not eligible to execute work in this group", "R10.3-08")]


def _capability(offer: AdmissionOffer, state: AdmissionState) -> list[Refusal]:
    refusals = []
    missing = [
        f"{cid}@{ver}" for cid, ver in offer.capabilities if (cid, ver) not in state.capabilities
    ]
    if missing:
        refusals.append(Refusal(CAPABILITY, "missing " + ", ".join(missing), "R10.3-08"))
    if not offer.item.needs.fits(state.resources):
        # what the worker has in all, busy or not: never there, never free (``resources``)
        short = shortfall(offer.item.needs, state.resources.amounts)
        detail = "; ".join(short) or "needs resources this worker does not have"
        refusals.append(Refusal(CAPABILITY, detail, "R10.3-08"))
    return refusals


def _dependency(offer: AdmissionOffer, state: AdmissionState) -> list[Refusal]:
    """R10.4-03: a dependency the policy can never accept, or one this Worker cannot see."""
    unknown, dead = [], []
    for work_item in offer.depends_on:
        current = state.dependency_states.get(work_item)
        if current is None:
            unknown.append(work_item)
        elif offer.dependency_policy == "all_verified" and current in (S.FAILED, S.CANCELLED):
            dead.append(work_item)
    refusals = []
    if unknown:
        refusals.append(Refusal(DEPENDENCY, "unknown " + ", ".join(unknown), "R10.4-03"))
    if dead:
        refusals.append(Refusal(DEPENDENCY, "cannot be verified " + ", ".join(dead), "R10.4-03"))
    return refusals


def _budget(offer: AdmissionOffer, state: AdmissionState) -> list[Refusal]:
    refusals = []
    for dimension, cost in sorted(offer.estimated_cost.items()):
        limit = offer.budgets.get(dimension)
        if limit is not None and cost > limit:
            refusals.append(
                Refusal(
                    BUDGET,
                    f"{dimension} estimated {cost:g} over the contract's {limit:g}",
                    "R10.1-01",
                )
            )
        left = state.remaining_budget.get(dimension)
        if left is not None and cost > left:
            refusals.append(
                Refusal(
                    BUDGET, f"{dimension} estimated {cost:g} over this worker's budget", "R10.3-08"
                )
            )
    return refusals


def _deadline(offer: AdmissionOffer, state: AdmissionState) -> list[Refusal]:
    """Refused when the expected finish, at this Group's fair share, misses the deadline."""
    deadline = offer.item.deadline
    if deadline is None or state.slots < 1:
        return []
    if deadline <= state.now:
        return [Refusal(DEADLINE, "the deadline has passed", "R10.3-08")]
    estimate = state.scheduler.position_estimate(offer.item, now=state.now, slots=state.slots)
    if estimate.finish_expected <= deadline:
        return []
    return [
        Refusal(
            DEADLINE,
            f"expected to finish at {format_timestamp(estimate.finish_expected)}, "
            f"after the deadline {format_timestamp(deadline)}",
            "R10.3-09",
        )
    ]


def _capacity(offer: AdmissionOffer, state: AdmissionState) -> list[Refusal]:
    group = offer.item.group
    scheduler = state.scheduler
    quota = scheduler.policy.share(group).quota
    if state.slots < 1 or quota == 0:
        return [Refusal(CAPACITY, "no execution slot for this group", "R10.3-08")]
    if scheduler.queued() >= state.max_queued or (
        state.max_queued_per_group is not None
        and scheduler.queued(group) >= state.max_queued_per_group
    ):
        return [Refusal(CAPACITY, "the work queue is full", "R10.3-08")]
    return []
