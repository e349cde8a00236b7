"""Deterministic fake work for the runtime's tests: task handlers that count through steps,
checkpoint after each (so preemption and resumption are exercised for real, R11.3-12,
R11.3-13), report milestones (R11.4-03) and produce real output bytes and evidence for every
acceptance criterion of their contract (R13.2-02).

The output depends only on the contract and the WorkItem, never on timing or on how often the
work was preempted: a resumed run produces the same bytes as an uninterrupted one.

- ``summarise`` (kind ``text.summarise``): a few short steps;
- ``digest_slowly`` (kind ``text.digest``): many steps, long enough to be interrupted.
"""

from __future__ import annotations

import json
import time
from typing import Any

from missionweave.worker.handlers import Evidence, Output, Progress, TaskResult
from missionweave.worker.slots import SlotContext

QUICK_STEPS = 3
SLOW_STEPS = 2000
STEP_S = 0.02


def summarise(ctx: SlotContext, progress: Progress) -> TaskResult:
    return _count(ctx, progress, QUICK_STEPS)


def digest_slowly(ctx: SlotContext, progress: Progress) -> TaskResult:
    return _count(ctx, progress, SLOW_STEPS)


def _count(ctx: SlotContext, progress: Progress, steps: int) -> TaskResult:
    resume = ctx.resume_from.state if ctx.resume_from is not None else None
    start = int(resume["next"]) if isinstance(resume, dict) else 0
    progress.phase("counting" if start == 0 else f"resumed at step {start}")
    for step in range(start, steps):
        time.sleep(STEP_S)
        ctx.checkpoint({"next": step + 1})  # the preemption point, when one is asked for
        if (step + 1) % 10 == 0 or step + 1 == steps:
            progress.milestone(f"step {step + 1} of {steps}", next_checkpoint=f"step {step + 2}")
    return result_for(ctx.mission_context, steps)


def render(output: Any, work_item: str, goal: str, steps: int) -> bytes:
    """An output's bytes: a JSON report for ``application/json``, Markdown otherwise."""
    if output["media_type"] == "application/json":
        report = {
            "status": "complete",
            "coverage": 1.0,
            "findings": [f"{work_item}: {steps} steps"],
        }
        return json.dumps(report, sort_keys=True).encode()
    return f"# {goal}\n\n{work_item} counted {steps} steps.\n".encode()


def result_for(context: Any, steps: int) -> TaskResult:
    contract = context["contract"]
    work_item = context["work_item"]
    outputs = tuple(
        Output(output["name"], render(output, work_item, contract["goal"], steps))
        for output in contract["outputs"]
    )
    names = tuple(output.name for output in outputs)
    evidence = tuple(
        Evidence(
            criterion=criterion["id"],
            verdict="pass",
            summary=f"{criterion['id']}: checked by the fake worker",
            outputs=names,
        )
        for criterion in contract["acceptance_criteria"]
    )
    return TaskResult(outputs, evidence)
