"""A task handler in a process of its own (``isolation = "process"``, R11.1-12, R0-08).

``python -m missionweave.worker.isolation_child <fd>``: the worker starts this with one end of
a socket pair as ``fd``, in the slot's directory, with a minimal environment. In order:

1. read the start message: the handler's import path, the item, its mission context, the
   checkpoint to resume from, and the uid/gid to run as (or none);
2. import the handler **while still privileged**: the interpreter and the site-packages may
   live where the slot's user cannot read (``/root``), so everything the handler needs must
   be imported now; a lazy import after step 3 needs them readable by the slot users. The
   handler's module code is therefore trusted code (it runs as the worker's user); what the
   handler *does when called* is what the isolation contains;
3. drop privileges when told to: no supplementary groups, the slot's gid, then its uid, and
   ``PR_SET_NO_NEW_PRIVS``; then ``PR_SET_PDEATHSIG`` (after the drop, since changing
   credentials clears it) so the process dies with the worker, and a check that the worker
   did not die before that;
4. run ``handler(ctx, progress)``. File methods run here, on the current directory, with the
   same checks as in a thread (``_SlotFiles``), so the files belong to the slot's user; every
   other call (tokens, budgets, idempotency keys, checkpoints, blocks, progress) is a request
   to the worker, which answers from the real ``SlotContext`` and ``Progress``. An exception
   the real context raised (``Preempted``, ``Blocked``, ``BudgetExceeded``, ...) is raised
   here again as the same class;
5. send the result (a ``TaskResult``, or any value the wire can carry) or the error's type and
   message, and exit.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import sys
import threading
import traceback
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, NoReturn

from .handlers import HandlerError, ProgressState, TaskResult, import_handler
from .isolation_wire import WireError, rebuild_error, receive, send
from .slot_files import _SlotFiles
from .slot_view import SlotView
from .slots import Checkpoint, ItemRef, SlotClosed

_PR_SET_PDEATHSIG = 1
_PR_SET_NO_NEW_PRIVS = 38


class _Channel:
    """Calls to the worker, one at a time (a handler may call from several threads)."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._lock = threading.Lock()

    def call(self, target: str, method: str, **args: Any) -> Any:
        with self._lock:
            send(self._sock, {"op": "call", "target": target, "method": method, "args": args})
            reply = receive(self._sock, checkpoints=True)
        if reply is None:
            raise SlotClosed("the worker closed the slot")
        if reply.get("op") == "raise":
            raise rebuild_error(reply.get("error") or {})
        return reply.get("value")


class ProcessSlotContext(SlotView):
    """The handler's ``ctx`` in its own process: the ``SlotContext`` API, answered by the
    worker except for files, which are this process's own (its cwd is the slot directory)."""

    def __init__(
        self,
        channel: _Channel,
        *,
        slot_id: str,
        item: ItemRef,
        mission_context: Mapping[str, Any],
        resume_from: Checkpoint | None,
    ) -> None:
        self._channel = channel
        self._init_view(
            slot_id=slot_id,
            item=item,
            mission_context=mission_context,
            resume_from=resume_from,
            files=_SlotFiles(Path(".")),
        )

    def _call(self, method: str, **args: Any) -> Any:
        return self._channel.call("ctx", method, **args)

    # credentials, budgets, side-effect keys: the worker's
    def tokens(self) -> dict[str, str]:
        return dict(self._call("tokens"))

    def spend(self, tool: str, amount: int | float = 1) -> float:
        return self._call("spend", tool=tool, amount=amount)

    def remaining(self, tool: str) -> float:
        return self._call("remaining", tool=tool)

    def idempotency_key(self, effect_name: str) -> str:
        return self._call("idempotency_key", effect_name=effect_name)

    # files: this process's own (``SlotView``), after the worker says the slot is live
    def _live(self) -> None:
        self._call("live")

    # preemption, checkpoints, blocks: the worker's state machines
    def should_yield(self) -> bool:
        return bool(self._call("should_yield"))

    def checkpoint(
        self,
        state: bytes | Mapping[str, Any],
        *,
        artifacts: Sequence[str] = (),
        release: bool = False,
    ) -> Checkpoint:
        return self._call("checkpoint", state=state, artifacts=list(artifacts), release=release)

    def block(
        self,
        required_resolution: str,
        state: bytes | Mapping[str, Any] | None = None,
        *,
        artifacts: Sequence[str] = (),
    ) -> NoReturn:
        self._call(
            "block",
            required_resolution=required_resolution,
            state=state,
            artifacts=list(artifacts),
        )
        raise SlotClosed("the worker did not block the item")  # ``block`` always raises


class ProcessProgress:
    """The handler's ``progress`` in its own process: every call is the worker's."""

    def __init__(self, channel: _Channel) -> None:
        self._channel = channel

    def _call(self, method: str, **args: Any) -> Any:
        return self._channel.call("progress", method, **args)

    @property
    def state(self) -> ProgressState:
        fields = self._call("state")
        for name in ("milestones", "blockers", "evidence_refs"):
            fields[name] = tuple(fields[name])
        return ProgressState(**fields)

    def phase(self, name: str) -> None:
        self._call("phase", name=name)

    def milestone(self, name: str, *, next_checkpoint: str | None = None) -> None:
        self._call("milestone", name=name, next_checkpoint=next_checkpoint)

    def estimate(self, finish_at: datetime, confidence: float) -> None:
        self._call("estimate", finish_at=finish_at, confidence=confidence)

    def blocked(self, *blockers: str) -> None:
        self._call("blocked", blockers=list(blockers))

    def charge(self, **amounts: float) -> None:
        self._call("charge", amounts=amounts)

    def evidence_ref(self, ref: str) -> None:
        self._call("evidence_ref", ref=ref)

    def may_act_externally(self) -> bool:
        return bool(self._call("may_act_externally"))


# --- the process ----------------------------------------------------------------------------


def _prctl(option: int, value: int) -> None:
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({option}) failed")


def _drop_privileges(uid: int, gid: int) -> None:
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    if os.getuid() != uid or os.geteuid() != uid or os.getgid() != gid:
        raise PermissionError("the slot's uid/gid did not take")


def _result(value: Any) -> dict[str, Any]:
    if isinstance(value, TaskResult):
        return {
            "op": "result",
            "task_result": {
                "outputs": [
                    {"name": out.name, "data": out.data, "media_type": out.media_type}
                    for out in value.outputs
                ],
                "evidence": [
                    {
                        "criterion": ev.criterion,
                        "verdict": ev.verdict,
                        "summary": ev.summary,
                        "data": ev.data,
                        "outputs": list(ev.outputs),
                        "method": ev.method,
                    }
                    for ev in value.evidence
                ],
            },
        }
    return {"op": "result", "value": value}


def _error(error: BaseException) -> dict[str, Any]:
    return {"op": "error", "type": type(error).__name__, "message": str(error)[:4000]}


def run(sock: socket.socket) -> None:
    """Steps 1-5 of the module doc."""
    worker_pid = os.getppid()
    start = receive(sock, checkpoints=True)
    if start is None or start.get("op") != "start":
        raise WireError("no start message")
    try:
        handler = import_handler(str(start["handler"]))  # step 2, still privileged
    except HandlerError as error:
        send(sock, _error(error))
        return
    ids = start.get("ids")
    if ids is not None:
        _drop_privileges(int(ids[0]), int(ids[1]))
    _prctl(_PR_SET_NO_NEW_PRIVS, 1)
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != worker_pid:  # the worker died before the death signal was set
        os._exit(1)
    os.umask(0o077)
    channel = _Channel(sock)
    item = start["item"]
    ctx = ProcessSlotContext(
        channel,
        slot_id=str(start["slot_id"]),
        item=ItemRef(
            item["group"],
            item["mission"],
            item["work_item"],
            int(item["ownership_epoch"]),
            item["lease_id"],
        ),
        mission_context=start.get("mission_context") or {},
        resume_from=start.get("resume_from"),
    )
    progress = ProcessProgress(channel)
    try:
        value = handler(ctx, progress)  # type: ignore[arg-type]
    except BaseException as error:  # every way out is reported, then the process ends
        send(sock, _error(error))
        return
    try:
        send(sock, _result(value))
    except WireError as error:
        send(sock, _error(error))


def main(argv: Sequence[str]) -> None:
    sock = socket.socket(fileno=int(argv[1]))
    status = 0
    try:
        run(sock)
    except BaseException:  # the worker fails the item (no result came); say why on stderr
        traceback.print_exc()
        status = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        sock.close()
    # no atexit, no waiting on threads a handler left behind: the slot is over
    os._exit(status)


if __name__ == "__main__":
    main(sys.argv)
