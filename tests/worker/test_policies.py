"""The contract's timeout, honoured by the reference Worker (R10.1-01(h); issue 35 §8).

``timeout.attempt_s`` bounds one attempt's wall-clock time. Past it the Worker asks the
handler to stop at its next checkpoint, blocked with a resolution in plain words (as for a
spent budget, R11.4-04): a person allows more time (unblocks) or ends the item.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from missionweave.protocol import states as S
from missionweave.worker.policies import attempt_limit_s, timed_out, timeout_resolution

from .runtime_world import Gate, world
from .scheduler_sim import T0

ALPHA = "g-alpha"


def test_the_limit_is_the_contracts_and_none_without_one() -> None:
    """R10.1-01(h): optional; without it an attempt runs as long as its lease is renewed."""
    assert attempt_limit_s({"timeout": {"attempt_s": 90}}) == 90.0
    assert attempt_limit_s({}) is None
    assert not timed_out({}, started_at=T0, now=T0 + timedelta(days=9))
    contract = {"timeout": {"attempt_s": 90}}
    assert not timed_out(contract, started_at=T0, now=T0 + timedelta(seconds=90))
    assert timed_out(contract, started_at=T0, now=T0 + timedelta(seconds=90.5))
    assert timeout_resolution(90) == (
        "This attempt ran past its time limit of 1 min 30 s. Allow it more time, or end "
        "this work item."
    )


def test_an_attempt_past_its_time_limit_blocks_at_its_next_checkpoint(tmp_path: Path) -> None:
    """R10.1-01(h), R11.4-04: the handler stops at a checkpoint (nothing is interrupted,
    R11.3-12), ``work.block`` says why, and the slot is free again."""
    gate = Gate()
    with world(tmp_path, handlers={"text.summarise": gate}) as w:
        w.authority.story(ALPHA, "wi-1", timeout={"attempt_s": 60})
        w.authority.offer(ALPHA, "wi-1")
        w.until(lambda: w.state(ALPHA, "wi-1") == S.ACTIVE and gate.started.is_set())
        for _ in range(10):
            w.tick()
        assert w.sent("work.block") == []  # within its limit
        w.clock.advance(61)
        w.until(lambda: w.state(ALPHA, "wi-1") == S.BLOCKED)
        (block,) = w.sent("work.block")
        assert "ran past its time limit of 1 min" in block.body["required_resolution"]
        assert block.body["checkpoint"]["ref"]
        w.until(lambda: w.worker.pool.free == 1)
