"""Start and stop the demo's organisation: one process per agent, each its own program.

``manage.py demo`` and the tests start the same processes the same way:

- ``python -m missionweave.demo coordinator`` and ``... reviewer`` (this package);
- one ``python -m missionweave.worker --config worker.toml`` per worker: the
  ``missionweave-worker`` runtime with a TOML config written here, whose handler is
  :func:`missionweave.demo.work.write_report`.

They share nothing with the server but its URL: every command, read and artifact goes over
HTTP (and the workers' feeds over the websocket stream) through the client SDK. Each process
writes its output to ``<folder>/logs/<agent>.log``; ``stop`` sends SIGTERM to all (the workers
checkpoint and release their leases, exit 0), then SIGKILL to any still running.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from .organisation import COORDINATOR, REVIEWER, WORKERS, AgentSpec

STOP_TIMEOUT_S = 30.0


def worker_toml(
    spec: AgentSpec,
    *,
    key_file: Path,
    authority_url: str,
    state_dir: Path,
    card_version: str = "1",
    tick_s: float = 0.2,
) -> str:
    """The ``missionweave-worker`` config of a demo worker (docs/worker.md). Its stream is
    the authority's websocket twin; every group it serves has the same weight."""
    capabilities = ", ".join(f'{{ id = "{c}", version = "1" }}' for c in spec.capabilities)
    lines = [
        f'agent_id = "{spec.id}"',
        f'key_file = "{key_file}"',
        f'authority_url = "{authority_url}"',
        f'state_dir = "{state_dir}"',
        f"tick_s = {tick_s}",
        "shutdown_timeout_s = 20",
        "",
        "[agent_card]",
        f'version = "{card_version}"',
        f"max_concurrency = {spec.max_concurrency}",
        f"capabilities = [{capabilities}]",
        "",
        *(f"[groups.{group}]\nweight = 1.0\n" for group in spec.groups),
        "[handlers]",
        '"*" = "missionweave.demo.work:write_report"',
        "",
        "[progress]",
        "min_interval_s = 1",
        "max_interval_s = 10",
    ]
    return "\n".join(lines) + "\n"


@dataclass
class AgentProcess:
    name: str
    argv: list[str]
    log_path: Path
    process: subprocess.Popen[bytes] | None = None


@dataclass
class Organisation:
    """The agent processes of the demo for the authority at ``authority_url``.

    ``keys_dir`` holds ``<agent id>.key`` for every agent (``manage.py demo`` writes them when
    it registers the agents); ``folder`` gets the workers' configs and state and the logs.
    """

    authority_url: str
    keys_dir: Path
    folder: Path
    interval_s: float = 2.0
    step_s: float | None = None
    env: dict[str, str] = field(default_factory=dict)
    agents: list[AgentProcess] = field(default_factory=list)

    def plan(self) -> list[AgentProcess]:
        """The processes to start: the coordinator, the reviewer and the three workers."""
        python = sys.executable
        logs = self.folder / "logs"
        agents = []
        for role, spec in (("coordinator", COORDINATOR), ("reviewer", REVIEWER)):
            argv = [python, "-m", "missionweave.demo", role, "--authority", self.authority_url]
            argv += ["--agent", spec.id, "--key", str(self.key_file(spec))]
            argv += ["--interval", str(self.interval_s)]
            agents.append(AgentProcess(spec.id, argv, logs / f"{spec.id}.log"))
        for spec in WORKERS:
            config = self.write_worker_config(spec)
            argv = [python, "-m", "missionweave.worker", "--config", str(config)]
            agents.append(AgentProcess(spec.id, argv, logs / f"{spec.id}.log"))
        return agents

    def key_file(self, spec: AgentSpec) -> Path:
        return self.keys_dir / f"{spec.id}.key"

    def write_worker_config(self, spec: AgentSpec) -> Path:
        home = self.folder / "agents" / spec.id
        home.mkdir(parents=True, exist_ok=True)
        path = home / "worker.toml"
        path.write_text(
            worker_toml(
                spec,
                key_file=self.key_file(spec).resolve(),
                authority_url=self.authority_url,
                state_dir=(home / "state").resolve(),
            )
        )
        return path

    def start(self) -> list[AgentProcess]:
        env = {**os.environ, **self.env, "PYTHONUNBUFFERED": "1"}
        if self.step_s is not None:
            env["MWP_DEMO_STEP_S"] = str(self.step_s)
        self.agents = self.plan()
        for agent in self.agents:
            agent.log_path.parent.mkdir(parents=True, exist_ok=True)
            with agent.log_path.open("ab") as log:
                agent.process = subprocess.Popen(  # noqa: S603 - our interpreter, fixed args
                    agent.argv, env=env, stdout=log, stderr=subprocess.STDOUT
                )
        return self.agents

    def exited(self) -> list[AgentProcess]:
        """The agents whose process has ended."""
        return [a for a in self.agents if a.process is not None and a.process.poll() is not None]

    def stop(self) -> dict[str, int | None]:
        """SIGTERM to every agent, SIGKILL after ``STOP_TIMEOUT_S``; each one's exit status."""
        running = [a.process for a in self.agents if a.process is not None]
        for process in running:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for process in running:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        return {a.name: a.process.returncode if a.process else None for a in self.agents}

    def logs(self) -> str:
        return "\n".join(
            f"--- {a.name} ---\n{a.log_path.read_text(errors='replace')}"
            for a in self.agents
            if a.log_path.exists()
        )
