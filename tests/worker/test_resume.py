"""Resume anywhere, without a server (issue 35 §2; R11.5-01, R0-13, R11.3-13, R10.2-08):
``resume.py``'s rules and checks, a handler's own ``ctx.checkpoint(state, release=True)`` in a
slot, and the runtime against the in-process authority — a checkpoint's state stored as an
artifact cited by ``work.checkpoint``, and restored, verified, on a machine that never saw it.

The two-process proof (SIGKILL, the sweep, another agent) is ``test_resume_live.py``."""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from missionweave.client.errors import ApiError, ArtifactMismatch
from missionweave.protocol import states as S
from missionweave.protocol.canonical import digest, is_digest, sha256_digest
from missionweave.protocol.work.execution import validate_checkpoint
from missionweave.worker.handlers import HandlerTable, Progress, TaskResult
from missionweave.worker.link import Offline
from missionweave.worker.preemption import FIVE_STEPS
from missionweave.worker.resume import (
    Unverified,
    plan,
    restore,
    stored,
    stored_document,
    verified,
)
from missionweave.worker.runtime import Worker
from missionweave.worker.slots import (
    Assignment,
    Checkpoint,
    CheckpointStore,
    ItemRef,
    SlotContext,
    SlotPool,
)
from tests.worker.fake_authority import wait_until
from tests.worker.fake_work import result_for
from tests.worker.runtime_world import World

ALPHA = "g-alpha"
CONTRACT = {"goal": "count", "outputs": []}
ITEM = ItemRef(ALPHA, "m-1", "wi-1", 1, "lease-1")
STEPS = 4


def checkpoint_of(state: bytes | dict[str, Any], *, epoch: int = 1, ref: str = "wi-1/e1/c2"):
    """A checkpoint as ``CheckpointStore.write`` makes it."""
    found = sha256_digest(state) if isinstance(state, bytes) else digest(state)
    return Checkpoint(ref, 2, ALPHA, "wi-1", epoch, state, found)


def recorded_of(checkpoint: Checkpoint, state_artifact: str | None) -> dict[str, Any]:
    """The checkpoint as the log records it (``last_checkpoint``, ``resume_from``)."""
    wire = checkpoint.wire()
    if state_artifact is not None:
        wire["state_artifact"] = state_artifact
    return {**wire, "sequence": 7, "at": "2026-12-03T09:00:00Z"}


def row_of(recorded: dict[str, Any] | None, *, epoch: int = 2, retry_at: str | None = None):
    """The owned row of the worker's projection (``queues.WorkRow``), as far as it matters."""
    return {
        "group": ALPHA,
        "work_item": "wi-1",
        "ownership_epoch": epoch,
        "retry_at": retry_at,
        "resume_from": recorded,
    }


# --- where an item resumes from (the rules, in order) ----------------------------------------


def test_the_rules_decide_where_an_item_resumes_from() -> None:
    """R11.5-01, R11.4-08: a retry starts afresh; this owner's own checkpoint of the current
    ownership comes first; else the authority's, when it stored the state; else zero."""
    mine = checkpoint_of({"next": 3}, epoch=2)
    earlier = checkpoint_of({"next": 1}, epoch=1)
    recorded = recorded_of(earlier, sha256_digest(b"stored"))
    assert plan(mine, row_of(recorded, retry_at="2026-12-03T09:01:00Z")).source == "none"
    assert plan(mine, row_of(recorded)).source == "local"
    assert plan(earlier, row_of(recorded)).source == "authority"
    assert plan(None, row_of(recorded)).source == "authority"
    assert plan(earlier, row_of(None)).source == "none"
    assert plan(None, row_of(recorded_of(earlier, None))).source == "none"


# --- storing ---------------------------------------------------------------------------------


def test_the_stored_state_is_cited_by_the_checkpoint_and_holds_what_a_restore_checks() -> None:
    """Issue 35 §2, wire.md §9: the checkpoint object names the uploaded document in
    ``state_artifact`` and stays a valid ``work.checkpoint`` body; the document restores to
    the same checkpoint, bytes and JSON states alike."""
    uploads: dict[str, bytes] = {}

    def upload(data: bytes) -> str:
        uploads[sha256_digest(data)] = data
        return sha256_digest(data)

    for state in ({"next": 2, "notes": ["a", "b"]}, b"\x00raw bytes"):
        checkpoint = checkpoint_of(state)
        uploads.clear()
        wire = stored(checkpoint, CONTRACT, upload)
        validate_checkpoint({"work_item": "wi-1", "lease_id": "lease-1", "checkpoint": wire})
        assert uploads == {wire["state_artifact"]: stored_document(checkpoint, CONTRACT)}
        recorded = recorded_of(checkpoint, wire["state_artifact"])
        restored = verified(uploads[wire["state_artifact"]], recorded, row_of(None), CONTRACT)
        assert (restored.ref, restored.state, restored.state_digest) == (
            checkpoint.ref,
            state,
            checkpoint.state_digest,
        )


@pytest.mark.parametrize(
    "failure", [Offline.__new__(Offline), ApiError(413, "TOO_LARGE", "too large")]
)
def test_a_state_that_cannot_be_stored_leaves_the_checkpoint_without_it(
    failure: Exception,
) -> None:
    """R11.5-04: offline (or refused) the checkpoint is still recorded, without
    ``state_artifact``: its state stays resumable on this machine only."""

    def upload(data: bytes) -> str:
        raise failure

    wire = stored(checkpoint_of({"next": 1}), CONTRACT, upload)
    assert "state_artifact" not in wire
    assert wire == checkpoint_of({"next": 1}).wire()


# --- verifying -------------------------------------------------------------------------------


def _document(checkpoint: Checkpoint, **changes: Any) -> bytes:
    document = json.loads(stored_document(checkpoint, CONTRACT))
    return json.dumps({**document, **changes}).encode()


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"state": {"next": 99}}, "hashes to"),
        ({"state_digest": digest({"next": 99}), "state": {"next": 99}}, "state_digest"),
        ({"work_item": "wi-other"}, "work_item"),
        ({"group": "g-other"}, "group"),
        ({"ref": "wi-1/e1/c1"}, "ref"),
        ({"artifacts": [sha256_digest(b"x")]}, "artifacts"),
        ({"contract": digest({"goal": "another"})}, "another contract"),
        ({"kind": "pickle"}, "kind"),
        ({"state": {"next": 2**60}}, "canonical JSON"),
        ({"format": "something-else"}, "document"),
    ],
)
def test_a_document_that_is_not_the_recorded_checkpoint_is_not_verified(
    changes: dict[str, Any], says: str
) -> None:
    """R11.5-01, R13.1-05: a restore uses only the state the log recorded — its item, ref,
    artifacts and ``state_digest``, a state that hashes to it, under the same contract."""
    checkpoint = checkpoint_of({"next": 2})
    recorded = recorded_of(checkpoint, sha256_digest(b"whatever"))
    with pytest.raises(Unverified, match=says):
        verified(_document(checkpoint, **changes), recorded, row_of(None), CONTRACT)
    with pytest.raises(Unverified):
        verified(b"not json", recorded, row_of(None), CONTRACT)


# --- restoring -------------------------------------------------------------------------------


def _stores(tmp_path: Path) -> CheckpointStore:
    return CheckpointStore(tmp_path / "checkpoints")


def test_a_restore_fetches_verifies_and_forgets_an_earlier_ownerships_checkpoints(
    tmp_path: Path,
) -> None:
    """R11.5-01: this worker's checkpoint of an earlier ownership epoch is not where the item
    resumes: the authority's last one is, downloaded and verified; the stale one is gone."""
    store = _stores(tmp_path)
    store.write(ITEM, {"next": 1}, ())  # epoch 1, before the item went elsewhere
    theirs = checkpoint_of({"next": 3}, ref="wi-1/e2/c4")
    data = stored_document(theirs, CONTRACT)
    recorded = recorded_of(theirs, sha256_digest(data))
    asked: list[str] = []

    def download(wanted: str) -> bytes:
        asked.append(wanted)
        return data

    restored = restore(row_of(recorded, epoch=3), store, CONTRACT, download)
    assert restored is not None
    assert (restored.ref, restored.state) == ("wi-1/e2/c4", {"next": 3})
    assert asked == [recorded["state_artifact"]]
    assert store.latest() is None


def test_a_restore_prefers_this_owners_checkpoint_of_the_same_ownership(tmp_path: Path) -> None:
    """R11.3-13(5): a checkpoint this owner wrote in this ownership epoch is at least as
    recent as any it sent: used as it is, nothing downloaded."""
    store = _stores(tmp_path)
    mine = store.write(replace(ITEM, ownership_epoch=2), {"next": 5}, ())
    recorded = recorded_of(checkpoint_of({"next": 3}), sha256_digest(b"older"))

    def download(wanted: str) -> bytes:
        raise AssertionError("nothing is downloaded")

    assert restore(row_of(recorded, epoch=2), store, CONTRACT, download) == mine


@pytest.mark.parametrize(
    "failure",
    [
        ApiError(404, "NOT_FOUND", "no artifact"),
        ApiError(409, "ARTIFACT_CORRUPTED", "corrupted"),
        ArtifactMismatch(sha256_digest(b"a"), sha256_digest(b"b"), 1),
        None,  # bytes that download but do not verify
    ],
)
def test_a_state_that_fails_verification_is_not_used_the_item_starts_from_zero(
    tmp_path: Path, failure: Exception | None, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 35 §2, the decision: a state that cannot be fetched from the store or does not
    verify is never handed to the handler; the item starts from zero, with a WARNING naming
    the checkpoint and why."""
    checkpoint = checkpoint_of({"next": 3})
    recorded = recorded_of(checkpoint, sha256_digest(b"stored"))

    def download(wanted: str) -> bytes:
        if failure is not None:
            raise failure
        return _document(checkpoint, state={"next": 4})

    with caplog.at_level(logging.WARNING, logger="missionweave.worker"):
        assert restore(row_of(recorded), _stores(tmp_path), CONTRACT, download) is None
    (warning,) = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert "starts from zero" in warning.getMessage()
    assert checkpoint.ref in warning.getMessage()


def test_an_unreachable_authority_starts_nothing(tmp_path: Path) -> None:
    """R11.5-05: without the authority the download is not a verification failure: the
    restore raises ``Offline`` and the item is not started now."""
    recorded = recorded_of(checkpoint_of({"next": 3}), sha256_digest(b"stored"))

    def download(wanted: str) -> bytes:
        raise Offline.__new__(Offline)

    with pytest.raises(Offline):
        restore(row_of(recorded), _stores(tmp_path), CONTRACT, download)


# --- a handler's own release (R0-13, R10.2-08) -----------------------------------------------


def test_a_handler_releasing_at_a_checkpoint_takes_the_five_steps_of_a_preemption(
    tmp_path: Path,
) -> None:
    """R0-13, R11.3-13, R10.2-08: ``ctx.checkpoint(state, release=True)`` stops the handler
    at that checkpoint, which is handed on (to become ``work.checkpoint``) before the slot is
    released and the item requeued; and a runtime's restored checkpoint is the next slot's
    ``resume_from``."""
    recorded: list[Checkpoint] = []
    after: list[str] = []

    def handler(ctx: SlotContext) -> Any:
        ctx.checkpoint({"next": 1}, release=True)
        after.append("went on")  # never: the release stops it here

    with SlotPool(1, tmp_path / "pool") as pool:
        work = Assignment(ALPHA, "m-1", "wi-1", 1, "lease-1")
        slot = pool.start(
            work,
            handler,
            on_checkpoint=lambda item, checkpoint: recorded.append(checkpoint),
            requeue=lambda item, ref: None,
        )
        outcome = slot.join(timeout=10)
        assert outcome is not None
        assert outcome.kind == "preempted"
        assert slot.preemption.steps == FIVE_STEPS
        assert [c.state for c in recorded] == [{"next": 1}]
        assert after == []
        restored = checkpoint_of({"next": 7}, ref="wi-1/e1/c9")
        resumed = pool.acquire(replace(work, resume_from=restored))
        assert resumed.context.resume_from == restored
        pool.release(resumed)


# --- the runtime: another machine, the same agent (R11.3-10, R11.5-01) ------------------------


class Stepper:
    """``STEPS`` steps, each checkpointed to the authority but the last; ``hold_at`` stops in
    the middle of that step until ``abandon`` (a machine that is about to be lost)."""

    def __init__(self, hold_at: int | None = None) -> None:
        self.hold_at = hold_at
        self.starts: list[int] = []
        self.steps: list[int] = []
        self.holding = threading.Event()
        self.abandon = threading.Event()

    def __call__(self, ctx: SlotContext, progress: Progress) -> TaskResult:
        start = int(ctx.resume_from.state["next"]) if ctx.resume_from is not None else 0
        self.starts.append(start)
        for step in range(start, STEPS):
            if step == self.hold_at:
                self.holding.set()
                self.abandon.wait()
                return result_for(ctx.mission_context, STEPS)
            self.steps.append(step)
            ctx.checkpoint({"next": step + 1}, release=step + 1 < STEPS)
        return result_for(ctx.mission_context, STEPS)


def _machine(w: World, folder: Path, handler: Stepper) -> Worker:
    return Worker(
        replace(w.config, state_dir=folder),
        w.authority,
        handlers=HandlerTable({"*": handler}),
        clock=w.clock,
        follow="poll",
        probe_every_s=0.0,
    )


def _lose(worker: Worker, stepper: Stepper) -> None:
    """The lost machine's leftovers, once the test is done with it."""
    stepper.abandon.set()
    for slot in worker.pool.active():
        slot.join(timeout=10)
    worker.pool.close()
    worker.store.close()
    worker.buffer.close()


@pytest.mark.parametrize("corrupted", [False, True])
def test_the_same_agent_on_a_machine_that_never_saw_the_checkpoint_resumes_from_it(
    tmp_path: Path, corrupted: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """R11.5-01, R10.2-08, R11.3-10 (issue 35 §2): machine 1 checkpoints each step to the
    authority — every ``work.checkpoint`` names its stored state — and is lost in the middle
    of a step. The agent comes back on machine 2 (a new session, an empty state folder): it
    resumes from the authority's last checkpoint and each step runs once. A stored state that
    does not verify (``corrupted``) is not used: machine 2 starts from zero, with a WARNING."""
    (tmp_path / "world").mkdir()
    w = World(tmp_path / "world")
    first, second = Stepper(hold_at=2), Stepper()
    machine_1 = _machine(w, tmp_path / "machine-1", first)
    machine_1.start()
    w.authority.story(ALPHA, "wi-1")
    w.authority.offer(ALPHA, "wi-1")
    wait_until(machine_1.tick, first.holding.is_set)
    sent = [s.body["checkpoint"] for s in w.sent("work.checkpoint")]
    assert [c["state_digest"] for c in sent] == [digest({"next": 1}), digest({"next": 2})]
    assert all(is_digest(c["state_artifact"]) for c in sent)
    last = w.authority.item(ALPHA, "wi-1")["last_checkpoint"]
    assert last["state_artifact"] == sent[-1]["state_artifact"]
    if corrupted:
        w.authority.uploads[last["state_artifact"]] = b'{"state":{"next":9}}'

    w.authority.replace_session()  # machine 1 is gone; the agent starts again elsewhere
    machine_2 = _machine(w, tmp_path / "machine-2", second)
    machine_2.start()
    try:
        with caplog.at_level(logging.INFO, logger="missionweave.worker"):
            wait_until(machine_2.tick, lambda: w.state(ALPHA, "wi-1") == S.SUBMITTED)
    finally:
        machine_2.stop()
        assert machine_2.shutdown()
        _lose(machine_1, first)
    assert first.steps == [0, 1]
    assert machine_2.errors == []
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    if corrupted:
        assert (second.starts, second.steps) == ([0, 1, 2, 3], [0, 1, 2, 3])
        assert any("starts from zero" in text and last["ref"] in text for text in warnings)
    else:
        assert (second.starts, second.steps) == ([2, 3], [2, 3])
        assert warnings == []
