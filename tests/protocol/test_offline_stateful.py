"""Bounded offline execution under random histories (R11.5-04..R11.5-13), decided purely.

A Hypothesis state machine plays one worker (``WORKER``) on one WorkItem while the world moves
on: it disconnects and buffers progress, checkpoints and messages with usage deltas (sometimes
with dishonest times or an overlong grace), the clock runs, its lease closes by other paths
(an online checkpoint, expiry and reassignment by the authority, a session replacement), the
item goes to another worker or back to this one under a new ownership epoch, and the worker
reconnects — with a new session that revokes its lease, or after a blip with the old one — and
submits what it buffered.

The test keeps its own record of what happened (each lease's start, recorded expiry and
closure; the owner and ownership epoch; every accepted charge), written from the events the
decisions appended, not from ``offline.py``. Against it, on every reconciliation:

* **safety** — an accepted buffered command was buffered inside its historical window:
  ``lease start <= disconnected_at <= buffered_at <= min(grace_deadline, lease closure)``,
  ``buffered_at <= now``, the grace within ``MAX_GRACE`` of an expiry no later than recorded,
  the lease the worker's under the current owner and ownership epoch (R11.5-10);
* **charged exactly once** — its non-zero usage appears in exactly one
  ``resource_usage_recorded`` event before its own event, and the item's and the mission's
  ``used`` always equal the sum of the accepted deltas (R11.5-11, R11.5-12);
* **all or nothing** — a refused command changes nothing; a budget overflow is refused
  ``BUDGET_EXCEEDED`` (R11.5-13);
* **liveness** — a command the record says is inside its window and within every budget is
  accepted (the rule refuses nothing it should not).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from missionweave.protocol import states as S
from missionweave.protocol.budgets import USAGE_RECORDED, non_zero
from missionweave.protocol.errors import ErrorCode, ProtocolError
from missionweave.protocol.identifiers import AUTHORITY
from missionweave.protocol.offline import EXTENSION, MAX_GRACE
from missionweave.protocol.timefmt import format_timestamp, parse_timestamp

from .deciders import GROUP
from .offline_stories import driver_of
from .work_scenarios import (
    MISSION,
    SESSION_EPOCH,
    WORKER,
    Call,
    Ran,
    WorkStory,
    checkpoint,
    story_in,
    work_contract,
)

#: the item's budgets (the wire.md §10 example) and its mission's (``mission.create``)
ITEM_LIMITS = dict(work_contract()["budgets"])
MISSION_LIMITS = {"money": 5.0}
#: events that end the current execution lease (``work.reassigned``/``work.offered`` fence it)
CLOSING = frozenset({
    "work.checkpointed", "lease.revoked", "lease.expired", "work.reassigned", "work.offered",
    "work.blocked", "work.submitted", "work.failed", "work.cancelled", "work.retry_scheduled",
})  # fmt: skip
OUTCOMES: Counter[str] = Counter()

usages = st.fixed_dictionaries(
    {},
    optional={
        "tokens": st.sampled_from([0, 1000, 60000, 90000]),
        "money": st.sampled_from([0, 1.0, 2.0]),
        "compute": st.sampled_from([0, 30, 600]),
        "side_effects": st.sampled_from([0, 0, 0, 1]),
    },
)


@dataclass
class LeaseRecord:
    """A lease as the test saw it appended (independent of the WorkItem aggregate)."""

    lease_id: str
    agent: str
    session_epoch: int
    ownership_epoch: int
    started: datetime
    expires: datetime
    closed: datetime | None = None


@dataclass
class Buffered:
    call: Call
    binding: dict[str, Any]


@dataclass
class Worker:
    """What ``WORKER``'s runtime knows: its session, its last lease, what it buffered."""

    session_epoch: int = SESSION_EPOCH
    online: bool = True
    lease: LeaseRecord | None = None
    lease_expires: datetime | None = None  # as the worker last heard it
    disconnected_at: datetime | None = None
    buffer: list[Buffered] = field(default_factory=list)


def _seconds(value: int) -> timedelta:
    return timedelta(seconds=value)


class OfflineReconciliation(RuleBasedStateMachine):
    @initialize()
    def start(self) -> None:
        self.story: WorkStory = story_in(S.ACTIVE, None)
        self.driver = driver_of(self.story)
        self.leases: dict[str, LeaseRecord] = {}
        self.current: str | None = None  # the lease the last ``work.started`` opened
        self.owner: str | None = WORKER
        self.epoch = 1
        self.charged: dict[str, float] = {}
        self.worker = Worker()
        item = self._item()
        lease = item["lease"]
        record = LeaseRecord(
            lease["lease_id"],
            WORKER,
            SESSION_EPOCH,
            1,
            parse_timestamp(lease["started_at"]),
            parse_timestamp(lease["expires_at"]),
        )
        self.leases[record.lease_id] = record
        self.current = record.lease_id
        self.worker.lease = record
        self.worker.lease_expires = record.expires

    # --- bookkeeping ---------------------------------------------------------------------

    @property
    def now(self) -> datetime:
        return self.driver.at

    def _item(self) -> dict[str, Any]:
        item = self.story.view()
        assert item is not None
        return item

    def _snapshot(self) -> tuple[int, dict[Any, str]]:
        scenario = self.driver.scenario
        return scenario.sequence, {key: repr(value) for key, value in scenario.state.items()}

    def _record(self, ran: Ran) -> None:
        """Follow the appended events: leases opened, renewed and closed, the owner."""
        for type_, payload in ran.events:
            if type_ == "work.started":
                lease = payload["lease"]
                self.leases[lease["lease_id"]] = LeaseRecord(
                    lease["lease_id"],
                    lease["agent"],
                    lease["session_epoch"],
                    lease["ownership_epoch"],
                    self.now,
                    parse_timestamp(lease["expires_at"]),
                )
                self.current = lease["lease_id"]
            elif type_ == "lease.renewed":
                self.leases[payload["lease_id"]].expires = parse_timestamp(payload["expires_at"])
            elif type_ in CLOSING and payload.get("offline") is None and self.current:
                record = self.leases[self.current]
                if record.closed is None:
                    record.closed = self.now
            if type_ == "work.offer_accepted":
                self.owner, self.epoch = payload["worker"], payload["ownership_epoch"]
            elif type_ in ("work.reassigned", "work.offered"):
                self.owner = None

    def _run(self, call: Call) -> Ran:
        ran = self.story.run(call)
        self._record(ran)
        OUTCOMES[call.type] += 1
        return ran

    # --- the world ------------------------------------------------------------------------

    @rule(seconds=st.integers(1, 60) | st.integers(1, 420))
    def advance_clock(self, seconds: int) -> None:
        self.driver.at = self.now + _seconds(seconds)

    @precondition(lambda self: self.worker.online and self.worker.lease is not None)
    @rule()
    def disconnect(self) -> None:
        self.worker.online = False
        self.worker.disconnected_at = self.now

    def _live_lease(self) -> dict[str, Any] | None:
        """The item's lease while it is active and not yet run out by the authority clock."""
        item = self._item()
        lease = item["lease"]
        if (
            item["state"] != S.ACTIVE
            or lease is None
            or lease["status"] != "active"
            or parse_timestamp(lease["expires_at"]) <= self.now
        ):
            return None
        return lease

    @precondition(lambda self: self.worker.online and self.owner == WORKER and self._live_lease())
    @rule()
    def renew(self) -> None:
        """The online owner renews its live lease (R11.3-03)."""
        lease = self._live_lease()
        assert lease is not None
        ran = self._run(Call("lease.renew", WORKER, {"work_item": self.story.item, **_id(lease)}))
        self.worker.lease_expires = parse_timestamp(ran.result["lease"]["expires_at"])

    @precondition(lambda self: self._live_lease() is not None)
    @rule()
    def checkpoint_by_another_path(self) -> None:
        """The owner's online checkpoint releases the live lease (R10.2-08): the lease closes
        while the offline buffer still names it."""
        lease = self._live_lease()
        assert lease is not None
        body = {**_id(lease), "work_item": self.story.item, "checkpoint": checkpoint("online")}
        self._run(Call("work.checkpoint", lease["agent"], body))

    def _due(self) -> tuple[str, str] | None:
        due = self.driver.scenario.state[("work_item", self.story.item)].due()
        return due if due is not None and parse_timestamp(due[0]) <= self.now else None

    @precondition(lambda self: self._due() is not None)
    @rule()
    def authority_reassigns_when_due(self) -> None:
        """Expiry or a missed start deadline, then ``work.reassign`` (R11.5-01)."""
        item = self._item()
        due = self._due()
        assert due is not None
        body = {
            "work_item": self.story.item,
            "ownership_epoch": item["ownership_epoch"],
            "reason": due[1],
        }
        self._run(Call("work.reassign", AUTHORITY, body))

    def _reoffer(self) -> dict[str, Any] | None:
        """An open, unexpired offer of the item to another worker."""
        item = self._item()
        if item["state"] != S.OFFERED:
            return None
        for offer in reversed(item["offers"]):
            if offer["status"] == "open" and offer["worker"] != WORKER:
                return offer if parse_timestamp(offer["expires_at"]) > self.now else None
        return None

    @precondition(lambda self: self._reoffer() is not None)
    @rule()
    def another_worker_takes_over(self) -> None:
        """The re-offer is accepted and started by the other worker: a changed owner."""
        offer = self._reoffer()
        assert offer is not None
        body = {"work_item": self.story.item, "offer": offer["offer"], "contract_revision": 1}
        self._run(Call("work.accept_offer", offer["worker"], body))
        start = {"work_item": self.story.item, "ownership_epoch": self.epoch}
        self._run(Call("work.start", offer["worker"], start))

    @precondition(
        lambda self: (
            self.worker.online
            and self.owner is None
            and self._item()["state"] in (S.OPEN, S.OFFERED)
        )
    )
    @rule()
    def offered_back_to_this_worker(self) -> None:
        """An item nobody owns is offered to ``WORKER`` again: owner again, a new ownership
        epoch (its buffered bindings name the old one)."""
        self._run(self.story.call("work.offer", workers=(WORKER,)))
        self._run(self.story.call("work.accept_offer", worker=WORKER))

    @precondition(
        lambda self: (
            self.worker.online and self.owner == WORKER and self._item()["state"] == S.QUEUED
        )
    )
    @rule()
    def worker_starts(self) -> None:
        ran = self._run(Call("work.start", WORKER, {"work_item": self.story.item, **self._ep()}))
        self.worker.lease = self.leases[ran.result["lease"]["lease_id"]]
        self.worker.lease_expires = self.worker.lease.expires

    def _ep(self) -> dict[str, int]:
        return {"ownership_epoch": self.epoch}

    # --- the worker offline -----------------------------------------------------------------

    @precondition(lambda self: not self.worker.online)
    @rule(
        type_=st.sampled_from(["work.progress", "work.checkpoint", "work.message"]),
        usage=usages,
        back_s=st.just(0) | st.integers(0, 30) | st.integers(-30, 900),
        extra_grace_s=st.integers(0, int(MAX_GRACE.total_seconds()) + 60),
    )
    def buffer(self, type_: str, usage: dict[str, Any], back_s: int, extra_grace_s: int) -> None:
        """Buffer a command now — its ``buffered_at`` claim is usually now, sometimes earlier
        (even before the disconnection or the lease) or slightly ahead — with a grace deadline
        the worker chose (sometimes beyond ``MAX_GRACE``)."""
        lease, expires = self.worker.lease, self.worker.lease_expires
        assert lease is not None
        assert expires is not None
        assert self.worker.disconnected_at is not None
        buffered_at = self.now - _seconds(back_s)  # back_s < 0: a clock running ahead
        binding = {
            "agent": WORKER,
            "group": GROUP,
            "work_item": self.story.item,
            "session_epoch": lease.session_epoch,
            "ownership_epoch": lease.ownership_epoch,
            "lease_id": lease.lease_id,
            "disconnected_at": format_timestamp(self.worker.disconnected_at),
            "buffered_at": format_timestamp(buffered_at),
            "grace_deadline": format_timestamp(expires + _seconds(extra_grace_s)),
            "lease_expires_at": format_timestamp(expires),
            "usage": usage,
        }
        body = self.story.call(type_, lease_id=lease.lease_id).body
        call = Call(type_, WORKER, body, {EXTENSION: binding})
        self.worker.buffer.append(Buffered(call, binding))

    @precondition(lambda self: not self.worker.online)
    @rule(new_session=st.booleans())
    def reconnect_and_submit(self, new_session: bool) -> None:
        """Reconnect — a new session revokes the lease first (R11.3-10), or a blip keeps the
        session — and submit every buffered command re-signed with the current epoch
        (R11.5-09), in the order buffered."""
        if new_session:
            self.worker.session_epoch += 1
            self.driver.sessions[WORKER] = self.worker.session_epoch
            lease = self._item()["lease"]
            if lease is not None and lease["status"] == "active" and lease["agent"] == WORKER:
                body = {
                    "work_item": self.story.item,
                    "lease_id": lease["lease_id"],
                    "session_epoch": self.worker.session_epoch,
                }
                self._run(Call("lease.revoke", AUTHORITY, body))
        for entry in self.worker.buffer:
            self._reconcile(entry)
        self.worker.buffer.clear()
        self.worker.online = True
        if new_session:
            self.worker.lease = None
            self.worker.lease_expires = None

    # --- the check ------------------------------------------------------------------------

    def _inside_window(self, binding: dict[str, Any]) -> bool:
        """The record's verdict, written from the events, not from ``offline.py``."""
        record = self.leases.get(binding["lease_id"])
        if record is None or self.owner != WORKER or record.agent != WORKER:
            return False
        if not (binding["ownership_epoch"] == record.ownership_epoch == self.epoch):
            return False
        if binding["session_epoch"] != record.session_epoch:
            return False
        times = {
            name: parse_timestamp(binding[name])
            for name in ("disconnected_at", "buffered_at", "grace_deadline", "lease_expires_at")
        }
        end = times["grace_deadline"]
        if record.closed is not None:
            end = min(end, record.closed)
        return (
            times["lease_expires_at"] <= record.expires
            and times["grace_deadline"] <= times["lease_expires_at"] + MAX_GRACE
            and times["buffered_at"] <= self.now
            and times["disconnected_at"] <= self.now
            and record.started <= times["disconnected_at"] <= times["buffered_at"] <= end
        )

    def _fits(self, usage: dict[str, Any]) -> bool:
        for limits in (ITEM_LIMITS, MISSION_LIMITS):
            for dimension, amount in non_zero(usage).items():
                limit = limits.get(dimension)
                if limit is not None and self.charged.get(dimension, 0) + amount > limit:
                    return False
        return True

    def _reconcile(self, entry: Buffered) -> None:
        binding, usage = entry.binding, non_zero(entry.binding["usage"])
        inside, fits = self._inside_window(binding), self._fits(binding["usage"])
        before = self._snapshot()
        ran: Ran | None = None
        refusal: ProtocolError | None = None
        try:
            ran = self._run(entry.call)
        except ProtocolError as error:
            refusal = error
        if refusal is not None:
            OUTCOMES[f"refused {refusal.code}"] += 1
            assert self._snapshot() == before, f"{refusal.code} changed something"
            assert not (inside and fits), f"refused inside its window: {refusal!r} {binding}"
            if inside:
                assert refusal.code is ErrorCode.BUDGET_EXCEEDED, refusal
            return
        assert ran is not None
        OUTCOMES["accepted"] += 1
        assert inside, f"accepted outside its window: {binding}"
        assert fits, f"accepted over budget: {binding}"
        charges = [payload for type_, payload in ran.events if type_ == USAGE_RECORDED]
        own = ran.events[-1]
        assert own[1]["offline"] == binding
        if usage:
            OUTCOMES["accepted with a charge"] += 1
            assert ran.events[0][0] == USAGE_RECORDED
            assert len(charges) == 1
            charge = charges[0]
            assert charge["usage"] == usage
            assert charge["historical_session_epoch"] == binding["session_epoch"]
            assert charge["reconciling_session_epoch"] == self.worker.session_epoch
            assert charge["charged_missions"] == [MISSION]
            for dimension, amount in usage.items():
                self.charged[dimension] = self.charged.get(dimension, 0) + amount
        else:
            assert charges == []

    @invariant()
    def charged_exactly_once(self) -> None:
        """The item's and the mission's ``used`` are the sum of the accepted deltas."""
        if not hasattr(self, "story"):
            return
        assert self._item()["budgets"]["used"] == self.charged
        mission = self.driver.mission(MISSION)
        assert mission is not None
        assert mission["budgets"]["used"] == self.charged


def _id(lease: dict[str, Any]) -> dict[str, str]:
    return {"lease_id": lease["lease_id"]}


def test_buffered_commands_are_applied_only_inside_their_window_and_charged_once() -> None:
    """R11.5-10..R11.5-13 over random histories: see the module docstring."""
    OUTCOMES.clear()
    run_state_machine_as_test(
        OfflineReconciliation,
        settings=settings(
            max_examples=300,
            stateful_step_count=40,
            deadline=None,
            # the coverage check below must not depend on the luck of one run: a fixed
            # sequence of examples reaches every outcome (a random one missed a budget
            # overflow about half the time)
            derandomize=True,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )
    # the runs really reached each outcome, not only the happy path
    for outcome in (
        "accepted",
        "accepted with a charge",
        f"refused {ErrorCode.OUTSIDE_GRACE_WINDOW}",
        f"refused {ErrorCode.STALE_LEASE}",
        f"refused {ErrorCode.STALE_OWNERSHIP}",
        f"refused {ErrorCode.BUDGET_EXCEEDED}",
        "lease.revoke",
        "work.reassign",
    ):
        assert OUTCOMES[outcome] > 0, (outcome, OUTCOMES)
    print("\n" + "\n".join(f"{count:5d}  {outcome}" for outcome, count in sorted(OUTCOMES.items())))
