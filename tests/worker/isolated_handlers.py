"""Handlers the process-isolation tests run in a child process (``isolation = "process"``):
importable by path (``tests.worker.isolated_handlers:<name>``), so the child can find them.

Everything a handler needs is imported here, at module level: the child imports the module
while still privileged and drops to its slot's uid before calling (``isolation_child``).
"""

from __future__ import annotations

import os
import signal
import socket
import time
from datetime import UTC, datetime
from typing import Any

from missionweave.worker.handlers import Evidence, Output, TaskResult
from missionweave.worker.slots import BudgetExceeded, IsolationError


def full_use(ctx: Any, progress: Any) -> TaskResult:
    """Every context and progress call a handler makes, its answers in the result."""
    tokens = ctx.tokens()
    key = ctx.idempotency_key("send-mail")
    left = ctx.spend("search", 2)
    try:
        ctx.spend("search", 5)
        refused = "no"
    except BudgetExceeded as error:
        refused = f"BudgetExceeded: {error}"
    ctx.write_bytes("notes/a.txt", b"written in the slot")
    files = ctx.list_files()
    read = ctx.read_bytes("notes/a.txt")
    try:
        ctx.read_bytes("../escape")
        escaped = "yes"
    except IsolationError:
        escaped = "refused"
    ctx.delete_file("notes/a.txt")
    checkpoint = ctx.checkpoint({"step": 1})
    progress.phase("working")
    progress.milestone("step-1", next_checkpoint="step-2")
    progress.estimate(datetime(2030, 1, 1, tzinfo=UTC), 0.7)
    progress.evidence_ref("ref-1")
    progress.charge(tokens=12, tool_calls=1)
    state = progress.state
    summary = {
        "tokens": tokens,
        "key": key,
        "left": left,
        "remaining": ctx.remaining("search"),
        "refused": refused,
        "files": files,
        "read": read.decode(),
        "escaped": escaped,
        "checkpoint": [checkpoint.ref, checkpoint.sequence, dict(checkpoint.state)],
        "phase": state.phase,
        "milestones": list(state.milestones),
        "may_act": progress.may_act_externally(),
        "should_yield": ctx.should_yield(),
        "context": dict(ctx.mission_context),
        "item": [ctx.group, ctx.work_item, ctx.ownership_epoch],
    }
    return TaskResult(
        outputs=(Output("report", repr(sorted(summary.items())).encode(), "text/plain"),),
        evidence=(Evidence("c1", "pass", "all calls answered", {"key": key}, ("report",), "test"),),
    )


def summary(result: TaskResult) -> str:
    return result.outputs[0].data.decode()


def whoami(ctx: Any, progress: Any) -> dict[str, Any]:
    return {"uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups()}


def keep_secret(ctx: Any, progress: Any) -> dict[str, Any]:
    """Slot A: writes a secret in its slot, then waits until the test has probed it."""
    ctx.write_bytes("secret.txt", ctx.tokens()["tools"].encode())
    _wait_for_yield(ctx)
    return {"uid": os.getuid()}


def _attempt(path: str) -> str:
    try:
        with open(path, "rb") as handle:
            handle.read()
    except PermissionError:
        return "PermissionError"
    except OSError as error:
        return type(error).__name__
    return "read"


def _wait_for_yield(ctx: Any) -> None:
    deadline = time.monotonic() + 20
    while not ctx.should_yield() and time.monotonic() < deadline:
        time.sleep(0.01)


def pry(ctx: Any, progress: Any) -> dict[str, Any]:
    """Slot B: tries to read what is not its own (paths named in its mission context), then
    holds its own tokens and says its pid, so the test can search its memory, until asked to
    yield."""
    targets = ctx.mission_context["targets"]
    attempts = {name: _attempt(path) for name, path in targets.items()}
    tokens = ctx.tokens()
    progress.phase(f"pid {os.getpid()}")
    _wait_for_yield(ctx)
    return {"uid": os.getuid(), "attempts": attempts, "tokens": tokens}


def environment(ctx: Any, progress: Any) -> dict[str, Any]:
    return {
        "env": sorted(os.environ),
        "fds": sorted(int(fd) for fd in os.listdir("/proc/self/fd")),
        "cwd_files": ctx.list_files(),
    }


def checkpoint_until_yield(ctx: Any, progress: Any) -> str:
    """Checkpoints in a loop until a preemption or a requested block stops it there."""
    step = ctx.resume_from.state["step"] if ctx.resume_from else 0
    for _ in range(2000):
        step += 1
        ctx.checkpoint({"step": step})
        time.sleep(0.005)
    return "not stopped"


def block_now(ctx: Any, progress: Any) -> str:
    ctx.block("a person must approve the spend", {"at": "approval"})
    return "not reached"


def swallow_block(ctx: Any, progress: Any) -> str:
    """A hostile handler that catches ``Blocked`` and claims it finished: the worker's state
    decides, not the child's claim."""
    try:
        ctx.block("stop here", {"at": 1})
    except BaseException:
        return "pretended to finish"
    return "not reached"


def kill_itself(ctx: Any, progress: Any) -> str:
    ctx.write_bytes("x", b"before dying")
    os.kill(os.getpid(), signal.SIGKILL)
    return "not reached"


def send_garbage(ctx: Any, progress: Any) -> str:
    """Writes bytes that are not a message onto the worker's socket, then waits."""
    channel = ctx._channel._sock
    assert isinstance(channel, socket.socket)
    channel.sendall(b"\x00\x00\x00\x05hello")
    time.sleep(5)
    return "not reached"


def send_huge(ctx: Any, progress: Any) -> str:
    """Announces a message far over the limit."""
    ctx._channel._sock.sendall(b"\xff\xff\xff\xff")
    time.sleep(5)
    return "not reached"


def raise_error(ctx: Any, progress: Any) -> str:
    raise KeyError("no such thing")


def fork_and_linger(ctx: Any, progress: Any) -> dict[str, Any]:
    """Leaves a grandchild running after it returns: it must not survive the slot."""
    pid = os.fork()
    if pid == 0:
        os.setsid()  # out of the child's session: only the uid sweep finds it
        time.sleep(60)
        os._exit(0)
    return {"lingering": pid}
