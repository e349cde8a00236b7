"""Each slot's handler in a process, and a user, of its own: ``isolation = "process"``
(issue 35 §8; R11.1-12, R0-08).

In thread mode (the default) slots are threads of the worker, isolated by what their context
holds (``slots.py``): enough against mistakes, not against hostile code. In process mode the
slot's thread runs a ``ProcessHandler`` instead of the handler: it starts
``python -m missionweave.worker.isolation_child`` in the slot's directory with a minimal
environment and one end of a socket pair, and serves the child's calls on the *real*
``SlotContext`` and ``Progress`` until the child sends its result (``isolation_wire``:
length-prefixed JSON, never pickle). The context's state machines (preemption, block) thus
change in the worker exactly as in thread mode, so ``SlotPool._execute`` decides how the slot
ended with the same rules: this callable returns the decoded result, or raises when the
handler raised or its process misbehaved or died.

**Users.** When the worker runs as root, each running child gets a uid and gid of its own,
``slot_uid_base + lane``, where ``lane`` (0..max_concurrency-1) is held by no other running
slot; no ``/etc/passwd`` entry is needed. The slot directory is given to that user (0700);
the pool's root and the state dir stay 0700 root, so the child reaches nothing but its cwd.
When its process ends, whatever it left running under that uid is killed before the lane is
free again, so the next slot of that uid inherits nothing. Without root the child runs as the
worker's user: its memory is its own (no other slot's tokens, no signing key), but the
operating system does not keep it from the worker's files.

What the child never holds: another slot's tokens, files or checkpoints, the worker's signing
key and state (its environment is built from nothing, and file descriptors are closed).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import fields
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .blocking import Blocked
from .handlers import Evidence, Handler, HandlerError, HandlerTable, Output, Progress, TaskResult
from .isolation_wire import WireError, error_document, receive, send
from .preemption import Preempted
from .slots import SlotContext, SlotError

if TYPE_CHECKING:
    from .config import WorkerConfig

log = logging.getLogger("missionweave.worker")

CHILD_MODULE = "missionweave.worker.isolation_child"
THREAD, PROCESS = "thread", "process"
#: how long a child that sent its result may take to exit before it is killed
EXIT_GRACE_S = 5.0
#: uids below this are the system's; a slot uid is never one of them
MIN_SLOT_UID = 1000
_SAFE_PATH = "/usr/local/bin:/usr/bin:/bin"


class IsolatedHandlerError(RuntimeError):
    """The handler in its own process raised (``kind`` is its exception's type name), or its
    process broke the protocol or ended without a result: the item fails like a handler
    that raised in a thread."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}" if message else kind)
        self.kind = kind


class ThreadIsolation:
    """Today's slots: the handler runs in the slot's thread."""

    def wrap(self, handler: Handler, target: str | None) -> Handler:
        return handler


class ProcessIsolation:
    """One process per running slot, under a uid of its own when the worker is root."""

    def __init__(
        self, max_concurrency: int, *, python_path: Sequence[Path] = (), uid_base: int = 200000
    ) -> None:
        self.python_path = tuple(python_path)
        self.uid_base = uid_base
        self.as_root = os.geteuid() == 0
        self._lock = threading.Lock()
        self._free_lanes = list(range(max_concurrency))
        if not self.as_root:
            log.warning(
                'isolation = "process" without root: each handler gets a process of its own '
                "(memory isolation) but runs as the worker's user, so it is not kept from the "
                "worker's files; run the worker as root for a uid per slot"
            )

    def wrap(self, handler: Handler, target: str | None) -> Handler:
        if target is None:
            raise HandlerError("process isolation runs handlers configured by import path")
        return ProcessHandler(target, self)

    @contextlib.contextmanager
    def lane(self) -> Iterator[tuple[int, int] | None]:
        """A (uid, gid) no other running slot holds (as root), else None."""
        with self._lock:
            if not self._free_lanes:
                raise SlotError("no free isolation lane: more running slots than lanes")
            lane = self._free_lanes.pop(0)
        ids = (self.uid_base + lane, self.uid_base + lane) if self.as_root else None
        if ids is not None:
            kill_user(ids[0])  # what a crashed run may have left under this uid
        try:
            yield ids
        finally:
            if ids is not None:
                kill_user(ids[0])  # nothing of this slot outlives it under the next one's uid
            with self._lock:
                self._free_lanes.append(lane)

    def environment(self, directory: Path) -> dict[str, str]:
        """Built from nothing: no secret of the worker's environment reaches a handler."""
        env = {
            "PATH": _SAFE_PATH,
            "LANG": os.environ.get("LANG", "C.UTF-8"),
            "HOME": str(directory),
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        if self.python_path:
            env["PYTHONPATH"] = os.pathsep.join(str(folder) for folder in self.python_path)
        return env


def isolation_for(
    config: WorkerConfig, handlers: HandlerTable
) -> ThreadIsolation | ProcessIsolation:
    """The config's isolation; process mode needs every handler's import path."""
    if config.isolation == THREAD:
        return ThreadIsolation()
    if handlers.kinds_without_target():
        raise HandlerError("process isolation runs handlers configured by import path")
    return ProcessIsolation(
        config.slots, python_path=config.python_path, uid_base=config.slot_uid_base
    )


def kill_user(uid: int) -> None:
    """SIGKILL every process whose real or effective uid is ``uid`` (a slot's, never root's
    or the worker's), found in ``/proc``, until none is left (a fork loop is outrun)."""
    if uid < MIN_SLOT_UID or uid == os.getuid():
        raise ValueError(f"uid {uid} is not a slot's")
    for _ in range(50):
        found = [pid for pid in _pids() if uid in _uids(pid)]
        if not found:
            return
        for pid in found:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)
    log.error("processes of slot uid %d survived 50 kill rounds", uid)


def _pids() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []


def _uids(pid: int) -> set[int]:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("Uid:"):
                    return {int(value) for value in line.split()[1:4]}  # real, effective, saved
    except (OSError, ValueError):
        pass
    return set()


# --- one handler run ------------------------------------------------------------------------

_ENDED = object()  # the child closed the socket without a result


class ProcessHandler:
    """``handler(ctx, progress)`` run by ``target`` in a child process (see the module doc)."""

    def __init__(self, target: str, isolation: ProcessIsolation) -> None:
        self.target = target
        self.isolation = isolation

    def __call__(self, ctx: SlotContext, progress: Progress) -> Any:
        directory: Path = ctx._files._root
        with self.isolation.lane() as ids:
            if ids is not None:
                os.chown(directory, *ids)
                directory.chmod(0o700)
            ours, theirs = socket.socketpair()
            try:
                process = subprocess.Popen(  # noqa: S603 (our interpreter, our module)
                    [sys.executable, "-P", "-s", "-m", CHILD_MODULE, str(theirs.fileno())],
                    pass_fds=(theirs.fileno(),),
                    cwd=directory,
                    env=self.isolation.environment(directory),
                    stdin=subprocess.DEVNULL,
                    close_fds=True,
                    start_new_session=True,
                )
            except BaseException:
                ours.close()
                raise
            finally:
                theirs.close()
            answered = False
            try:
                outcome = _Session(ours, ctx, progress).serve(self._start(ctx, ids))
                answered = True
            except WireError as error:
                raise IsolatedHandlerError("ProtocolError", str(error)) from None
            except OSError:  # the socket broke under a call: the child is gone
                outcome = _ENDED
            finally:
                ours.close()
                status, cpu = _reap(process, EXIT_GRACE_S if answered else 0.0)
                if cpu > 0:  # the child's CPU, which the slot thread's meter cannot see
                    progress.charge(compute=round(cpu, 3))
        if outcome is _ENDED:
            raise IsolatedHandlerError(
                "ProcessEnded", f"the handler's process ended without a result ({status})"
            )
        return outcome

    def _start(self, ctx: SlotContext, ids: tuple[int, int] | None) -> dict[str, Any]:
        item = ctx.item
        return {
            "op": "start",
            "handler": self.target,
            "slot_id": ctx.slot_id,
            "item": {
                "group": item.group,
                "mission": item.mission,
                "work_item": item.work_item,
                "ownership_epoch": item.ownership_epoch,
                "lease_id": item.lease_id,
            },
            "mission_context": ctx.mission_context,
            "resume_from": ctx.resume_from,
            "ids": list(ids) if ids is not None else None,
        }


def _reap(process: subprocess.Popen[bytes], grace_s: float) -> tuple[str, float]:
    """Wait up to ``grace_s`` for the child, kill what is left of its session, reap it;
    how it ended and the CPU seconds it used."""
    pid = process.pid
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        # WNOWAIT: the zombie keeps its pid (and session id) ours until the kill below
        if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
            break
        time.sleep(0.005)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)  # start_new_session: the group is the child's own
    _, raw, usage = os.wait4(pid, 0)
    process.returncode = code = os.waitstatus_to_exitcode(raw)
    how = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
    return how, usage.ru_utime + usage.ru_stime


class _Session:
    """The worker's side of one child's run: its calls answered until it reports."""

    def __init__(self, sock: socket.socket, ctx: SlotContext, progress: Progress) -> None:
        self.sock = sock
        self.ctx = ctx
        self.progress = progress

    def serve(self, start: Mapping[str, Any]) -> Any:
        send(self.sock, start)
        while True:
            message = receive(self.sock, checkpoints=False)
            if message is None:
                return _ENDED
            op = message.get("op")
            if op == "call":
                send(self.sock, self._answer(message))
            elif op == "result":
                return _result(message)
            elif op == "error":
                self._raised(message)
            else:
                raise WireError(f"unknown op {op!r}")

    def _answer(self, message: Mapping[str, Any]) -> dict[str, Any]:
        target, method, args = message.get("target"), message.get("method"), message.get("args")
        calls = _CTX_CALLS if target == "ctx" else _PROGRESS_CALLS if target == "progress" else {}
        call = calls.get(method) if isinstance(method, str) else None
        if call is None or not isinstance(args, dict):
            raise WireError(f"no call {target!r}.{method!r}")
        subject = self.ctx if target == "ctx" else self.progress
        try:
            return {"op": "reply", "value": call(subject, args)}
        except (Preempted, Blocked, Exception) as error:  # the handler's to see, as in a thread
            return {"op": "raise", "error": error_document(error)}

    def _raised(self, message: Mapping[str, Any]) -> None:
        kind, text = message.get("type"), message.get("message")
        if not isinstance(kind, str) or not isinstance(text, str):
            raise WireError("an error names its type and message")
        if kind in {"Preempted", "Blocked"}:
            self.ctx._live()  # the worker's state decides: raises the real one if it agrees
        raise IsolatedHandlerError(kind[:200], text[:4000])


# --- the calls a child may make, each checking what it was sent ------------------------------


def _text(args: Mapping[str, Any], name: str) -> str:
    value = args.get(name)
    if not isinstance(value, str):
        raise ValueError(f"{name} is a string")
    return value


def _optional_text(args: Mapping[str, Any], name: str) -> str | None:
    return None if args.get(name) is None else _text(args, name)


def _texts(args: Mapping[str, Any], name: str) -> list[str]:
    value = args.get(name, [])
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError(f"{name} is a list of strings")
    return value


def _state(args: Mapping[str, Any], *, optional: bool = False) -> Any:
    value = args.get("state")
    if value is None and optional:
        return None
    if not isinstance(value, bytes | dict):
        raise TypeError("checkpoint state is bytes or a JSON object")
    return value


def _finish_at(args: Mapping[str, Any]) -> datetime:
    value = args.get("finish_at")
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise ValueError("finish_at is a datetime with a time zone")
    return value


def _confidence(args: Mapping[str, Any]) -> float:
    value = args.get("confidence")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("confidence is a number")
    return value


def _amounts(args: Mapping[str, Any]) -> dict[str, Any]:
    value = args.get("amounts")
    if not isinstance(value, dict):
        raise ValueError("amounts is an object")
    return value


def _progress_state(progress: Progress) -> dict[str, Any]:
    state = progress.state
    return {field.name: getattr(state, field.name) for field in fields(state)}


_Call = Callable[[Any, Mapping[str, Any]], Any]

_CTX_CALLS: dict[str, _Call] = {
    "live": lambda ctx, a: ctx._live(),
    "tokens": lambda ctx, a: ctx.tokens(),
    "spend": lambda ctx, a: ctx.spend(_text(a, "tool"), a.get("amount", 1)),
    "remaining": lambda ctx, a: ctx.remaining(_text(a, "tool")),
    "idempotency_key": lambda ctx, a: ctx.idempotency_key(_text(a, "effect_name")),
    "should_yield": lambda ctx, a: ctx.should_yield(),
    "checkpoint": lambda ctx, a: ctx.checkpoint(
        _state(a), artifacts=_texts(a, "artifacts"), release=a.get("release") is True
    ),
    "block": lambda ctx, a: ctx.block(
        _text(a, "required_resolution"),
        _state(a, optional=True),
        artifacts=_texts(a, "artifacts"),
    ),
}

_PROGRESS_CALLS: dict[str, _Call] = {
    "state": lambda p, a: _progress_state(p),
    "phase": lambda p, a: p.phase(_text(a, "name")),
    "milestone": lambda p, a: p.milestone(
        _text(a, "name"), next_checkpoint=_optional_text(a, "next_checkpoint")
    ),
    "estimate": lambda p, a: p.estimate(_finish_at(a), _confidence(a)),
    "blocked": lambda p, a: p.blocked(*_texts(a, "blockers")),
    "charge": lambda p, a: p.charge(**_amounts(a)),
    "evidence_ref": lambda p, a: p.evidence_ref(_text(a, "ref")),
    "may_act_externally": lambda p, a: p.may_act_externally(),
}


# --- the result -----------------------------------------------------------------------------


def _result(message: Mapping[str, Any]) -> Any:
    """What the handler returned: a ``TaskResult`` checked field by field, or a plain value."""
    found = message.get("task_result")
    if found is None:
        return message.get("value")
    if not isinstance(found, dict):
        raise WireError("task_result is an object")
    outputs, evidence = found.get("outputs"), found.get("evidence")
    if not isinstance(outputs, list) or not isinstance(evidence, list):
        raise WireError("task_result has lists of outputs and evidence")
    return TaskResult(tuple(_output(o) for o in outputs), tuple(_evidence(e) for e in evidence))


def _output(raw: object) -> Output:
    if (
        not isinstance(raw, dict)
        or not isinstance(raw.get("name"), str)
        or not isinstance(raw.get("data"), bytes)
        or not isinstance(raw.get("media_type"), str | None)
    ):
        raise WireError("an output is {name, data bytes, media_type}")
    return Output(raw["name"], raw["data"], raw["media_type"])


def _evidence(raw: object) -> Evidence:
    if not isinstance(raw, dict) or not all(
        isinstance(raw.get(name), str) for name in ("criterion", "verdict", "summary")
    ):
        raise WireError("evidence names its criterion, verdict and summary")
    data, outputs, method = raw.get("data", {}), raw.get("outputs", []), raw.get("method")
    if not isinstance(data, dict) or not isinstance(method, str | None):
        raise WireError("evidence data is an object, its method a string")
    if not isinstance(outputs, list) or not all(isinstance(name, str) for name in outputs):
        raise WireError("evidence outputs are output names")
    return Evidence(raw["criterion"], raw["verdict"], raw["summary"], data, tuple(outputs), method)
