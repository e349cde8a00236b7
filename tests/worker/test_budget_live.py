"""Budgets never leak, against the real server (issue 35 §1): the budget-exhaustion proof —
a worker whose handler keeps spending stops when the authority refuses a charge
(``BUDGET_EXCEEDED``, R11.5-13): the item is blocked for its budget, never submitted, and the
mission's recorded usage never passes its limit — and usage charged while the authority is
unreachable, reconciled by the real write path with ``resource_usage_recorded`` (R11.5-08,
R11.5-12)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from missionweave.client import AgentClient
from missionweave.client.errors import Unavailable
from missionweave.protocol import states as S
from missionweave.protocol.budgets import USAGE_RECORDED
from missionweave.protocol.offline import parse_binding
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
TOKENS_PER_STEP = 300
MISSION_TOKENS = 1000


class Cuttable:
    """The worker's ``AgentClient`` behind a cable the test can cut: while ``cut``, every
    exchange with the server raises ``Unavailable``, as the client does once its retries
    are spent (the network is down; the server itself runs on)."""

    def __init__(self, client: AgentClient) -> None:
        self.client = client
        self.principal = client.principal
        self.cut = False

    def _wire(self) -> None:
        if self.cut:
            raise Unavailable("the test cut the network")

    def submit(self, *args: Any, **kwargs: Any) -> Any:
        self._wire()
        return self.client.submit(*args, **kwargs)

    def submit_work(self, *args: Any, **kwargs: Any) -> Any:
        self._wire()
        return self.client.submit_work(*args, **kwargs)

    def get_json(self, *args: Any, **kwargs: Any) -> Any:
        self._wire()
        return self.client.get_json(*args, **kwargs)

    def upload(self, *args: Any, **kwargs: Any) -> Any:
        self._wire()
        return self.client.upload(*args, **kwargs)

    def download(self, *args: Any, **kwargs: Any) -> Any:
        self._wire()
        return self.client.download(*args, **kwargs)

    def publish(self, *args: Any, **kwargs: Any) -> Any:
        self._wire()
        return self.client.publish(*args, **kwargs)

    def signed_head(self, *args: Any, **kwargs: Any) -> Any:
        self._wire()
        return self.client.signed_head(*args, **kwargs)

    def report_presence(self, *args: Any, **kwargs: Any) -> Any:
        self._wire()
        return self.client.report_presence(*args, **kwargs)

    def current_session(self) -> Any:
        return self.client.current_session()

    def close(self) -> None:
        self.client.close()


def _worker_client(live_org: LiveOrg) -> AgentClient:
    return AgentClient(
        live_org.server.url, live_org.worker.id, live_org.worker.key, agent_card_version="1"
    )


def _events(client: AgentClient, group: str, work_item: str) -> list[dict[str, Any]]:
    events = client.get_json(f"/groups/{group}/events", params={"after": 0, "limit": 1000})
    return [e for e in events["events"] if e["payload"].get("work_item") == work_item]


@pytest.fixture
def running() -> Iterator[Callable[[Worker], None]]:
    """Run a worker in a thread; stopped, joined and checked clean at the end."""
    started: list[tuple[Worker, threading.Thread, dict[str, Any]]] = []

    def run(worker: Worker) -> None:
        outcome: dict[str, Any] = {}
        thread = threading.Thread(target=lambda: outcome.setdefault("clean", worker.run()))
        thread.start()
        started.append((worker, thread, outcome))

    yield run
    for worker, thread, outcome in started:
        worker.stop()
        thread.join(timeout=30)
        assert outcome == {"clean": True}
        assert worker.errors == []


def test_budget_exhaustion_stops_the_item_and_the_mission_never_passes_its_limit(
    live_org: LiveOrg, tmp_path: Path, running: Callable[[Worker], None]
) -> None:
    """The budget-exhaustion proof (R11.5-13, R10.1-01(g), R11.4-04): a handler that would
    spend 20 × 300 tokens in a mission limited to 1,000 is stopped at the checkpoint after
    the first refused charge; the item is blocked with a resolution naming the mission's
    tokens budget, nothing is submitted, the slot is free, and at no point of the log does
    the mission's recorded usage pass 1,000 tokens."""
    steps: list[int] = []

    def spender(ctx: SlotContext, progress: Progress) -> TaskResult:
        step = 0
        while step < 20:
            progress.charge(tokens=TOKENS_PER_STEP)
            step += 1
            steps.append(step)
            ctx.checkpoint({"next": step})
            progress.milestone(f"step {step}")
            time.sleep(0.25)  # more than the reporting interval: one charge a step
        return result_for(ctx.mission_context, step)

    config = load_config(live_org.write_config(tmp_path, stream=False))
    client = _worker_client(live_org)
    coordinator = live_org.coordinator_client()
    worker = Worker(config, client, handlers=HandlerTable({"text.summarise": spender}))
    running(worker)
    work_item = live_org.offer(
        coordinator, ALPHA, mission_budgets={"tokens": MISSION_TOKENS, "money": 5.0}
    )
    wait_for(lambda: item_of(coordinator, ALPHA, work_item)["state"] == S.BLOCKED)
    wait_for(lambda: not worker._snapshot() and worker.pool.free == config.slots)

    item = item_of(coordinator, ALPHA, work_item)
    mission = coordinator.get_json(f"/groups/{ALPHA}/missions/{item['mission']}")
    assert 0 < mission["budgets"]["used"]["tokens"] <= MISSION_TOKENS
    assert all(point[2].get("tokens", 0) <= MISSION_TOKENS for point in mission["usage_series"])
    # every limited dimension, at every point the mission's usage moved and at the end
    limits = mission["budgets"]["limits"]
    assert limits == {"tokens": MISSION_TOKENS, "money": 5.0}
    for used in [*(point[2] for point in mission["usage_series"]), mission["budgets"]["used"]]:
        assert all(used.get(name, 0) <= limit for name, limit in limits.items()), used
    events = _events(coordinator, ALPHA, work_item)
    charged = 0
    for event in events:
        if event["type"] == "work.usage_recorded":
            charged += event["payload"]["usage"].get("tokens", 0)
            assert charged <= MISSION_TOKENS
    assert charged == mission["budgets"]["used"]["tokens"]
    types = [e["type"] for e in events]
    assert "work.submitted" not in types
    (blocked,) = [e for e in events if e["type"] == "work.blocked"]
    resolution = blocked["payload"]["required_resolution"]
    assert "tokens budget of mission" in resolution
    assert blocked["payload"]["checkpoint"]["ref"] == item["last_checkpoint"]["ref"]
    assert steps[-1] < 20
    coordinator.close()


def test_usage_charged_offline_is_reconciled_by_the_authority(
    live_org: LiveOrg, tmp_path: Path, running: Callable[[Worker], None]
) -> None:
    """R11.5-08, R11.5-12 end to end: while the network is cut, the handler's charge and the
    metered seconds ride in the binding of a buffered progress report; once the network is
    back the real write path appends ``resource_usage_recorded`` naming both sessions, charges
    the item and its mission, and only then is the result submitted (R11.5-06)."""
    cut, charged, finish = threading.Event(), threading.Event(), threading.Event()

    def handler(ctx: SlotContext, progress: Progress) -> TaskResult:
        progress.charge(tokens=200)
        cut.wait(30)
        progress.charge(tokens=300, money=0.05)
        progress.milestone("read while offline")
        charged.set()
        finish.wait(30)
        return result_for(ctx.mission_context, 1)

    config = load_config(live_org.write_config(tmp_path, stream=False))
    config = replace(config, leases=replace(config.leases, ttl_s=120))
    client = Cuttable(_worker_client(live_org))
    coordinator = live_org.coordinator_client()
    worker = Worker(config, client, handlers=HandlerTable({"text.summarise": handler}))
    running(worker)
    work_item = live_org.offer(coordinator, ALPHA)
    wait_for(
        lambda: item_of(coordinator, ALPHA, work_item)["budgets"]["used"].get("tokens", 0) == 200
    )
    client.cut = True
    wait_for(lambda: not worker.link.online)
    cut.set()
    assert charged.wait(30)
    wait_for(
        lambda: any(
            parse_binding(entry.binding).usage.get("tokens") == 300
            for entry in worker.buffer.pending()
        )
    )
    client.cut = False
    finish.set()
    wait_for(lambda: item_of(coordinator, ALPHA, work_item)["state"] == S.SUBMITTED)

    events = _events(coordinator, ALPHA, work_item)
    reconciled = [e["payload"] for e in events if e["type"] == USAGE_RECORDED]
    assert sum(p["usage"].get("tokens", 0) for p in reconciled) == 300
    assert sum(p["usage"].get("money", 0) for p in reconciled) == 0.05
    for payload in reconciled:
        assert payload["command_type"] == "work.progress"
        assert {"historical_session_epoch", "reconciling_session_epoch"} <= payload.keys()
    types = [e["type"] for e in events]
    assert types.index(USAGE_RECORDED) < types.index("work.submitted")
    used = item_of(coordinator, ALPHA, work_item)["budgets"]["used"]
    assert (used["tokens"], used["money"]) == (500, 0.05)
    assert used["wall_clock"] > 0
    coordinator.close()
