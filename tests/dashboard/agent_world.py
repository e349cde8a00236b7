"""A group where the worker agent w2 is busy, for the Agents screens' tests (issue 37 §3): a
lease held with a progress report, a failed attempt waiting for its retry, a WorkItem failed
for good by the coordinator, one queued, and a Presence report. Real commands through the one
write path (``workflows``)."""

from __future__ import annotations

from typing import Any

from apps.registry.presence import report_presence
from tests.dashboard import workflows as wf
from tests.factories import World, now_text


def progress(world: World, item: str, lease: str, phase: str) -> None:
    """w2's structured progress report (R11.4-01)."""
    body: dict[str, Any] = {
        "work_item": item,
        "lease_id": lease,
        "phase": phase,
        "milestones_completed": ["read the reports"],
        "next_checkpoint": "after the first draft",
        "blockers": [],
        "estimate": {"finish_at": now_text(3600), "confidence": 0.6},
        "evidence_refs": [],
    }
    outcome = wf.submit(world.w2, world.group, "work.progress", body)
    assert outcome.status == 201, outcome.body


def busy_world(world: World) -> dict[str, str]:
    """w2 holds a lease on one WorkItem (with a progress report), failed an attempt of a
    second (a retry waits) and has a third failed for good by the coordinator; one more is
    queued for it."""
    mission = wf.mission(world)
    running = wf.queued(world, mission, contract=wf.example_contract(goal="Draft the summary"))
    lease = wf.start(world, running)
    progress(world, running, lease, "drafting the summary")
    retried = wf.queued(
        world,
        mission,
        contract=wf.example_contract(goal="Check the sources", deadline=now_text(86400)),
    )
    assert wf.fail_as_owner(world, retried, wf.start(world, retried)).status == 201
    ended = wf.queued(world, mission, contract=wf.example_contract(goal="Translate it"))
    outcome = wf.submit(
        world.w1,
        world.group,
        "work.fail",
        {"work_item": ended, "evidence": wf.failure_evidence(world)},
    )
    assert outcome.status == 201, outcome.body
    queued = wf.queued(world, mission)
    report_presence(
        "w2", {"slots": 3, "slots_free": 2, "resources": {"gpu": {"total": 1, "free": 1}}}
    )
    return {
        "running": running,
        "retried": retried,
        "ended": ended,
        "queued": queued,
        "lease": lease,
    }
