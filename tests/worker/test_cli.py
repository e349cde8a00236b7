"""``missionweave-worker --config F`` (issue 14 §7): the console script's entry, a clear
refusal of a bad config, and — against the real server, as a separate process — a run that
serves two groups and, on SIGTERM, checkpoints its active work, releases the lease and exits
0."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from missionweave.protocol import states as S
from missionweave.worker.__main__ import main
from tests.live_server import uvicorn_server
from tests.worker.live_org import REPO, LiveOrg, item_of, wait_for

__all__ = ["uvicorn_server"]


def test_the_console_script_runs_the_workers_main() -> None:
    """Issue 14 §7: ``[project.scripts]`` names ``missionweave.worker.__main__:main``."""
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"missionweave-worker": "missionweave.worker.__main__:main"}


def test_a_bad_config_exits_2_naming_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A config that cannot start is refused before anything runs, with its dotted key."""
    config = tmp_path / "worker.toml"
    config.write_text('agent_id = "w2"\nkey_file = "w2.key"\n')
    assert main(["--config", str(config)]) == 2
    assert "authority_url: is required" in capsys.readouterr().err


@pytest.mark.e2e
def test_sigterm_checkpoints_active_work_releases_its_lease_and_exits_cleanly(
    live_org: LiveOrg, tmp_path: Path
) -> None:
    """Issue 14 §7, R0-13, R10.2-08, R11.3-12: the worker process finishes a quick item in
    one group and is busy with a long one in the other when SIGTERM arrives; it stops the long
    one at its next checkpoint, sends it as ``work.checkpoint`` (lease released, item queued
    for this worker, resumable from the checkpoint) and exits 0."""
    config = live_org.write_config(tmp_path, stream=False)
    coordinator = live_org.coordinator_client()
    log = (tmp_path / "worker.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "missionweave.worker", "--config", str(config)],
        cwd=tmp_path,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        quick = live_org.offer(coordinator, "g-beta")
        slow = live_org.offer(coordinator, "g-alpha", kind="text.digest")
        wait_for(lambda: item_of(coordinator, "g-beta", quick)["state"] == S.SUBMITTED)
        wait_for(lambda: item_of(coordinator, "g-alpha", slow)["state"] == S.ACTIVE)
        lease_id = item_of(coordinator, "g-alpha", slow)["lease"]["lease_id"]
        time.sleep(0.5)  # a few steps done
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0, (tmp_path / "worker.log").read_text()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        log.close()
    item = item_of(coordinator, "g-alpha", slow)
    assert item["state"] == S.QUEUED
    assert item["owner"] == live_org.worker.principal
    assert item["last_checkpoint"]["ref"].startswith(f"{slow}/e1/c")
    history = coordinator.get_json("/groups/g-alpha/events", params={"after": 0, "limit": 1000})
    closed = [
        e
        for e in history["events"]
        if e["type"] == "work.checkpointed" and e["payload"]["lease_id"] == lease_id
    ]
    assert len(closed) == 1  # the lease was released by the checkpoint, not left to expire
    assert "stopped cleanly" in (tmp_path / "worker.log").read_text()
    coordinator.close()
