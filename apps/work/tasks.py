"""Celery tasks of the work app: the periodic sweep, and a ping for health checks.

A task is one more caller of the write path and holds no logic of its own: the sweep is
``apps.work.sweeps.sweep_due``, which finds what is due by the database clock and applies it
through ``submit_authority_batch``. Beat enqueues it every ``MWP_SWEEP_INTERVAL_S`` seconds
(the static ``CELERY_BEAT_SCHEDULE`` in settings); it is never scheduled with eta/countdown
for a particular deadline, so a missed, doubled or concurrent run changes nothing that the
next run would not repair.

Database connections: Celery's Django fixup closes them before and after every task that a
worker runs (``celery.fixups.django.DjangoWorkerFixup.on_task_prerun``/``on_task_postrun``),
so the tasks do not call ``close_old_connections`` themselves; inside a test's atomic block
that call would close the test's own connection.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from apps.artifacts import directory
from apps.artifacts.retrieval import Corrupted, open_verified
from apps.artifacts.services import corruption_record
from apps.artifacts.storage import configured_storage
from apps.work import reviews
from apps.work.models import DUE_WORK_SWEEP, SweepRun
from apps.work.sweeps import DEFAULT_LIMIT, sweep_due
from missionweave.celery import app

# A diagnostic ping may wait this long at most (tests use it to have a task in flight).
PING_MAX_DELAY_S = 30.0


@app.task(name="apps.work.tasks.sweep_due_work")
def sweep_due_work(limit: int = DEFAULT_LIMIT) -> dict[str, Any]:
    """Reassign what is due (missed start deadlines, expired leases) and return the counts.

    A finished sweep is stamped (``SweepRun``): ``/readyz`` is not ready when none finished
    within three beat intervals, since then nothing reassigns expired work. Only a sweep that
    finished counts, so a sweep failing on every beat shows as well as a missing beat.
    """
    # The worker logs the returned counts with the task's success line; the sweep itself logs
    # the sweeps that found something due.
    report = sweep_due(limit=limit)
    SweepRun.record(DUE_WORK_SWEEP)
    return dataclasses.asdict(report)


@app.task(name="apps.work.tasks.ping", ignore_result=False)
def ping(delay_s: float = 0.0) -> str:
    """Answer "pong", after ``delay_s`` seconds (capped): proof a worker consumes the queue.

    It keeps its result (every other task ignores results), so a caller with a result backend
    can wait for the answer; without one the answer is only in the worker's log.
    """
    if delay_s > 0:
        time.sleep(min(delay_s, PING_MAX_DELAY_S))
    return "pong"


def _intact(digest: str) -> bool:
    """Whether the stored object still hashes to ``digest`` (streamed, never held in memory)."""
    storage = configured_storage()
    try:
        open_verified(storage, digest, in_memory_bytes=0).close()
    except Corrupted as found:
        corruption_record(
            digest=digest, actual=found.actual, storage=storage, request="submission review"
        )
        return False
    return True


#: a hint nobody picked up within this long is dropped: the beat has done the work by then
HINT_EXPIRES_S = 60.0

#: what a submission's review reads from the artifact store
STORE = reviews.Store(intact=_intact, read=directory.read_verified)


@app.task(name="apps.work.tasks.review_submissions")
def review_submissions(limit: int = reviews.DEFAULT_LIMIT) -> dict[str, Any]:
    """Record the authority's evidence every open submission review still owes (R13.2-03)."""
    return dataclasses.asdict(reviews.review_owing(STORE, limit=limit))


@app.task(name="apps.work.tasks.review_submission")
def review_submission(group_id: str, work_item: str) -> dict[str, Any]:
    """The same for one submission, right after it commits (a hint; the periodic task
    finds it anyway)."""
    return dataclasses.asdict(reviews.review_submission(STORE, group_id, work_item))


def hint_review(group_id: str, event: dict[str, Any]) -> None:
    """After a ``work.submitted`` commits: review it now rather than at the next beat.
    ``retry=False``: an unreachable broker fails fast (the beat will find the item)."""
    review_submission.apply_async(
        (group_id, event["payload"]["work_item"]), retry=False, expires=HINT_EXPIRES_S
    )
