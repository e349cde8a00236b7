"""Priority changes in the Worker (R0-12, R0-13, R11.3-11, R11.3-12; MWP-WRK-015), against the
in-process authority that decides every command with the real protocol core.

A coordinator's or mission owner's ``work.reprioritize`` reaches the worker as
``work.reprioritized``: its queue is reordered at the next tick, and where the new order puts
queued work above running work of the same group, the running item is asked to yield and stops
at its next checkpoint. A running item's own change counts too (``worker/priorities.py``).
"""

from __future__ import annotations

from pathlib import Path

from missionweave.protocol import states as S
from tests.protocol.work_scenarios import MISSION_OWNER
from tests.worker.runtime_world import Gate, World, world

ALPHA = "g-alpha"
#: past ``contention.MIN_RUN_S``: a running item may be displaced from then on
SETTLED_S = 11


def started_items(w: World) -> list[str]:
    return [sent.body["work_item"] for sent in w.sent("work.start")]


def queued(w: World, item: str, urgency: str = "normal") -> None:
    w.authority.story(ALPHA, item, urgency=urgency)
    w.authority.offer(ALPHA, item)
    w.until(lambda: w.state(ALPHA, item) == S.QUEUED)


def running(w: World, gate: Gate, item: str, urgency: str = "normal") -> None:
    w.authority.story(ALPHA, item, urgency=urgency)
    w.authority.offer(ALPHA, item)
    w.until(lambda: w.state(ALPHA, item) == S.ACTIVE and gate.started.is_set())


def test_an_escalated_queued_item_moves_ahead_of_older_work_at_the_next_tick(
    tmp_path: Path,
) -> None:
    """R0-12, R11.3-11: two items wait behind a critical one in the only slot; the later one
    is escalated to high and the worker's queue carries the new urgency at the next tick; it
    starts first once the slot frees. High never outranks the critical running item, so
    nothing is preempted."""
    gate = Gate()
    with world(tmp_path, handlers={"text.summarise": gate}) as w:
        running(w, gate, "wi-run", urgency="critical")
        queued(w, "wi-older")
        w.clock.advance(1)
        queued(w, "wi-escalated")
        w.clock.advance(SETTLED_S)

        w.authority.do(ALPHA, "wi-escalated", "work.reprioritize", urgency="high")
        w.tick()
        assert w.worker.queue.items[(ALPHA, "wi-escalated")].urgency == "high"

        gate.release.set()
        w.until(lambda: w.state(ALPHA, "wi-older") == S.SUBMITTED)
        assert started_items(w) == ["wi-run", "wi-escalated", "wi-older"]
        assert w.sent("work.checkpoint") == []


def test_escalating_a_queued_item_above_the_running_one_makes_it_yield(tmp_path: Path) -> None:
    """R0-12, R0-13, R11.3-12, R11.3-13 (MWP-WRK-015): equal urgencies wait their turn; once a
    mission owner escalates the queued item, the running one stops at its next checkpoint
    (sent as ``work.checkpoint``, back in the group queue), the escalated item starts in the
    freed slot, and the preempted one later resumes from its checkpoint."""
    gate = Gate()
    with world(tmp_path, handlers={"text.summarise": gate}) as w:
        running(w, gate, "wi-run")
        queued(w, "wi-urgent")
        w.clock.advance(SETTLED_S)
        for _ in range(10):
            w.tick()
        assert w.sent("work.checkpoint") == []  # same urgency: no claim on the slot

        w.authority.do(ALPHA, "wi-urgent", "work.reprioritize", actor=MISSION_OWNER)
        w.until(lambda: w.state(ALPHA, "wi-urgent") == S.ACTIVE)
        (checkpoint,) = w.sent("work.checkpoint")
        assert checkpoint.body["work_item"] == "wi-run"
        preempted = w.authority.item(ALPHA, "wi-run")
        assert (preempted["state"], preempted["owner"]) == (S.QUEUED, w.authority.principal)

        gate.release.set()
        w.until(lambda: w.state(ALPHA, "wi-run") == S.SUBMITTED)
        assert started_items(w) == ["wi-run", "wi-urgent", "wi-run"]
        assert gate.resumed_from[-1] is not None
        assert gate.resumed_from[-1]["next"] >= 1


def test_lowering_the_running_items_urgency_lets_waiting_work_take_its_slot(
    tmp_path: Path,
) -> None:
    """R0-12, R0-13: the running item's own change counts: high running work is not displaced
    by normal work, until its urgency is lowered to low; then it yields at its checkpoint."""
    gate = Gate()
    with world(tmp_path, handlers={"text.summarise": gate}) as w:
        running(w, gate, "wi-run", urgency="high")
        queued(w, "wi-waiting")
        w.clock.advance(SETTLED_S)
        for _ in range(10):
            w.tick()
        assert w.sent("work.checkpoint") == []

        w.authority.do(ALPHA, "wi-run", "work.reprioritize", urgency="low")
        w.until(lambda: w.state(ALPHA, "wi-waiting") == S.ACTIVE)
        assert [c.body["work_item"] for c in w.sent("work.checkpoint")] == ["wi-run"]


def test_escalating_the_running_item_keeps_its_slot(tmp_path: Path) -> None:
    """R0-12: a critical item arrives behind a normal running one, which is escalated to
    critical before it could be displaced: nothing outranks it any more, so it keeps its slot
    and the newcomer waits."""
    gate = Gate()
    with world(tmp_path, handlers={"text.summarise": gate}) as w:
        running(w, gate, "wi-run")
        w.authority.do(ALPHA, "wi-run", "work.reprioritize")  # critical
        w.tick()
        queued(w, "wi-critical", urgency="critical")
        w.clock.advance(SETTLED_S)
        for _ in range(20):
            w.tick()
        assert w.sent("work.checkpoint") == []
        assert w.state(ALPHA, "wi-run") == S.ACTIVE
        gate.release.set()
        w.until(lambda: w.state(ALPHA, "wi-critical") == S.SUBMITTED)
