"""Preemption on escalation, live (issue 35 §4; R0-12, R0-13, R11.3-11..13; MWP-WRK-015): the
real server, and a Worker with one slot following the group on the websocket stream.

A long item runs in the only slot; a second item of the same urgency is accepted and waits
behind it. The coordinator escalates the waiting item (``work.reprioritize``). The worker
reorders at once and, the escalated item now outranking the running one, asks the running one
to yield: it reaches its next checkpoint, records it (``work.checkpoint``: back in the group's
queue, still this worker's) and releases the slot; the escalated item runs and is submitted
first; then the preempted item resumes from its checkpoint, not from the start.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from missionweave.client import AgentClient
from missionweave.protocol import states as S
from missionweave.worker.config import load_config
from missionweave.worker.contention import MIN_RUN_S
from missionweave.worker.runtime import Worker
from tests.live_server import uvicorn_server
from tests.worker.live_org import GROUPS, LiveOrg, item_of, wait_for

__all__ = ["uvicorn_server"]

pytestmark = pytest.mark.e2e


def events_of(client: AgentClient, group: str) -> list[dict[str, Any]]:
    return client.get_json(f"/groups/{group}/events", params={"after": 0, "limit": 1000})["events"]


def sequence_of(events: list[dict[str, Any]], type_: str, work_item: str) -> list[int]:
    return [
        e["sequence"]
        for e in events
        if e["type"] == type_ and e["payload"].get("work_item") == work_item
    ]


def test_escalating_a_waiting_item_preempts_the_running_one_at_a_checkpoint(
    live_org: LiveOrg, tmp_path: Path
) -> None:
    """R0-12, R11.3-11 (the queue reorders at once), R0-13 / R11.3-13 (the five steps:
    preemption requested, safe checkpoint, recorded, slot released, back in the group queue),
    R11.3-12 (never interrupted between checkpoints): the escalated item is submitted while the
    preempted one waits, and the preempted one later resumes from its checkpoint."""
    group = GROUPS[0]
    config = load_config(live_org.write_config(tmp_path, slots="1"))
    coordinator = live_org.coordinator_client()
    worker_client = AgentClient(
        live_org.server.url, live_org.worker.id, live_org.worker.key, agent_card_version="1"
    )
    worker = Worker(config, worker_client)
    outcome: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: outcome.setdefault("clean", worker.run()))
    thread.start()
    try:
        slow = live_org.offer(coordinator, group, kind="text.digest")
        wait_for(lambda: item_of(coordinator, group, slow)["state"] == S.ACTIVE)
        started = time.monotonic()
        waiting = live_org.offer(coordinator, group)
        wait_for(lambda: item_of(coordinator, group, waiting)["state"] == S.QUEUED)
        assert item_of(coordinator, group, slow)["state"] == S.ACTIVE  # equal urgency: it waits

        body = {"work_item": waiting, "urgency": "critical", "reason": "the client escalated"}
        escalated = coordinator.submit(group, "work.reprioritize", body)
        assert [e["type"] for e in escalated.body["events"]] == ["work.reprioritized"]

        wait_for(lambda: item_of(coordinator, group, waiting)["state"] == S.SUBMITTED)
        preempted = item_of(coordinator, group, slow)
        assert preempted["state"] in (S.QUEUED, S.ACTIVE)  # not finished: it yielded
        assert preempted["owner"] == live_org.worker.principal
        assert preempted["last_checkpoint"] is not None
        # it may yield only after its minimum run time (no two items evict each other)
        assert time.monotonic() - started >= MIN_RUN_S - 1

        events = events_of(coordinator, group)
        (reprioritized,) = sequence_of(events, "work.reprioritized", waiting)
        checkpoints = sequence_of(events, "work.checkpointed", slow)
        (escalated_start,) = sequence_of(events, "work.started", waiting)
        assert checkpoints
        assert reprioritized < checkpoints[0] < escalated_start

        # the preempted item resumes from its checkpoint, in the freed slot
        def resumed() -> bool:
            reports = [
                e
                for e in events_of(coordinator, group)
                if e["type"] == "work.progress_reported" and e["payload"]["work_item"] == slow
            ]
            return any(str(r["payload"]["phase"]).startswith("resumed at step") for r in reports)

        wait_for(resumed)
        assert len(sequence_of(events_of(coordinator, group), "work.started", slow)) == 2
    finally:
        worker.stop()
        thread.join(timeout=60)
        coordinator.close()
        worker_client.close()
    assert outcome == {"clean": True}
    assert worker.errors == []
