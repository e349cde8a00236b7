"""The handler of the multi-process resume proof (``tests/worker/test_resume_live.py``,
issue 35 §2; R11.5-01, R0-13, R11.3-13, R10.2-08).

``count_steps`` runs ``STEPS`` steps. Each step run leaves one file in the journal folder
(``MWP_RESUME_JOURNAL``), named after the step and the process that ran it, so the test can
count how often every step ran and where. After each step but the last the handler checkpoints
*to the authority* (``ctx.checkpoint(state, release=True)``): the state is stored as an artifact and
cited by ``work.checkpoint``, which releases the lease; the item returns to the queue and the
handler is called again from that checkpoint. A process started with ``MWP_RESUME_HOLD`` set
stops in the middle of step ``HOLD_AT`` (before the step has done anything) and waits there to
be killed.
"""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path

from missionweave.worker.handlers import Progress, TaskResult
from missionweave.worker.slots import SlotContext
from tests.worker.fake_work import result_for

STEPS = 5
#: the step worker A is in the middle of when it is killed
HOLD_AT = 2
JOURNAL_ENV = "MWP_RESUME_JOURNAL"
HOLD_ENV = "MWP_RESUME_HOLD"


def count_steps(ctx: SlotContext, progress: Progress) -> TaskResult:
    journal = Path(os.environ[JOURNAL_ENV])
    resume = ctx.resume_from.state if ctx.resume_from is not None else None
    start = int(resume["next"]) if isinstance(resume, dict) else 0
    _record(journal, f"start-{start}")
    progress.phase("counting" if start == 0 else f"resumed at step {start}")
    for step in range(start, STEPS):
        if os.environ.get(HOLD_ENV) and step == HOLD_AT:
            _record(journal, "holding")
            while True:  # in the middle of a step, with its lease: SIGKILL lands here
                time.sleep(0.05)
        _record(journal, f"step-{step}")
        # to the authority after every step but the last, whose result follows at once
        ctx.checkpoint({"next": step + 1}, release=step + 1 < STEPS)
    return result_for(ctx.mission_context, STEPS)


def _record(journal: Path, what: str) -> None:
    """One new file per call: ``<what>.<pid>.<random>`` (never overwritten, never merged)."""
    (journal / f"{what}.{os.getpid()}.{secrets.token_hex(4)}").write_bytes(b"")


def journal_of(journal: Path) -> list[tuple[str, int]]:
    """Every record as (what, process id), in no particular order."""
    records = []
    for path in journal.iterdir():
        what, pid, _token = path.name.rsplit(".", 2)
        records.append((what, int(pid)))
    return records
