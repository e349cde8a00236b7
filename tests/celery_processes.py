"""Real Celery processes for tests: workers and beat, against the test database.

``CELERY_TASK_ALWAYS_EAGER`` would run a task inside the test's own transaction and thread,
which proves nothing about a worker. This starts ``celery -A missionweave worker`` (by
default with an embedded beat, ``-B``; or separate ``celery beat`` processes) as
subprocesses pointed at the pytest-django test database (``MWP_TEST_DB_NAME``, TOOLCHAIN.md
gotcha 5), on the Redis broker of the test run, with:

- a queue of their own (``MWP_CELERY_QUEUE``), unique per start, so parallel xdist workers
  never take each other's tasks; every worker also listens on a queue of its own
  (``<queue>.w<i>``), so a ping reaches the worker it is meant for;
- a sweep interval of 0.5 s (``MWP_SWEEP_INTERVAL_S``) and beat schedule files in a temporary
  directory that a restart can reuse;
- a Redis result backend for this process only, so ``ping`` answers can be awaited (the
  product itself keeps no results).

Start-up waits until every worker has answered a ``ping`` on its own queue and every beat
has logged that it started. Teardown sends SIGTERM (Celery's warm shutdown), then SIGKILL to
the process group, waits until their PostgreSQL sessions are gone (so the test database can
be flushed and dropped), and prints the processes' logs: pytest shows them when a test fails.

Tests that use it must commit what the processes should see: they use ``transactional_db``
(the fixtures request it). Import the fixtures into a ``conftest.py``::

    from tests.celery_processes import celery_processes, start_celery  # noqa: F401
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import redis
from celery import Celery
from celery.result import AsyncResult
from django.conf import settings
from django.db import connection

from tests.live_server import _authority_key_seed, _wait_for_server_sessions_to_end

BASE_DIR = Path(__file__).resolve().parent.parent
STARTUP_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0
SWEEP_INTERVAL_S = 0.5
PING = "apps.work.tasks.ping"
SWEEP = "apps.work.tasks.sweep_due_work"


@dataclass
class CeleryProcess:
    """One ``celery`` process (a worker or a beat) and its log."""

    name: str  # "worker-0", "beat-1"
    popen: subprocess.Popen
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def running(self) -> bool:
        return self.popen.poll() is None


@dataclass
class CeleryProcesses:
    """Handles on a running set of Celery processes, for assertions."""

    queue: str
    state_dir: Path
    client: Celery
    workers: list[CeleryProcess] = field(default_factory=list)
    beats: list[CeleryProcess] = field(default_factory=list)  # empty with an embedded beat

    @property
    def processes(self) -> list[CeleryProcess]:
        return [*self.workers, *self.beats]

    def worker_queue(self, index: int) -> str:
        return f"{self.queue}.w{index}"

    def send_ping(self, *, worker: int | None = None, delay_s: float = 0.0) -> AsyncResult:
        """Queue ``ping`` for one worker (``worker`` index) or any of them (``None``)."""
        queue = self.queue if worker is None else self.worker_queue(worker)
        return self.client.send_task(PING, kwargs={"delay_s": delay_s}, queue=queue)

    def ping(self, *, worker: int | None = None, timeout: float = 10.0) -> str:
        """Ping through the broker and wait for the answer ("pong")."""
        return self.send_ping(worker=worker).get(timeout=timeout)

    def log(self) -> str:
        """Every process's output so far, each under a header (for assertion messages)."""
        return "\n".join(f"===== celery {p.name} =====\n{p.log()}" for p in self.processes)

    def count(self, pattern: str, *, process: CeleryProcess | None = None) -> int:
        """How many times the regular expression ``pattern`` occurs in the logs (of all
        processes, or of ``process``)."""
        logs = [process] if process is not None else self.processes
        return sum(len(re.findall(pattern, each.log())) for each in logs)

    def wait_for(
        self,
        pattern: str,
        *,
        count: int = 1,
        timeout: float = 10.0,
        process: CeleryProcess | None = None,
    ) -> None:
        """Wait until ``pattern`` occurs ``count`` times in the logs (of all processes, or of
        ``process``); fail with every log if it does not, or if a process exits."""
        deadline = time.monotonic() + timeout
        while (seen := self.count(pattern, process=process)) < count:
            dead = [p.name for p in self.processes if not p.running()]
            if dead or time.monotonic() > deadline:
                pytest.fail(
                    f"{pattern!r} seen {seen} times, wanted {count} "
                    f"(exited: {dead or 'none'}):\n{self.log()}"
                )
            time.sleep(0.05)

    def kill(self) -> None:
        """SIGKILL every process and its children at once, as a crash or the OOM killer would."""
        for process in self.processes:
            _signal_group(process.popen, signal.SIGKILL)
        for process in self.processes:
            process.popen.wait(timeout=STOP_TIMEOUT_S)


def _signal_group(popen: subprocess.Popen, signum: int) -> None:
    """Signal the process group a process leads (it was started in a session of its own)."""
    with suppress(ProcessLookupError):
        os.killpg(popen.pid, signum)


def _broker_url() -> str:
    url = settings.CELERY_BROKER_URL
    if not url.startswith(("redis://", "rediss://")):
        raise RuntimeError("the Celery processes use the test run's Redis: set REDIS_URL")
    return url


def _client(broker_url: str, queue: str) -> Celery:
    """A Celery app for the test process that only sends to ``queue`` and reads results.

    Not ``missionweave.celery.app``: that one is configured from settings (no result backend,
    the default queue), and this one must not install the Django fixup in the test process.
    """
    client = Celery("mwp-test-client", set_as_current=False, fixups=[])
    client.conf.update(
        broker_url=broker_url,
        result_backend=broker_url,
        task_default_queue=queue,
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        broker_connection_retry_on_startup=True,
    )
    return client


def _environment(
    *, database_name: str, queue: str, broker_url: str, state_dir: Path, channel_prefix: str
) -> dict[str, str]:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "missionweave.settings",
        "MWP_TEST_DB_NAME": database_name,
        "MWP_CELERY_QUEUE": queue,
        "CELERY_BROKER_URL": broker_url,
        "CELERY_RESULT_BACKEND": broker_url,
        "MWP_SWEEP_INTERVAL_S": str(SWEEP_INTERVAL_S),
        "MWP_CHANNEL_PREFIX": channel_prefix,
        "MWP_VAR_DIR": str(state_dir / "var"),
        "MWP_AUTHORITY_KEY": os.environ.get("MWP_AUTHORITY_KEY") or _authority_key_seed(),
        # libpq names the processes' database sessions, so stopping can wait for them to end.
        "PGAPPNAME": _application_name(queue),
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    return env


def _application_name(queue: str) -> str:
    return f"mwp-celery-{queue}"[:63]


def _worker_command(queue: str, index: int, *, beat_schedule: Path | None) -> list[str]:
    command = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "missionweave",
        "worker",
        "--loglevel",
        "INFO",
        "--concurrency",
        "1",
        "--hostname",
        f"{queue}-w{index}@%h",
        "--queues",
        f"{queue},{queue}.w{index}",
        # Workers of other test runs share the Redis: no syncing or gossip with them.
        "--without-mingle",
        "--without-gossip",
        "--without-heartbeat",
    ]
    if beat_schedule is not None:
        command += ["--beat", "--schedule", str(beat_schedule)]
    return command


def _beat_command(beat_schedule: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "missionweave",
        "beat",
        "--loglevel",
        "INFO",
        "--schedule",
        str(beat_schedule),
    ]


def _start(name: str, command: list[str], env: dict[str, str], state_dir: Path) -> CeleryProcess:
    # A restart reuses the state directory: each start logs to a file of its own.
    log_path = state_dir / f"{name}-{uuid.uuid4().hex[:6]}.log"
    with log_path.open("wb") as log_file:
        popen = subprocess.Popen(
            command,
            cwd=BASE_DIR,
            env=env,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: kill() reaches pool and beat
        )
    return CeleryProcess(name=name, popen=popen, log_path=log_path)


def _wait_until_ready(processes: CeleryProcesses, *, beats: int, embedded_beat: bool) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    pending = {index: processes.send_ping(worker=index) for index in range(len(processes.workers))}
    while pending:
        for index, result in list(pending.items()):
            if result.ready():
                if result.get(timeout=1) != "pong":
                    raise RuntimeError(f"worker {index} answered {result.result!r}")
                del pending[index]
        _fail_if_exited_or_late(processes, deadline, f"workers {sorted(pending)} did not answer")
        time.sleep(0.05)
    for process in processes.workers[:beats] if embedded_beat else processes.beats:
        while "beat: Starting..." not in process.log():
            _fail_if_exited_or_late(processes, deadline, f"{process.name} did not start beat")
            time.sleep(0.05)


def _fail_if_exited_or_late(processes: CeleryProcesses, deadline: float, problem: str) -> None:
    exited = [f"{p.name}: {p.popen.returncode}" for p in processes.processes if not p.running()]
    if exited or time.monotonic() > deadline:
        reason = f"exited ({', '.join(exited)})" if exited else f"{STARTUP_TIMEOUT_S:g} s passed"
        raise RuntimeError(f"Celery did not start: {problem}; {reason}:\n{processes.log()}")


def _stop(processes: CeleryProcesses) -> None:
    """Warm shutdown first (SIGTERM to the main process: the worker finishes its task and
    stops its pool and embedded beat), then SIGKILL for whatever is left of each group."""
    for process in processes.processes:
        if process.running():
            process.popen.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    for process in processes.processes:
        with suppress(subprocess.TimeoutExpired):
            process.popen.wait(timeout=max(0.1, deadline - time.monotonic()))
        _signal_group(process.popen, signal.SIGKILL)
        process.popen.wait(timeout=STOP_TIMEOUT_S)


def _forget_queues(broker_url: str, queue: str) -> None:
    """Remove what the run left in Redis under its queue names: the queues, their bindings,
    and kombu's record of a task that was in flight when the processes were killed (else a
    worker of a later run would put it back on a queue nobody reads, an hour later)."""
    client = redis.Redis.from_url(broker_url)
    try:
        for pattern in (f"{queue}*", f"_kombu.binding*.{queue}*"):
            keys = list(client.scan_iter(match=pattern))
            if keys:
                client.delete(*keys)
        for tag, raw in client.hscan_iter("unacked"):
            try:
                _message, exchange, routing_key = json.loads(raw)
            except ValueError:
                continue
            if str(routing_key).startswith(queue) or str(exchange).startswith(queue):
                client.hdel("unacked", tag)
                client.zrem("unacked_index", tag)
    finally:
        client.close()


@contextmanager
def run_celery(
    *,
    database_name: str,
    queue: str | None = None,
    state_dir: Path | None = None,
    workers: int = 1,
    beats: int = 1,
    embedded_beat: bool = True,
    channel_prefix: str | None = None,
    forget_queues: bool = True,
    extra_env: dict[str, str] | None = None,
) -> Iterator[CeleryProcesses]:
    """Run Celery workers and beats against ``database_name`` until the block exits.

    ``embedded_beat``: the first ``beats`` workers run beat inside (``worker -B``), as the
    demo does; otherwise ``beats`` separate ``celery beat`` processes, as in production. Two
    beats put every sweep on the queue twice (the "two sweeps at once" case). A restart after
    a crash passes the previous ``queue`` and ``state_dir`` (beat schedule files and logs).
    ``extra_env`` adds to (or overrides) the processes' environment, e.g. ``EMAIL_URL``.
    """
    if embedded_beat and beats > workers:
        raise ValueError("an embedded beat needs a worker per beat")
    queue = queue or f"mwp-test-{uuid.uuid4().hex[:12]}"
    state_dir = state_dir or Path(tempfile.mkdtemp(prefix="mwp-celery-"))
    broker_url = _broker_url()
    env = _environment(
        database_name=database_name,
        queue=queue,
        broker_url=broker_url,
        state_dir=state_dir,
        channel_prefix=channel_prefix or queue,
    )
    env.update(extra_env or {})
    processes = CeleryProcesses(queue=queue, state_dir=state_dir, client=_client(broker_url, queue))
    try:
        for index in range(workers):
            with_beat = embedded_beat and index < beats
            schedule = state_dir / f"beat-{index}.schedule" if with_beat else None
            command = _worker_command(queue, index, beat_schedule=schedule)
            processes.workers.append(_start(f"worker-{index}", command, env, state_dir))
        for index in range(0 if embedded_beat else beats):
            command = _beat_command(state_dir / f"beat-{index}.schedule")
            processes.beats.append(_start(f"beat-{index}", command, env, state_dir))
        _wait_until_ready(processes, beats=beats, embedded_beat=embedded_beat)
        yield processes
    finally:
        try:
            _stop(processes)
            _wait_for_server_sessions_to_end(_application_name(queue))
        finally:
            processes.client.close()
            if forget_queues:
                _forget_queues(broker_url, queue)
            # Captured by pytest and shown when the test failed.
            sys.stdout.write(processes.log() + "\n")


@pytest.fixture
def start_celery(
    transactional_db: None, tmp_path: Path, worker_id: str
) -> Callable[..., AbstractContextManager[CeleryProcesses]]:
    """``start_celery(**options)``: a context manager running Celery processes (see
    :func:`run_celery`) against this test's database; a test may start several in turn."""
    database_name = connection.settings_dict["NAME"]
    counter = iter(range(1_000))

    def start(**options: Any) -> AbstractContextManager[CeleryProcesses]:
        run = next(counter)
        # Unique per xdist worker and per start, so no two runs share a queue by accident.
        options.setdefault("queue", f"mwp-test-{worker_id}-{uuid.uuid4().hex[:8]}")
        options.setdefault("state_dir", tmp_path / f"celery-{run}")
        options["state_dir"].mkdir(parents=True, exist_ok=True)
        return run_celery(database_name=database_name, **options)

    return start


@pytest.fixture
def celery_processes(
    start_celery: Callable[..., AbstractContextManager[CeleryProcesses]],
) -> Iterator[CeleryProcesses]:
    """One worker with an embedded beat (sweeps every 0.5 s) for this test."""
    with start_celery() as processes:
        yield processes
