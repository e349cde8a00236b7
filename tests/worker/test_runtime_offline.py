"""Bounded offline execution on the worker's side (R11.5-04..R11.5-09): reversible work goes
on, the rest stops at a checkpoint; progress and checkpoints are buffered signed with the
binding and reconciled — accepted by the real protocol core — on reconnection; a result
finished offline is kept across a shutdown and decided after reconciliation."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from missionweave.protocol import states as S
from missionweave.protocol.envelope import signing_bytes
from missionweave.protocol.offline import EXTENSION, parse_binding
from missionweave.protocol.signing import verify
from missionweave.worker.handlers import HandlerTable, Progress, TaskResult
from missionweave.worker.runtime import Worker
from missionweave.worker.slots import SlotContext
from tests.worker.fake_authority import wait_until
from tests.worker.fake_work import result_for
from tests.worker.runtime_world import Gate, World, world

ALPHA = "g-alpha"


def _events(w, type_: str) -> list[dict]:  # type: ignore[no-untyped-def]
    return [e for e in w.authority.groups[ALPHA].events() if e["type"] == type_]


def test_reversible_work_goes_on_offline_and_its_buffered_progress_is_reconciled(
    tmp_path: Path,
) -> None:
    """R11.5-04, R11.5-08, R11.5-09, R11.5-06: with the authority unreachable, a reversible
    item keeps running; its progress is buffered with the binding, signed under the lease's
    session; once reachable the buffer is sent first (re-signed by the client) and the
    authority records it with its ``offline`` binding; only then is the result submitted."""
    milestone, finish = threading.Event(), threading.Event()

    def handler(ctx: SlotContext, progress: Progress) -> TaskResult:
        milestone.wait(10)
        progress.milestone("half way")
        finish.wait(10)
        return result_for(ctx.mission_context, 2)

    with world(tmp_path, handlers={"text.summarise": handler}) as w:
        w.authority.story(ALPHA, "wi-1")
        w.authority.offer(ALPHA, "wi-1")
        w.until(lambda: len(w.sent("work.progress")) == 1)
        w.authority.unreachable = True
        w.clock.advance(10)
        milestone.set()
        w.until(lambda: len(w.worker.buffer) == 1)
        assert not w.worker.link.online
        (buffered,) = w.worker.buffer.pending()
        bound = parse_binding(buffered.binding)
        lease = w.authority.item(ALPHA, "wi-1")["lease"]
        assert (bound.lease_id, bound.session_epoch) == (lease["lease_id"], lease["session_epoch"])
        assert bound.buffered_at >= bound.disconnected_at
        envelope = w.worker.buffer._db.execute("SELECT envelope FROM buffered").fetchone()[0]
        assert '"signature"' in envelope  # signed when buffered (R11.5-04)

        finish.set()  # the result waits: no submission before reconciliation (R11.5-06)
        for _ in range(20):
            w.tick()
        assert w.sent("work.submit") == []
        assert w.worker.errors == []

        w.authority.unreachable = False
        w.until(lambda: w.state(ALPHA, "wi-1") == S.SUBMITTED)
        reconciled = [s for s in w.sent("work.progress") if s.extensions]
        assert len(reconciled) == 1
        assert EXTENSION in reconciled[0].extensions
        assert w.authority.sent.index(reconciled[0]) < w.authority.sent.index(
            w.sent("work.submit")[0]
        )
        (recorded,) = [e for e in _events(w, "work.progress_reported") if "offline" in e["payload"]]
        assert recorded["payload"]["milestones_completed"] == ["half way"]
        assert len(w.worker.buffer) == 0


def test_irreversible_work_stops_at_a_checkpoint_offline_and_resumes_after_reconnection(
    tmp_path: Path,
) -> None:
    """R11.5-05: work whose contract allows side effects does not go on without a valid lease:
    offline, it is asked to yield; its checkpoint is buffered (R11.5-04), reconciled on
    reconnection, and then sent again online so the lease is released and the item queued
    (R10.2-08); it restarts from that checkpoint."""
    gate = Gate()
    with world(tmp_path, handlers={"text.summarise": gate}) as w:
        contract_budgets = {"money": 5.0, "tokens": 200000, "side_effects": 3}
        w.authority.story(ALPHA, "wi-1", budgets=contract_budgets)
        w.authority.offer(ALPHA, "wi-1")
        w.until(lambda: gate.started.is_set() and len(w.sent("work.progress")) == 1)
        w.authority.unreachable = True
        w.clock.advance(61)  # the heartbeat finds the authority gone
        w.until(lambda: len(w.worker.buffer) == 2)  # the heartbeat and the checkpoint
        # in either order: the loop buffers the heartbeat while the slot thread buffers the
        # checkpoint it stopped at
        buffered = sorted(b.type for b in w.worker.buffer.pending())
        assert buffered == ["work.checkpoint", "work.progress"]
        assert w.worker.pool.free == 1  # the slot is released
        assert w.sent("work.checkpoint") == []

        w.authority.unreachable = False
        w.until(lambda: len(gate.resumed_from) == 2)
        checkpoints = w.sent("work.checkpoint")
        assert [bool(c.extensions) for c in checkpoints] == [True, False]
        ref = checkpoints[0].body["checkpoint"]["ref"]
        assert gate.resumed_from[1] is not None
        assert w.authority.item(ALPHA, "wi-1")["last_checkpoint"]["ref"] == ref
        gate.release.set()
        w.until(lambda: w.state(ALPHA, "wi-1") == S.SUBMITTED)


def test_buffered_commands_are_signed_by_the_workers_key(tmp_path: Path) -> None:
    """R11.5-04: what is buffered is signed with the agent's key over the canonical envelope
    (the same bytes the authority verifies, wire.md §3)."""
    with world(tmp_path, handlers={}) as w:
        key = w.config.private_key()
        bound = {
            "agent": w.authority.principal,
            "group": ALPHA,
            "work_item": "wi-1",
            "session_epoch": 1,
            "ownership_epoch": 1,
            "lease_id": "lease-1",
            "disconnected_at": "2026-12-03T09:00:00.000000Z",
            "buffered_at": "2026-12-03T09:00:01.000000Z",
            "grace_deadline": "2026-12-03T09:10:00.000000Z",
            "lease_expires_at": "2026-12-03T09:05:00.000000Z",
            "usage": {},
        }
        body = {"work_item": "wi-1", "lease_id": "lease-1", "checkpoint": {}}
        w.worker.buffer.add(
            group=ALPHA, type_="work.checkpoint", body=body, bound=bound, membership_epoch=1
        )
        row = w.worker.buffer._db.execute("SELECT envelope FROM buffered").fetchone()[0]
        envelope = json.loads(row)
        assert envelope["extensions"] == {EXTENSION: bound}
        assert verify(key.public_key(), signing_bytes(envelope), envelope["signature"])
        w.worker.buffer._db.execute("DELETE FROM buffered")


def test_commands_buffered_before_a_shutdown_are_reconciled_by_the_next_run(
    tmp_path: Path,
) -> None:
    """R11.5-04, R11.5-06: the buffer is durable. A worker shut down while offline keeps its
    buffered heartbeat and shutdown checkpoint on disk; the next run on the same state
    reconciles them before anything else, which releases the old lease, and resumes the item
    from that checkpoint."""
    gate = Gate()
    w = World(tmp_path, handlers={"text.summarise": gate})
    w.authority.story(ALPHA, "wi-1")
    w.authority.offer(ALPHA, "wi-1")
    w.until(lambda: gate.started.is_set() and len(w.sent("work.progress")) == 1)
    w.authority.unreachable = True
    w.clock.advance(61)
    w.until(lambda: len(w.worker.buffer) == 1)
    w.worker.stop()
    assert w.worker.shutdown()  # the slot stopped at a checkpoint, buffered
    assert w.sent("work.checkpoint") == []

    w.authority.unreachable = False
    again = Worker(
        w.config,
        w.authority,
        handlers=HandlerTable({"text.summarise": gate}),
        clock=w.clock,
        follow="poll",
        probe_every_s=0.0,
    )
    assert not again.link.online  # reconciliation first
    try:
        wait_until(again.tick, lambda: len(gate.resumed_from) == 2)
        reconciled = [s.type for s in w.authority.sent if s.extensions]
        assert reconciled == ["work.progress", "work.checkpoint"]
        assert gate.resumed_from[1] is not None
        gate.release.set()
        wait_until(again.tick, lambda: w.state(ALPHA, "wi-1") == S.SUBMITTED)
    finally:
        gate.release.set()
        again.stop()
        assert again.shutdown()
    assert again.errors == []


# --- a result finished offline, kept across the shutdown (kept.py) ------------------------------


class Finisher:
    """A handler that finishes when told to, and counts how often it ran."""

    def __init__(self) -> None:
        self.finish = threading.Event()
        self.calls: list[str] = []

    def __call__(self, ctx: SlotContext, progress: Progress) -> TaskResult:
        self.calls.append(ctx.work_item)
        self.finish.wait(10)
        return result_for(ctx.mission_context, 2)


def _finished_offline_then_shut_down(tmp_path: Path, handler: Finisher) -> tuple[World, str]:
    """wi-1 starts online, finishes while the authority is unreachable, and the worker shuts
    down before it is reachable again; the lease id it finished under."""
    w = World(tmp_path, handlers={"text.summarise": handler})
    w.authority.story(ALPHA, "wi-1")
    w.authority.offer(ALPHA, "wi-1")
    w.until(lambda: len(w.sent("work.progress")) == 1)
    lease_id = w.authority.item(ALPHA, "wi-1")["lease"]["lease_id"]
    w.authority.unreachable = True
    handler.finish.set()
    w.until(lambda: bool(w.worker.store.kept_results()))
    w.worker.stop()
    assert w.worker.shutdown()
    assert w.worker.errors == []
    assert w.sent("work.submit") == []
    assert list(_results_dir(w).iterdir())  # the outputs are on disk, beside the checkpoints
    return w, lease_id


def _results_dir(w: World) -> Path:
    return w.config.state_dir / "slots" / "results"


def _expected_outputs(w: World) -> dict[str, bytes]:
    context = {"contract": w.authority.item(ALPHA, "wi-1")["contract"], "work_item": "wi-1"}
    return {output.name: output.data for output in result_for(context, 2).outputs}


def _run_until(again: Worker, condition: Callable[[], bool]) -> None:
    wait_until(again.tick, condition)
    for _ in range(10):  # and a while longer: nothing more is sent
        again.tick()


@contextmanager
def _restarted(w: World, handler: Finisher) -> Iterator[Worker]:
    """The next run on the same folder; shut down cleanly and without errors afterwards."""
    again = w.restart({"text.summarise": handler})
    try:
        yield again
    finally:
        handler.finish.set()
        again.stop()
        assert again.shutdown()
    assert again.errors == []


def test_a_result_finished_offline_survives_the_shutdown_and_is_submitted_once(
    tmp_path: Path,
) -> None:
    """R11.5-04, R11.5-06, R11.3-04: a handler that finished while the authority was
    unreachable has its result kept on disk when the worker shuts down offline; the next run
    on the same folder reconciles, finds the item still under the same live lease in its
    projection and submits it — once, with the same outputs, under that lease — without
    running the handler again; then nothing of it is left on disk."""
    handler = Finisher()
    w, lease_id = _finished_offline_then_shut_down(tmp_path, handler)

    w.authority.unreachable = False
    with _restarted(w, handler) as again:
        _run_until(again, lambda: w.state(ALPHA, "wi-1") == S.SUBMITTED)
        (submitted,) = w.sent("work.submit")
        assert submitted.body["lease_id"] == lease_id
        outputs = {name: w.authority.uploads[d] for name, d in submitted.body["outputs"].items()}
        assert outputs == _expected_outputs(w)
        assert {e["criterion"] for e in submitted.body["evidence"]} == {"c1", "c2"}
        assert handler.calls == ["wi-1"]
        assert len(w.sent("work.start")) == 1
        assert again.store.kept_results() == []
        assert list(_results_dir(w).iterdir()) == []


def test_a_kept_result_is_submitted_under_a_fresh_lease_after_a_session_replacement(
    tmp_path: Path,
) -> None:
    """R11.3-10, R11.3-04, R11.5-06: the next process opens a new session, which revokes the
    lease the result was finished under and queues the item again for this worker (same
    ownership epoch). The kept result is then submitted under the lease of the next
    ``work.start`` instead of running the handler again."""
    handler = Finisher()
    w, lease_id = _finished_offline_then_shut_down(tmp_path, handler)

    w.authority.unreachable = False
    w.authority.replace_session()
    assert w.state(ALPHA, "wi-1") == S.QUEUED
    with _restarted(w, handler) as again:
        _run_until(again, lambda: w.state(ALPHA, "wi-1") == S.SUBMITTED)
        (submitted,) = w.sent("work.submit")
        second = w.sent("work.start")[1]
        assert second.body["ownership_epoch"] == 1
        assert submitted.body["lease_id"] != lease_id
        outputs = {name: w.authority.uploads[d] for name, d in submitted.body["outputs"].items()}
        assert outputs == _expected_outputs(w)
        assert handler.calls == ["wi-1"]
        assert again.store.kept_results() == []


def test_a_kept_result_whose_item_the_log_took_away_is_discarded_with_one_log_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """R11.5-03, R11.5-06: cancelled while the worker was down, the item is no longer this
    worker's in its projection: the kept result is discarded after reconciliation, said in
    one line with the reason, and nothing is submitted or uploaded."""
    handler = Finisher()
    w, _lease_id = _finished_offline_then_shut_down(tmp_path, handler)

    w.authority.unreachable = False
    w.authority.do(ALPHA, "wi-1", "work.cancel")
    with _restarted(w, handler) as again:
        with caplog.at_level(logging.INFO, logger="missionweave.worker"):
            _run_until(again, lambda: not again.kept.kept)
        assert w.sent("work.submit") == []
        assert w.authority.uploads == {}
        lines = [r.getMessage() for r in caplog.records if "kept result" in r.getMessage()]
        assert lines == [
            "kept result of g-alpha/wi-1 discarded: the log no longer gives the item to this worker"
        ]
        assert again.store.kept_results() == []
        assert list(_results_dir(w).iterdir()) == []


def test_kept_outputs_that_no_longer_match_are_discarded_and_orphans_removed_at_start(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The kept bytes are read back by digest: a file changed on disk discards its result
    (logged) rather than submitting other bytes; files a crash left without their row are
    removed when the next run starts."""
    handler = Finisher()
    w, _lease_id = _finished_offline_then_shut_down(tmp_path, handler)
    (folder,) = _results_dir(w).iterdir()
    (output,) = folder.iterdir()
    output.write_bytes(b"not what the handler produced")
    orphan = _results_dir(w) / "orphan"
    orphan.mkdir()
    (orphan / "bytes").write_bytes(b"left by a crash")

    with caplog.at_level(logging.WARNING, logger="missionweave.worker"):
        again = w.restart({"text.summarise": handler})
    try:
        assert again.kept.kept == {}
        assert again.store.kept_results() == []
        assert list(_results_dir(w).iterdir()) == []
        (line,) = [r.getMessage() for r in caplog.records if "kept result" in r.getMessage()]
        assert line.startswith("kept result of g-alpha/wi-1 discarded: unreadable")
    finally:
        handler.finish.set()
        again.stop()
        assert again.shutdown()
