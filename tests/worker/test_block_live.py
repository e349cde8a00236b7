"""Blocking releases the slot, against the real server (issue 35 §3): the blocked-slot proof.

A worker with ONE slot. Item A's handler checkpoints and calls ``ctx.block``: the runtime
sends ``work.block`` with the required resolution and the checkpoint, and the slot is free at
once (R11.4-04 MUST). Item B, offered meanwhile, runs in that slot and is submitted while A
waits, blocked and still the worker's (R11.4-05). The coordinator's ``work.unblock`` to
``queued`` (``work.unblocked``) puts A back in the worker's queue (R11.4-07, R10.2-10); A
starts again, resumes from its checkpoint, and is submitted."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from missionweave.client import AgentClient
from missionweave.protocol import states as S
from missionweave.worker.config import load_config
from missionweave.worker.handlers import HandlerTable, Progress, TaskResult
from missionweave.worker.runtime import Worker
from missionweave.worker.slots import SlotContext
from tests.live_server import uvicorn_server
from tests.worker.fake_work import result_for
from tests.worker.live_org import GROUPS, LiveOrg, item_of, wait_for

__all__ = ["uvicorn_server"]

pytestmark = pytest.mark.e2e

ALPHA = GROUPS[0]
NEED = "The list of sources to read, from the mission owner."


def test_a_blocked_item_frees_the_only_slot_for_other_work_and_resumes_when_unblocked(
    live_org: LiveOrg, tmp_path: Path
) -> None:
    """The blocked-slot proof (R11.4-04, R11.4-05, R11.4-07, R10.2-09, R10.2-10)."""
    resumed_from: list[Any] = []

    def needs_a_person(ctx: SlotContext, progress: Progress) -> TaskResult:
        resume = ctx.resume_from.state if ctx.resume_from is not None else None
        resumed_from.append(resume)
        if resume is None:
            ctx.checkpoint({"next": 1})
            ctx.block(NEED)  # cites that checkpoint
        return result_for(ctx.mission_context, 2)

    def quick(ctx: SlotContext, progress: Progress) -> TaskResult:
        return result_for(ctx.mission_context, 1)

    config = load_config(live_org.write_config(tmp_path))
    config = replace(config, agent_card=replace(config.agent_card, max_concurrency=1))
    assert config.slots == 1
    handlers = HandlerTable({"text.digest": needs_a_person, "text.summarise": quick})
    client = AgentClient(
        live_org.server.url, live_org.worker.id, live_org.worker.key, agent_card_version="1"
    )
    coordinator = live_org.coordinator_client()
    worker = Worker(config, client, handlers=handlers)
    outcome: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: outcome.setdefault("clean", worker.run()))
    thread.start()
    try:
        a = live_org.offer(coordinator, ALPHA, kind="text.digest")
        wait_for(lambda: item_of(coordinator, ALPHA, a)["state"] == S.BLOCKED)
        wait_for(lambda: worker.pool.free == 1)
        b = live_org.offer(coordinator, ALPHA)
        wait_for(lambda: item_of(coordinator, ALPHA, b)["state"] == S.SUBMITTED)
        blocked = item_of(coordinator, ALPHA, a)
        assert blocked["state"] == S.BLOCKED  # B ran while A was blocked
        assert blocked["owner"] == live_org.worker.principal  # ownership stays (R11.4-05)

        coordinator.submit(ALPHA, "work.unblock", {"work_item": a, "to": S.QUEUED})
        wait_for(lambda: item_of(coordinator, ALPHA, a)["state"] == S.SUBMITTED)
        assert resumed_from == [None, {"next": 1}]

        log = coordinator.get_json(f"/groups/{ALPHA}/events", params={"after": 0, "limit": 1000})
        events = [e for e in log["events"] if e["payload"].get("work_item") in (a, b)]
        seq = {
            (e["type"], e["payload"]["work_item"]): e["sequence"]
            for e in events  # the last of each kind
        }
        (block,) = [e for e in events if e["type"] == "work.blocked"]
        assert block["payload"]["required_resolution"] == NEED
        assert block["payload"]["checkpoint"]["ref"].endswith("/c1")
        # B started in the slot A freed, and finished before A was unblocked
        started_b = seq[("work.started", b)]
        assert block["sequence"] < started_b < seq[("work.submitted", b)]
        assert seq[("work.submitted", b)] < seq[("work.unblocked", a)]
        a_started = [
            e for e in events if e["type"] == "work.started" and e["payload"]["work_item"] == a
        ]
        assert len(a_started) == 2
        first_lease = a_started[0]["payload"]["lease"]["lease_id"]
        renewed = [
            e
            for e in events
            if e["type"] == "lease.renewed"
            and e["payload"].get("lease_id") == first_lease
            and e["sequence"] > block["sequence"]
        ]
        assert renewed == []  # the blocked item's lease is not renewed
    finally:
        worker.stop()
        thread.join(timeout=30)
        coordinator.close()
        client.close()
    assert outcome == {"clean": True}
    assert worker.errors == []
