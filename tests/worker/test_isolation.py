"""``isolation = "process"``: each slot's handler in a process, and a user, of its own (issue 35
§8; R11.1-12, R0-08, R0-13, R11.4-04).

The handlers run here live in ``tests/worker/isolated_handlers.py`` (the child imports them by
path). The hostile-handler proofs need root, which CI has: a uid per slot is only given by
root, and without it process mode is documented as memory isolation only.
"""

from __future__ import annotations

import os
import re
import secrets
import socket
import stat
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from missionweave.protocol import states as S
from missionweave.worker.config import ConfigError, parse_config
from missionweave.worker.handlers import HandlerError, HandlerTable, Progress, TaskResult
from missionweave.worker.isolation import (
    IsolatedHandlerError,
    ProcessIsolation,
    ThreadIsolation,
    isolation_for,
    kill_user,
)
from missionweave.worker.isolation_wire import (
    MAX_MESSAGE,
    WireError,
    decode,
    encode,
    error_document,
    rebuild_error,
    receive,
    send,
)
from missionweave.worker.preemption import FIVE_STEPS, Preempted, request_preemption
from missionweave.worker.runtime import Worker
from missionweave.worker.slots import (
    Assignment,
    BudgetExceeded,
    Checkpoint,
    Outcome,
    Slot,
    SlotPool,
)
from tests.worker import isolated_handlers
from tests.worker.fake_authority import Clock, FakeAuthority, wait_until
from tests.worker.runtime_world import START, config_for

REPO = Path(__file__).resolve().parents[2]
HANDLERS = "tests.worker.isolated_handlers"
ALPHA = "g-alpha"
AS_ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not AS_ROOT, reason="a uid per slot is given only by root")


def assignment(work_item: str = "wi-a", **context: Any) -> Assignment:
    return Assignment(
        group="grp-1",
        mission="m-1",
        work_item=work_item,
        ownership_epoch=1,
        lease_id=f"lease-{work_item}",
        context={"brief": f"context of {work_item}", **context},
        tokens={"tools": f"token-of-{work_item}-{secrets.token_hex(16)}"},
        budgets={"search": 3},
    )


class Runner:
    """A pool with the runtime's callbacks recorded, running handlers in process mode."""

    def __init__(self, root: Path, slots: int = 2) -> None:
        self.pool = SlotPool(slots, root / "pool")
        self.isolation = ProcessIsolation(slots, python_path=[REPO])
        self.calls: list[tuple[str, str]] = []
        self.progress: dict[str, Progress] = {}

    def start(self, name: str, item: Assignment) -> Slot:
        progress = self.progress[item.work_item] = Progress()
        handler = self.isolation.wrap(getattr(isolated_handlers, name), f"{HANDLERS}:{name}")
        return self.pool.start(
            item,
            lambda ctx: handler(ctx, progress),
            on_checkpoint=lambda item, cp: self.calls.append(("on_checkpoint", cp.ref)),
            requeue=lambda item, ref: self.calls.append(("requeue", ref)),
            on_block=lambda item, cp, why: self.calls.append(("on_block", why)),
        )

    def run(self, name: str, item: Assignment) -> Outcome:
        outcome = self.start(name, item).join(60)
        assert outcome is not None, f"{name} did not end"
        return outcome


@pytest.fixture
def runner(tmp_path: Path):
    runner = Runner(tmp_path)
    yield runner
    runner.pool.close()


def _until(check: Any, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


# --- the same handler, the same result ------------------------------------------------------


def test_a_handler_in_a_process_gives_what_it_gives_in_a_thread(tmp_path: Path) -> None:
    """R11.1-12: every context call (tokens, budgets, idempotency keys, files, checkpoints,
    progress and charges) answers through the process boundary as it does in a thread."""
    item = assignment("wi-same")
    with SlotPool(1, tmp_path / "thread") as pool:
        progress = Progress()
        threaded = pool.start(
            item,
            lambda ctx: isolated_handlers.full_use(ctx, progress),
            on_checkpoint=lambda *_: None,
            requeue=lambda *_: None,
        ).join(30)
        thread_charges = progress._take_charges()
    runner = Runner(tmp_path / "process", slots=1)
    try:
        isolated = runner.run("full_use", item)
        process_charges = runner.progress["wi-same"]._take_charges()
        process_progress = runner.progress["wi-same"].state
    finally:
        runner.pool.close()
    assert threaded is not None
    assert threaded.kind == isolated.kind == "finished"
    assert isinstance(isolated.result, TaskResult)
    assert isolated.result == threaded.result  # outputs and evidence, byte for byte
    report = isolated_handlers.summary(isolated.result)
    assert item.tokens["tools"] in report
    assert "'escaped', 'refused'" in report
    assert "'read', 'written in the slot'" in report
    assert "BudgetExceeded" in report
    # what the handler stated reached the worker's own Progress; the child's CPU is charged
    assert process_progress.phase == "working"
    assert process_progress.milestones == ("step-1",)
    assert process_progress.finish_at == datetime(2030, 1, 1, tzinfo=UTC)
    assert process_progress.evidence_refs == ("ref-1",)
    assert {k: v for k, v in process_charges.items() if k != "compute"} == thread_charges
    assert process_charges["compute"] > 0


def test_the_child_gets_a_minimal_environment_and_no_inherited_files(
    runner: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No secret of the worker's environment, and no descriptor but its socket and stdio."""
    monkeypatch.setenv("MWP_TEST_SECRET", "do-not-leak")
    outcome = runner.run("environment", assignment("wi-env"))
    assert outcome.kind == "finished", outcome.error
    assert set(outcome.result["env"]) <= {
        "PATH",
        "LANG",
        "HOME",
        "PYTHONPATH",
        "PYTHONDONTWRITEBYTECODE",
        "LC_CTYPE",
    }
    fds = [fd for fd in outcome.result["fds"] if fd > 2]
    assert len(fds) <= 2  # the socket, and the descriptor listing /proc/self/fd itself
    assert outcome.result["cwd_files"] == []


# --- a hostile handler ----------------------------------------------------------------------


def _memory_holds(pid: int, needle: bytes) -> bool:
    """Whether process ``pid``'s readable memory holds ``needle`` (read as root)."""
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as memory:
        for line in maps:
            fields = line.split()
            if "r" not in fields[1] or (len(fields) > 5 and fields[5] == "[vsyscall]"):
                continue
            start, end = (int(part, 16) for part in fields[0].split("-"))
            try:
                memory.seek(start)
                if needle in memory.read(end - start):
                    return True
            except (OSError, OverflowError, ValueError):
                continue
    return False


@needs_root
def test_a_hostile_handler_cannot_reach_another_slot_or_the_worker(
    runner: Runner, tmp_path: Path
) -> None:
    """R11.1-12, R0-08: two slots at once, each under its own non-zero uid. B, told A's
    paths, the pool's root and the worker's key file, cannot open any of them, and its
    process memory holds its own token and never A's."""
    key_file = tmp_path / "worker.key"
    key_file.write_bytes(b"the worker's signing key")
    key_file.chmod(0o600)
    item_a = assignment("wi-a")
    slot_a = runner.start("keep_secret", item_a)
    secret = slot_a.directory / "secret.txt"
    _until(secret.exists)
    assert stat.S_IMODE(slot_a.directory.stat().st_mode) == 0o700
    runner.pool.checkpoints("grp-1", "wi-a").write(slot_a.item, {"a": 1}, ())
    checkpoint_dir = runner.pool.root / "checkpoints"
    item_b = assignment(
        "wi-b",
        targets={
            "a_secret": str(secret),
            "a_directory_file": str(slot_a.directory / "anything"),
            "pool_lock": str(runner.pool.root / ".lock"),
            "a_checkpoint": str(next(checkpoint_dir.rglob("*.json"))),
            "key_file": str(key_file),
        },
    )
    slot_b = runner.start("pry", item_b)
    progress_b = runner.progress["wi-b"]
    _until(lambda: progress_b.state.phase.startswith("pid "))
    pid_b = int(progress_b.state.phase.split()[1])
    own, other = item_b.tokens["tools"].encode(), item_a.tokens["tools"].encode()
    assert _memory_holds(pid_b, own)  # the search works: B's own token is found
    assert not _memory_holds(pid_b, other)
    request_preemption(slot_b)
    request_preemption(slot_a)
    outcome_b, outcome_a = slot_b.join(30), slot_a.join(30)
    assert outcome_a is not None
    assert outcome_b is not None
    assert outcome_a.kind == outcome_b.kind == "finished", (outcome_a, outcome_b)
    assert outcome_b.result["attempts"] == dict.fromkeys(
        item_b.context["targets"], "PermissionError"
    )
    assert outcome_b.result["tokens"] == dict(item_b.tokens)
    uid_a, uid_b = outcome_a.result["uid"], outcome_b.result["uid"]
    assert uid_a != uid_b
    assert uid_a >= 200000
    assert uid_b >= 200000


@needs_root
def test_each_child_runs_under_its_lane_uid_with_no_groups(runner: Runner) -> None:
    outcome = runner.run("whoami", assignment("wi-who"))
    assert outcome.kind == "finished", outcome.error
    assert outcome.result["uid"] == outcome.result["gid"]
    assert 200000 <= outcome.result["uid"] < 200002
    assert outcome.result["groups"] == []


@needs_root
def test_nothing_a_child_leaves_running_outlives_its_slot(runner: Runner) -> None:
    """A grandchild that left the child's session is killed with the slot's uid, so the next
    slot of that uid inherits nothing."""
    outcome = runner.run("fork_and_linger", assignment("wi-fork"))
    assert outcome.kind == "finished", outcome.error
    pid = outcome.result["lingering"]

    def gone() -> bool:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        return state in {"Z", "X"}

    _until(gone, timeout=5)


def test_the_uid_sweep_refuses_system_and_own_uids() -> None:
    """The sweep kills by uid: never one below the slot range, never the worker's own."""
    with pytest.raises(ValueError, match="not a slot's"):
        kill_user(999)
    with pytest.raises(ValueError, match="not a slot's"):
        kill_user(os.getuid())


# --- preemption and blocks through the proxy (R0-13, R11.4-04) -------------------------------


def test_a_preemption_ends_the_slot_as_in_a_thread(runner: Runner) -> None:
    """R0-13: the five steps, with the checkpoint the child stopped at."""
    slot = runner.start("checkpoint_until_yield", assignment("wi-pre"))
    _until(lambda: runner.pool.checkpoints("grp-1", "wi-pre").latest() is not None)
    assert request_preemption(slot)
    outcome = slot.join(30)
    assert outcome is not None
    assert outcome.kind == "preempted", outcome
    assert outcome.checkpoint == runner.pool.checkpoints("grp-1", "wi-pre").latest()
    assert slot.preemption.steps == FIVE_STEPS
    assert runner.calls == [
        ("on_checkpoint", outcome.checkpoint.ref),
        ("requeue", outcome.checkpoint.ref),
    ]
    assert runner.pool.free == 2
    # resumed in a new slot, from that checkpoint, and stopped by a requested block this time
    again = runner.start("checkpoint_until_yield", assignment("wi-pre"))
    _until(lambda: runner.pool.checkpoints("grp-1", "wi-pre").latest() != outcome.checkpoint)
    again.request_block("the budget is used up")
    blocked = again.join(30)
    assert blocked is not None
    assert blocked.kind == "blocked", blocked
    assert blocked.resolution == "the budget is used up"
    assert blocked.checkpoint.state["step"] > outcome.checkpoint.state["step"]


def test_ctx_block_ends_the_slot_blocked_with_its_checkpoint(runner: Runner) -> None:
    """R11.4-04: checkpoint, ``work.block`` while the slot is held, then release."""
    outcome = runner.run("block_now", assignment("wi-block"))
    assert outcome.kind == "blocked", outcome
    assert outcome.resolution == "a person must approve the spend"
    assert outcome.checkpoint.state == {"at": "approval"}
    assert runner.calls == [("on_block", "a person must approve the spend")]


def test_a_child_that_swallows_its_block_is_still_blocked(runner: Runner) -> None:
    """The worker's state decides, not what the child claims."""
    outcome = runner.run("swallow_block", assignment("wi-swallow"))
    assert outcome.kind == "blocked"
    assert outcome.checkpoint.state == {"at": 1}


# --- a child that dies or misbehaves fails its item, and only its item -----------------------


@pytest.mark.parametrize(
    ("name", "kind", "message"),
    [
        ("kill_itself", "ProcessEnded", "killed by signal 9"),
        ("send_garbage", "ProtocolError", "not JSON"),
        ("send_huge", "ProtocolError", "over the"),
        ("raise_error", "KeyError", "no such thing"),
    ],
)
def test_a_broken_child_fails_the_item_and_the_pool_goes_on(
    runner: Runner, name: str, kind: str, message: str
) -> None:
    outcome = runner.run(name, assignment(f"wi-{name.replace('_', '-')}"))
    assert outcome.kind == "failed"
    assert isinstance(outcome.error, IsolatedHandlerError)
    assert outcome.error.kind == kind
    assert message in str(outcome.error)
    assert runner.pool.free == 2
    assert runner.pool.active() == []
    after = runner.run("whoami", assignment("wi-after"))
    assert after.kind == "finished", after.error


def test_concurrent_children_each_hold_a_lane(runner: Runner) -> None:
    """Two slots at once in two processes; a third waits for a free slot, never a lane."""
    slots = [runner.start("keep_secret", assignment(f"wi-{n}")) for n in "xy"]
    for slot in slots:
        _until((slot.directory / "secret.txt").exists)
    assert runner.isolation._free_lanes == []
    for slot in slots:
        request_preemption(slot)
    outcomes = [slot.join(30) for slot in slots]
    assert [o.kind for o in outcomes if o is not None] == ["finished", "finished"]
    assert sorted(runner.isolation._free_lanes) == [0, 1]


# --- the wire: JSON only, checked, bounded --------------------------------------------------


CHECKPOINT = Checkpoint("wi/e1/c1", 1, "g", "wi", 1, b"\x00state", "sha256:" + "0" * 64)


def test_values_round_trip_through_the_codec() -> None:
    value = {
        "bytes": b"\x00\xff",
        "when": datetime(2030, 1, 2, 3, 4, tzinfo=UTC),
        "nested": [1, 2.5, None, True, "x", (3, 4)],
        "$bytes": "a key that looks like a tag",
        "tagged": {"$bytes": "not base64 at all!"},
    }
    assert decode(encode(value), checkpoints=False) == {
        **value,
        "nested": [1, 2.5, None, True, "x", [3, 4]],
    }
    assert decode(encode({"cp": CHECKPOINT}), checkpoints=True) == {"cp": CHECKPOINT}


def test_the_codec_refuses_what_it_does_not_write() -> None:
    with pytest.raises(WireError, match="worker's to send"):
        decode(encode(CHECKPOINT), checkpoints=False)  # a child never sends a checkpoint
    with pytest.raises(WireError, match="base64"):
        decode({"$bytes": "***"}, checkpoints=False)
    with pytest.raises(WireError, match="cannot cross"):
        encode({"x": object()})
    with pytest.raises(WireError, match="finite"):
        encode(float("nan"))
    with pytest.raises(WireError, match="deeply"):
        decode(_nested(200), checkpoints=False)


def _nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


def test_framing_bounds_and_checks_every_message() -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        send(ours, {"op": "call", "data": b"abc"})
        assert receive(theirs, checkpoints=False) == {"op": "call", "data": b"abc"}
        ours.sendall((MAX_MESSAGE + 1).to_bytes(4, "big"))
        with pytest.raises(WireError, match="over the"):
            receive(theirs, checkpoints=False)
    ours, theirs = socket.socketpair()
    with ours, theirs:
        ours.sendall(b"\x00\x00\x00\x02[]")
        with pytest.raises(WireError, match="JSON object"):
            receive(theirs, checkpoints=False)
        ours.sendall(b"\x00\x00\x00\x09{")
        ours.close()
        with pytest.raises(WireError, match="middle of a message"):
            receive(theirs, checkpoints=False)
    ours, theirs = socket.socketpair()
    with ours, theirs:
        ours.close()
        assert receive(theirs, checkpoints=False) is None  # a clean end between messages


def test_errors_cross_as_the_same_class() -> None:
    """What the real context raised is raised again in the child as the same class."""
    again = rebuild_error(
        decode(encode(error_document(BudgetExceeded("no more"))), checkpoints=True)
    )
    assert type(again) is BudgetExceeded
    assert str(again) == "no more"
    preempted = rebuild_error(
        decode(encode(error_document(Preempted(CHECKPOINT))), checkpoints=True)
    )
    assert isinstance(preempted, Preempted)
    assert preempted.checkpoint == CHECKPOINT
    unknown = rebuild_error(error_document(ZeroDivisionError("x")))
    assert type(unknown) is RuntimeError


# --- the worker, end to end ---------------------------------------------------------------


def test_the_worker_runs_its_items_in_processes_end_to_end(tmp_path: Path) -> None:
    """The runtime's hook: with ``isolation = "process"`` the configured handler (by import
    path) runs in a child, and its result is uploaded and submitted as in thread mode."""
    clock = Clock(START)
    authority = FakeAuthority(clock, (ALPHA,))
    config = config_for(tmp_path, isolation="process", python_path=(REPO,))
    worker = Worker(config, authority, clock=clock, follow="poll", probe_every_s=0.0)
    try:
        assert isinstance(worker.isolation, ProcessIsolation)
        authority.story(ALPHA, "wi-1")
        authority.offer(ALPHA, "wi-1")
        wait_until(
            worker.tick,
            lambda: authority.item(ALPHA, "wi-1")["state"] == S.SUBMITTED,
            timeout_s=60,
        )
        (submitted,) = authority.of_type("work.submit")
        artifacts = submitted.body["artifacts"]
        assert [authority.uploads[d].startswith(b"# Summarise") for d in artifacts] == [True]
        assert {e["criterion"] for e in submitted.body["evidence"]} == {"c1", "c2"}
        assert authority.of_type("work.usage")  # the child's CPU among what was charged
    finally:
        worker.stop()
        assert worker.shutdown()
    assert worker.errors == []


# --- configuration and wiring ---------------------------------------------------------------


def _document(**extra: Any) -> dict[str, Any]:
    return {
        "agent_id": "w2",
        "key_file": "w2.key",
        "authority_url": "http://127.0.0.1:8000",
        "state_dir": "state",
        "agent_card": {"version": "1", "max_concurrency": 2},
        "groups": {"g-1": {}},
        "handlers": {"*": f"{HANDLERS}:whoami"},
        **extra,
    }


def test_isolation_is_configured_and_bad_values_are_refused(tmp_path: Path) -> None:
    assert parse_config(_document(), base_dir=tmp_path).isolation == "thread"
    config = parse_config(_document(isolation="process", slot_uid_base=300000), base_dir=tmp_path)
    assert (config.isolation, config.slot_uid_base) == ("process", 300000)
    assert parse_config(_document(), base_dir=tmp_path).slot_uid_base == 200000
    with pytest.raises(ConfigError, match=re.escape("isolation: one of thread, process")):
        parse_config(_document(isolation="vm"), base_dir=tmp_path)
    with pytest.raises(ConfigError, match="isolation: must be a string"):
        parse_config(_document(isolation=1), base_dir=tmp_path)
    with pytest.raises(ConfigError, match="slot_uid_base: must be an integer of at least 1000"):
        parse_config(_document(slot_uid_base=0), base_dir=tmp_path)
    with pytest.raises(ConfigError, match="slot_uid_base: its slots' uids"):
        parse_config(_document(slot_uid_base=2**31 - 1), base_dir=tmp_path)


def test_process_isolation_needs_handlers_by_import_path(tmp_path: Path) -> None:
    config = parse_config(_document(isolation="process"), base_dir=tmp_path)
    table = HandlerTable.from_paths(config.handlers)
    assert table.target_for({"capabilities": [{"id": "any.kind"}]}) == f"{HANDLERS}:whoami"
    assert isinstance(isolation_for(config, table), ProcessIsolation)
    with pytest.raises(HandlerError, match="import path"):
        isolation_for(config, HandlerTable({"*": isolated_handlers.whoami}))
    thread = parse_config(_document(), base_dir=tmp_path)
    assert isinstance(isolation_for(thread, table), ThreadIsolation)
    assert isolation_for(thread, table).wrap(isolated_handlers.whoami, None) is (
        isolated_handlers.whoami
    )


def test_items_are_isolated_from_each_other_in_threads_of_the_parent(runner: Runner) -> None:
    """The slot threads serving children run side by side: a slow child does not hold up
    another slot's child."""
    slow = runner.start("keep_secret", assignment("wi-slow"))
    _until((slow.directory / "secret.txt").exists)
    fast = runner.start("whoami", assignment("wi-fast")).join(30)
    assert fast is not None
    assert fast.kind == "finished"
    assert slow.outcome is None  # still running
    request_preemption(slow)
    assert slow.join(30) is not None
