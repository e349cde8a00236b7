"""Real Celery worker and beat processes against the test database (no eager mode).

The sweeps that expire leases and reassign missed deadlines (R11.3-09, R11.5-01) only happen
if something runs them on a clock: here a real ``celery worker`` and ``celery beat`` do, on
the test run's Redis, with a sweep interval of 0.5 s (``tests/celery_processes.py``).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import UTC, datetime

import pytest

from tests.celery_processes import CeleryProcesses

pytestmark = pytest.mark.e2e

SWEEP_SUCCEEDED = r"Task apps\.work\.tasks\.sweep_due_work\[[^\]]+\] succeeded in [^:]+: \{"
PING_RECEIVED = r"Task apps\.work\.tasks\.ping\[[^\]]+\] received"
BEAT_SENT = re.compile(
    r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}): INFO/[^\]]+\] "
    r"Scheduler: Sending due task sweep-due-work"
)

StartCelery = Callable[..., AbstractContextManager[CeleryProcesses]]


def test_a_real_worker_answers_ping_through_the_broker(
    celery_processes: CeleryProcesses,
) -> None:
    """The worker is another process that consumes the run's own queue and answers."""
    assert celery_processes.ping() == "pong"
    worker_log = celery_processes.workers[0].log()
    assert f".> {celery_processes.queue} " in worker_log  # it consumes this run's queue only
    celery_processes.wait_for(r"Task apps\.work\.tasks\.ping\[[^\]]+\] succeeded", count=2)


def test_beat_puts_a_sweep_on_the_queue_every_interval_and_the_worker_runs_it(
    celery_processes: CeleryProcesses,
) -> None:
    """R11.3-09, R11.5-01: expiry needs a clock. Beat enqueues ``sweep_due_work`` every
    ``MWP_SWEEP_INTERVAL_S`` (0.5 s here) and the worker runs it against the test database,
    returning the sweep's counts."""
    celery_processes.wait_for(SWEEP_SUCCEEDED, count=3, timeout=10)

    log = celery_processes.log()
    sent = [
        datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=UTC)
        for stamp in BEAT_SENT.findall(log)
    ]
    gaps = sorted((b - a).total_seconds() for a, b in itertools.pairwise(sent))
    assert gaps, log
    assert 0.3 <= gaps[len(gaps) // 2] <= 1.5, gaps  # the median gap: periodic, at ~0.5 s
    assert "'examined': 0" in log  # the report of a sweep that found nothing due


def test_a_worker_killed_mid_task_does_not_break_the_next_start(
    start_celery: StartCelery,
) -> None:
    """SIGKILL of the worker, its pool and its beat while a task runs (a crash, the OOM
    killer) leaves nothing that stops the next start on the same queue and beat schedule
    file: it answers pings and sweeps again."""
    with start_celery(forget_queues=False) as first:
        queue, state_dir = first.queue, first.state_dir
        first.wait_for(SWEEP_SUCCEEDED)  # beat has written its schedule file
        first.send_ping(delay_s=20)  # in flight when the processes die
        first.wait_for(PING_RECEIVED, count=2)  # the start-up ping, then this one
        first.kill()
        assert not any(process.running() for process in first.processes)

    with start_celery(queue=queue, state_dir=state_dir) as second:
        assert second.ping() == "pong"
        second.wait_for(SWEEP_SUCCEEDED, count=2, timeout=10)


def test_two_workers_and_two_beats_run_side_by_side(start_celery: StartCelery) -> None:
    """The "two sweeps at once" set-up: two beats each enqueue every sweep, and two workers
    take them from the one queue, so sweeps do run concurrently; each worker answers a ping
    on its own queue."""
    with start_celery(workers=2, beats=2, embedded_beat=False) as processes:
        assert processes.ping(worker=0) == "pong"
        assert processes.ping(worker=1) == "pong"
        for beat in processes.beats:
            processes.wait_for(BEAT_SENT.pattern, count=2, process=beat)
        processes.wait_for(SWEEP_SUCCEEDED, count=4, timeout=10)
