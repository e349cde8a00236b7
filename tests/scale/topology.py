"""The deployment of the scale-out proof, and the ways it is hurt: ``kill -9`` of one server
process or one Celery worker, and a group's head row held so a sweep stops half-way.

The servers are the live-server harness's (``tests/live_server.py``, which owns the server
command line: set ``MWP_SCALE_SERVER`` to ``daphne`` or ``uvicorn`` to choose; unset, the
harness's default) and the Celery processes are ``tests/celery_processes.py``'s. What this
adds is what a crash needs: the process id of each server (the harness keeps its ``Popen`` to
itself, so each server is started with a marker in its environment and found by it among
this process's children), and SIGKILL without the warm shutdown the harnesses' teardowns do.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, ExitStack, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.db import connection
from psycopg import sql

from apps.ledger.models import GroupLog
from tests.celery_processes import (
    CeleryProcess,
    CeleryProcesses,
    _application_name,
    _beat_command,
    _broker_url,
    _environment,
    _start,
)
from tests.live_server import LiveServer, run_live_server

#: which ASGI server to run; unset, whatever ``tests/live_server.py`` starts by default
SERVER = os.environ.get("MWP_SCALE_SERVER") or None
#: the environment variable that tells the servers apart among this process's children
_MARKER = "MWP_SCALE_SERVER_ID"

SWEEP_RECEIVED = re.compile(r"Task apps\.work\.tasks\.sweep_due_work\[([\w-]+)\] received")
SWEEP_FINISHED = re.compile(
    r"Task apps\.work\.tasks\.sweep_due_work\[([\w-]+)\] (?:succeeded|failed|raised)"
)


@dataclass(frozen=True)
class ServerProcess:
    """One running ASGI server and the id of its process."""

    live: LiveServer
    pid: int

    @property
    def url(self) -> str:
        return self.live.url

    def kill(self) -> None:
        """SIGKILL, as a crash or the OOM killer would: no response is finished, no
        connection closed cleanly. The harness reaps the process when its block exits."""
        os.kill(self.pid, signal.SIGKILL)


def _parent_of(pid: str) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after it
    return int(stat.rsplit(")", 1)[1].split()[1])


def _child_with_marker(marker: str) -> int:
    """The id of this process's child whose environment holds ``marker``."""
    wanted = f"{_MARKER}={marker}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or _parent_of(entry.name) != os.getpid():
            continue
        with suppress(OSError):
            if wanted in (entry / "environ").read_bytes().split(b"\0"):
                return int(entry.name)
    raise RuntimeError(f"no child process has {_MARKER}={marker}")


def enter_together(stack: ExitStack, managers: Sequence[AbstractContextManager[Any]]) -> list[Any]:
    """Enter ``managers`` at once, each in a thread of its own, and leave them with ``stack``.

    Starting a process and waiting until it answers is mostly waiting; the servers and the
    workers wait side by side instead of in turn. Every manager that entered is on ``stack``
    before the first failure is raised, so nothing started is left running.
    """
    with ThreadPoolExecutor(max_workers=len(managers)) as pool:
        futures = [pool.submit(manager.__enter__) for manager in managers]
    for manager, future in zip(managers, futures, strict=True):
        if future.exception() is None:
            stack.push(manager)
    return [future.result() for future in futures]


@contextmanager
def run_servers(
    count: int, *, database_name: str, channel_prefix: str
) -> Iterator[list[ServerProcess]]:
    """``count`` server processes on ``database_name``, sharing one channel-layer prefix as
    the processes of one deployment do (a hint published by one reaches the others)."""
    options = {"server": SERVER} if SERVER else {}
    markers = [f"{channel_prefix}-{index}-{uuid.uuid4().hex[:6]}" for index in range(count)]
    with ExitStack() as stack:
        lives = enter_together(
            stack,
            [
                run_live_server(
                    database_name=database_name,
                    channel_prefix=channel_prefix,
                    extra_env={_MARKER: marker},
                    **options,
                )
                for marker in markers
            ],
        )
        yield [
            ServerProcess(live, _child_with_marker(marker))
            for live, marker in zip(lives, markers, strict=True)
        ]


def start_beat(
    processes: CeleryProcesses,
    *,
    database_name: str,
    channel_prefix: str,
    schedule_file: int | None = None,
) -> CeleryProcess:
    """Start one ``celery beat`` for ``processes``' workers, once they are running.

    ``schedule_file``: the index of an earlier beat whose schedule file this one takes over,
    as a supervisor restarting a killed beat runs the same command line; by default a file
    of its own.

    The workers start without a beat: their readiness check is a ``ping`` on each worker's
    own queue, and a worker that took a sweep first would sit in it, behind a held head lock,
    with its ping unanswered. The beat joins ``processes``, whose teardown stops it with the
    workers and whose ``log()`` includes it. Not awaited: whoever waits for its sweeps next
    fails with the logs if it exits.
    """
    env = _environment(
        database_name=database_name,
        queue=processes.queue,
        broker_url=_broker_url(),
        state_dir=processes.state_dir,
        channel_prefix=channel_prefix,
    )
    index = len(processes.beats)
    file_index = index if schedule_file is None else schedule_file
    command = _beat_command(processes.state_dir / f"beat-{file_index}.schedule")
    beat = _start(f"beat-{index}", command, env, processes.state_dir)
    processes.beats.append(beat)
    return beat


def kill_celery(process: CeleryProcess) -> None:
    """SIGKILL a Celery process's whole process group (a worker's main process and pool
    child, or a beat) at once."""
    with suppress(ProcessLookupError):
        os.killpg(process.popen.pid, signal.SIGKILL)
    with suppress(subprocess.TimeoutExpired):
        process.popen.wait(timeout=10)


def sweeps_in_flight(process: CeleryProcess) -> set[str]:
    """The sweep tasks ``process`` took from the queue and has not finished (by its log)."""
    log = process.log()
    return set(SWEEP_RECEIVED.findall(log)) - set(SWEEP_FINISHED.findall(log))


def sweeps_finished(process: CeleryProcess) -> int:
    return len(SWEEP_FINISHED.findall(process.log()))


def lock_waiters(processes: CeleryProcesses) -> int:
    """How many of the Celery processes' database sessions wait for a row lock."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE application_name = %s AND wait_event_type = 'Lock'",
            [_application_name(processes.queue)],
        )
        return cursor.fetchone()[0]


@contextmanager
def holding_head_lock(group_id: str) -> Iterator[Callable[[], None]]:
    """Hold the head row of ``group_id`` locked (``SELECT … FOR UPDATE``, as the write path
    locks it) from a connection of its own, until the block exits or the yielded ``release``
    is called.

    A sweep walks the due groups one transaction each; it reaches this group and waits for
    the lock, with the groups before it committed and this one's transaction open. That is
    what "mid-sweep" means, made certain instead of timed: however fast a sweep runs, the
    worker is killed inside it.
    """
    params = connection.settings_dict
    holder = psycopg.connect(
        host=params["HOST"] or None,
        port=params["PORT"] or None,
        user=params["USER"] or None,
        password=params["PASSWORD"] or None,
        dbname=params["NAME"],
        application_name="mwp-scale-head-lock",
    )
    statement = sql.SQL("SELECT 1 FROM {table} WHERE {key} = %s FOR UPDATE").format(
        table=sql.Identifier(GroupLog._meta.db_table),
        key=sql.Identifier(GroupLog._meta.pk.column),
    )
    holder.execute(statement, [group_id])  # opens the transaction that holds the lock

    def release() -> None:
        if not holder.closed:
            holder.rollback()
            holder.close()

    try:
        yield release
    finally:
        release()


def wait_until(
    condition: Callable[[], bool],
    what: str,
    *,
    alive: list[CeleryProcess],
    log: Callable[[], str],
    timeout: float,
) -> None:
    """Wait until ``condition()``; fail with ``log()`` if it does not hold within ``timeout``
    or one of the processes that should be ``alive`` exits."""
    deadline = time.monotonic() + timeout
    while not condition():
        dead = [process.name for process in alive if not process.running()]
        if dead or time.monotonic() > deadline:
            pytest.fail(f"{what} (exited: {dead or 'none'}):\n{log()}")
        time.sleep(0.05)
