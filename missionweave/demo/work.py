"""The demo workers' task handler: deterministic fake work that produces real artifacts.

``write_report`` (the ``text.summarise`` kind every demo contract asks for), for some
contracts, first asks an essential question and waits for its answer (R10.1-02). It reads
"sources" in a few steps, checkpointing after each — so the scheduler may preempt it there
and it resumes from there (R11.3-12, R11.3-13), on any machine, from the state the server
keeps (R11.5-01) — reports milestones and an estimate (R11.4-03), blocks once in a while for
the coordinator's answer (R11.4-04), charges what each step used to the budgets (R11.5-12),
writes a draft into its slot's own files (R11.1-12) and returns the contract's JSON report
with its claim for each acceptance criterion (R13.2-02). The runtime uploads the report,
publishes its signed manifest and submits.

Deterministic: the number of steps and the report's content depend only on the WorkItem and
its contract, never on timing or on how often the work was interrupted, so a resumed run
produces the same bytes as an uninterrupted one. The pace is ``MWP_DEMO_STEP_S`` seconds a
step (1.5 by default: slow enough to watch on the dashboard; the tests make it short).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from missionweave.worker.handlers import Evidence, Output, Progress, TaskResult
from missionweave.worker.questions import asks
from missionweave.worker.slots import SlotContext

DEFAULT_STEP_S = 1.5
MIN_STEPS, MAX_STEPS = 3, 8
#: what reading one source costs, charged to the item's and the mission's budgets (R11.5-12)
TOKENS_PER_SOURCE = 1500
MONEY_PER_SOURCE = 0.01


#: what a blocked item waits for, in the words the dashboard shows (R11.4-04)
BLOCKER = "Which quarter should the sources cover? The coordinator confirms before reading on."


def asks_the_coordinator(work_item: str) -> bool:
    """One item in five blocks once, after its first source, for the coordinator's answer."""
    return _dice(work_item) % 5 == 0


def hands_over_halfway(work_item: str) -> bool:
    """One item in five releases itself halfway, at a checkpoint whose state the server keeps."""
    return _dice(work_item) % 5 == 1


#: what a worker asks before taking some work on (R10.1-02), and when
QUESTION = "Should the report name the customers involved, or keep them anonymous?"
QUESTION_SHARE = 6


def essential_questions(contract: dict[str, Any]) -> list[str]:
    """One non-urgent contract in six raises an essential question before its offer is
    accepted (R10.1-02, R10.1-03): a mission owner (or, after a while, the coordinator)
    answers it in the WorkItem's conversation. Urgent work goes to every worker at once, and
    each would ask its own: it is never asked about."""
    if contract.get("urgency") in ("high", "critical"):
        return []
    return [QUESTION] if _dice(str(contract.get("goal", ""))) % QUESTION_SHARE == 0 else []


def step_seconds() -> float:
    return float(os.environ.get("MWP_DEMO_STEP_S", DEFAULT_STEP_S))


def _dice(work_item: str) -> int:
    """A stable number from the WorkItem id (not ``hash()``, which differs per process)."""
    return int.from_bytes(hashlib.sha256(work_item.encode()).digest()[:4], "big")


def steps_for(work_item: str) -> int:
    return MIN_STEPS + _dice(work_item) % (MAX_STEPS - MIN_STEPS + 1)


def report_for(work_item: str, goal: str) -> dict[str, Any]:
    """The report: what the contract's schema and checks ask for (``contracts.CHECKS``)."""
    steps = steps_for(work_item)
    return {
        "work_item": work_item,
        "status": "complete",
        "coverage": round(0.85 + (_dice(work_item) % 16) / 100, 2),
        "findings": [f"source {n + 1} of {steps} read for: {goal}" for n in range(steps)],
    }


@asks(essential_questions)
def write_report(ctx: SlotContext, progress: Progress) -> TaskResult:
    contract = ctx.mission_context["contract"]
    work_item = ctx.work_item
    steps = steps_for(work_item)
    pace = step_seconds()
    tools = list((contract.get("allowed") or {}).get("tools") or [])
    resume = ctx.resume_from.state if ctx.resume_from is not None else None
    start = int(resume["next"]) if isinstance(resume, dict) else 0
    progress.phase("reading the sources" if start == 0 else f"resumed at source {start + 1}")
    for step in range(start, steps):
        left = timedelta(seconds=pace * (steps - step))
        progress.estimate(datetime.now(UTC) + left, confidence=round(0.6 + 0.4 * step / steps, 2))
        time.sleep(pace)
        for tool in tools[:1]:
            ctx.spend(tool)  # the slot's own tool budget (R11.1-12)
        progress.charge(tokens=TOKENS_PER_SOURCE, money=MONEY_PER_SOURCE, tool_calls=1)
        ctx.write_bytes(f"notes/source-{step + 1}.txt", f"read source {step + 1}\n".encode())
        progress.milestone(f"source {step + 1} of {steps} read", next_checkpoint="the report")
        # where the scheduler may preempt (R11.3-12); halfway, one item in five hands itself
        # over: the server keeps the state and whoever starts it next, here or on another
        # machine, goes on from here (R11.5-01; the run restarts at once)
        handover = step == steps // 2 and hands_over_halfway(work_item)
        ctx.checkpoint({"next": step + 1}, release=handover)
        if start == 0 and step == 0 and asks_the_coordinator(work_item):
            # R11.4-04: work.block with what must be resolved, at that checkpoint, and the
            # slot released; the coordinator answers after a while and it resumes from here
            ctx.block(BLOCKER)
    progress.phase("writing the report")
    report = report_for(work_item, str(contract["goal"]))
    data = json.dumps(report, sort_keys=True).encode()
    outputs = tuple(Output(output["name"], data) for output in contract["outputs"])
    names = tuple(output.name for output in outputs)
    return TaskResult(
        outputs,
        tuple(
            Evidence(
                criterion=criterion["id"],
                verdict="pass",
                summary=f"{criterion['description']}: the worker's own check",
                data={"coverage": report["coverage"], "sources": steps},
                outputs=names,
            )
            for criterion in contract["acceptance_criteria"]
        ),
    )
