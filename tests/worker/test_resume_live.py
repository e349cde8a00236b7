"""Resume anywhere (issue 35 §2; R11.5-01, R0-13, R11.3-13, R10.2-08), against the real
server: a checkpoint's state is stored as an artifact cited by ``work.checkpoint``, and after a
reassignment the new owner — another agent, with its own state folder, as on another machine
— resumes from the authority's last checkpoint with the verified state.

- the reproduction: worker A stops at a checkpoint (recorded by ``work.checkpoint``) and never
  comes back; the sweep reassigns the item to worker B, whose handler must be handed A's
  state although B's disk has never seen it;
- the proof: two ``python -m missionweave.worker`` processes; A checkpoints each step to the
  authority (``ctx.checkpoint(state, release=True)``) and is killed with SIGKILL in the middle
  of a step; the sweep reassigns the item; B resumes from A's last checkpoint and every step
  runs exactly once (one journal file per step run, ``tests/worker/resume_work.py``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from apps.work.sweeps import sweep_due
from missionweave.client import AgentClient
from missionweave.protocol import states as S
from missionweave.protocol.canonical import digest, is_digest
from missionweave.protocol.examples import example_contract
from missionweave.protocol.signing import b64url_encode, private_key_seed
from missionweave.worker.config import load_config
from missionweave.worker.handlers import HandlerTable, Progress, TaskResult
from missionweave.worker.runtime import Worker
from missionweave.worker.slots import SlotContext
from tests import factories
from tests.factories import AgentPersona, mission_body, now_text, unique
from tests.live_server import LiveServer, uvicorn_server
from tests.work.lifecycle import DEADLINE, selection_basis
from tests.worker.fake_work import result_for
from tests.worker.live_org import REPO, LiveOrg, build_live_org, item_of, wait_for
from tests.worker.resume_work import HOLD_AT, HOLD_ENV, JOURNAL_ENV, STEPS, journal_of

__all__ = ["uvicorn_server"]

pytestmark = pytest.mark.e2e

GROUP = "g-alpha"
#: the shortest start window (wire.md §9 ``start_within_s``): a stopped owner misses it at once
START_WITHIN_S = 1


@dataclass
class TwoWorkers:
    org: LiveOrg
    #: worker A is the org's w2; worker B is w3, on "another machine" (its own state folder)
    b: AgentPersona


@pytest.fixture
def two(transactional_db: None, uvicorn_server: LiveServer) -> TwoWorkers:
    org = build_live_org(uvicorn_server)
    w3 = factories.agent("w3", "org-acme")
    factories.grant(org.admin, GROUP, w3, "worker")
    return TwoWorkers(org, w3)


def write_config(folder: Path, server: LiveServer, persona: AgentPersona, **leases: int) -> Path:
    """A worker's key and TOML config in its own folder (its own ``state`` directory)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "agent.key").write_text(b64url_encode(private_key_seed(persona.key)) + "\n")
    lines = [
        f'agent_id = "{persona.id}"',
        'key_file = "agent.key"',
        f'authority_url = "{server.url}"',
        f'stream_url = "{server.ws_url}"',
        'state_dir = "state"',
        f'python_path = ["{REPO}"]',
        "tick_s = 0.05",
        "shutdown_timeout_s = 20",
        "",
        "[agent_card]",
        'version = "1"',
        "max_concurrency = 1",
        'capabilities = [{ id = "text.summarise", version = "1" }]',
        "",
        f"[groups.{GROUP}]",
        "",
        "[handlers]",
        '"text.summarise" = "tests.worker.resume_work:count_steps"',
    ]
    if leases:
        lines += ["", "[leases]", *(f"{name} = {value}" for name, value in leases.items())]
    path = folder / "worker.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def offer_in_turn(
    client: AgentClient, workers: list[str], start_within_s: int | None = START_WITHIN_S
) -> str:
    """A one-item mission offered to ``workers`` in turn (sequential, R10.3-03): the first
    accepts; a reassignment goes to the next (R11.5-01)."""
    mission, work_item = unique("m"), unique("wi")
    client.submit(GROUP, "mission.create", mission_body(mission))
    terms = example_contract(
        deadline=DEADLINE,
        capabilities=[{"id": "text.summarise", "version": "1"}],
        acceptance_criteria=example_contract()["acceptance_criteria"][:1],
    )
    client.submit(
        GROUP,
        "work.authorize",
        {"work_item": work_item, "mission": mission, "contract": terms, "depends_on": []},
    )
    offers = [
        {"offer": f"{work_item}-o{n}", "worker": worker, "expires_at": now_text(3600)}
        for n, worker in enumerate(workers, start=1)
    ]
    body: dict[str, Any] = {
        "work_item": work_item,
        "offers": offers,
        "mode": "sequential",
        "selection_basis": selection_basis(),
    }
    if start_within_s is not None:
        body["start_within_s"] = start_within_s
    client.submit(GROUP, "work.offer", body)
    return work_item


def reassigned_to(client: AgentClient, work_item: str, worker: str) -> bool:
    """Run the authority's sweep (what Celery beat runs, R11.5-01) until ``worker`` is the
    item's owner."""
    sweep_due()
    return item_of(client, GROUP, work_item).get("owner") == worker


def test_a_new_owner_with_its_own_disk_resumes_from_the_last_checkpoint(
    two: TwoWorkers, tmp_path: Path
) -> None:
    """R11.5-01, R10.2-08 (issue 35 §2, the reproduction): worker A checkpoints as it works;
    stopped, it records its last checkpoint with ``work.checkpoint`` and never starts the
    item again. Past its start deadline the sweep reassigns the item to worker B, whose state
    folder has never seen A's checkpoints: B's handler is handed exactly A's last state, by
    the authority's ``resume_from``, not a start from zero."""
    org = two.org
    coordinator = org.coordinator_client()
    server = org.server
    a_steps: list[int] = []
    b_resumed: list[Any] = []

    def a_handler(ctx: SlotContext, progress: Progress) -> TaskResult:
        step = 0
        while True:  # until the shutdown asks it to yield at its next checkpoint
            step += 1
            a_steps.append(step)
            ctx.checkpoint({"next": step})
            time.sleep(0.01)

    def b_handler(ctx: SlotContext, progress: Progress) -> TaskResult:
        b_resumed.append(ctx.resume_from.state if ctx.resume_from is not None else None)
        return result_for(ctx.mission_context, 3)

    def worker(folder: str, persona: AgentPersona, handler: Any) -> Worker:
        config = load_config(write_config(tmp_path / folder, server, persona))
        client = AgentClient(server.url, persona.id, persona.key, agent_card_version="1")
        return Worker(config, client, handlers=HandlerTable({"*": handler}))

    worker_a = worker("machine-a", org.worker, a_handler)
    outcome: dict[str, bool] = {}
    thread_a = threading.Thread(target=lambda: outcome.setdefault("a", worker_a.run()))
    thread_a.start()
    try:
        work_item = offer_in_turn(coordinator, [org.worker.principal, two.b.principal])
        wait_for(lambda: len(a_steps) >= 5, what="A works and checkpoints")
    finally:
        worker_a.stop()
        thread_a.join(timeout=30)
    assert outcome == {"a": True}
    item = item_of(coordinator, GROUP, work_item)
    assert (item["state"], item["owner"]) == (S.QUEUED, org.worker.principal)
    last = a_steps[-1]  # the checkpoint the shutdown stopped at, recorded by work.checkpoint
    assert item["last_checkpoint"]["state_digest"] == digest({"next": last})

    worker_b = worker("machine-b", two.b, b_handler)
    thread_b = threading.Thread(target=lambda: outcome.setdefault("b", worker_b.run()))
    thread_b.start()
    try:
        wait_for(
            lambda: reassigned_to(coordinator, work_item, two.b.principal),
            what="the sweep reassigns the item to B",
        )
        wait_for(
            lambda: item_of(coordinator, GROUP, work_item)["state"] == S.SUBMITTED,
            what="B submits",
        )
    finally:
        worker_b.stop()
        thread_b.join(timeout=30)
    assert outcome["b"] is True
    assert worker_a.errors == []
    assert worker_b.errors == []
    assert b_resumed == [{"next": last}]
    coordinator.close()


@contextmanager
def worker_process(config: Path, journal: Path, *, hold: bool) -> Iterator[subprocess.Popen]:
    """``python -m missionweave.worker --config …`` in its own folder, as the demo starts its
    agents; its output in ``worker.log`` beside the config. Killed on the way out if still
    running."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", JOURNAL_ENV: str(journal)}
    env.pop(HOLD_ENV, None)
    if hold:
        env[HOLD_ENV] = "1"
    with (config.parent / "worker.log").open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "missionweave.worker", "--config", str(config)],
            cwd=config.parent,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            yield process
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=10)


def test_a_worker_killed_mid_item_is_resumed_by_another_process_and_each_step_runs_once(
    two: TwoWorkers, tmp_path: Path
) -> None:
    """R11.5-01, R0-13, R11.3-13, R10.2-08 (issue 35 §2, the proof): two worker processes,
    each with its own state folder. A checkpoints every step to the authority (the state
    stored as an artifact, cited by ``work.checkpoint``, the lease released and taken again)
    and is killed with SIGKILL in the middle of step ``HOLD_AT``. Its lease runs out; the
    sweep reassigns the item (``resume_from`` naming A's last checkpoint and its stored
    state); B accepts, downloads and verifies that state and resumes at step ``HOLD_AT``.
    Every step ran exactly once: the ones before the kill in A, the rest in B."""
    org = two.org
    coordinator = org.coordinator_client()
    journal = tmp_path / "journal"
    journal.mkdir()
    config_a = write_config(tmp_path / "machine-a", org.server, org.worker, ttl_s=2)
    config_b = write_config(tmp_path / "machine-b", org.server, two.b, ttl_s=2)

    def journal_has(what: str, pid: int) -> bool:
        return (what, pid) in journal_of(journal)

    with (
        worker_process(config_a, journal, hold=True) as a,
        worker_process(config_b, journal, hold=False) as b,
    ):
        work_item = offer_in_turn(
            coordinator, [org.worker.principal, two.b.principal], start_within_s=None
        )
        wait_for(lambda: journal_has("holding", a.pid), what="A is in the middle of a step")
        item = item_of(coordinator, GROUP, work_item)
        assert (item["state"], item["owner"]) == (S.ACTIVE, org.worker.principal)
        last = item["last_checkpoint"]
        assert last["state_digest"] == digest({"next": HOLD_AT})
        assert is_digest(last["state_artifact"])  # the state is the authority's to hand on

        a.send_signal(signal.SIGKILL)
        assert a.wait(timeout=10) == -signal.SIGKILL
        wait_for(
            lambda: reassigned_to(coordinator, work_item, two.b.principal),
            what="the lease expires and the sweep reassigns the item to B",
        )
        wait_for(
            lambda: item_of(coordinator, GROUP, work_item)["state"] == S.SUBMITTED,
            what="B resumes and submits",
        )
        b.send_signal(signal.SIGTERM)
        assert b.wait(timeout=30) == 0, (config_b.parent / "worker.log").read_text()

    records = journal_of(journal)
    steps = Counter(what for what, _pid in records if what.startswith("step-"))
    assert steps == {f"step-{n}": 1 for n in range(STEPS)}  # each step ran exactly once
    ran_by = {what: pid for what, pid in records if what.startswith("step-")}
    assert {ran_by[f"step-{n}"] for n in range(HOLD_AT)} == {a.pid}
    assert {ran_by[f"step-{n}"] for n in range(HOLD_AT, STEPS)} == {b.pid}
    b_starts = sorted(what for what, pid in records if pid == b.pid and what.startswith("start-"))
    assert b_starts == [f"start-{n}" for n in range(HOLD_AT, STEPS)]  # never from zero

    events = coordinator.get_json(f"/groups/{GROUP}/events", params={"after": 0, "limit": 1000})
    (reassigned,) = [
        e["payload"]
        for e in events["events"]
        if e["type"] == "work.reassigned" and e["payload"]["work_item"] == work_item
    ]
    assert reassigned["resume_from"]["state_artifact"] == last["state_artifact"]
    assert "restored from the authority" in (config_b.parent / "worker.log").read_text()
    coordinator.close()
