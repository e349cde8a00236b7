"""A Worker wired to the in-process ``FakeAuthority`` with a shared test clock, for the
runtime's unit tests (no server, no database)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from missionweave.protocol.signing import b64url_encode, generate_private_key, private_key_seed
from missionweave.worker.config import AgentCard, GroupConfig, LeasePolicy, WorkerConfig
from missionweave.worker.handlers import Handler, HandlerTable, Progress, TaskResult
from missionweave.worker.runtime import Worker
from missionweave.worker.slots import SlotContext
from tests.worker.fake_authority import Clock, FakeAuthority, wait_until
from tests.worker.fake_work import result_for

START = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)
CARD = AgentCard(
    "1", 1, frozenset({("text.summarise", "1"), ("text.digest", "1"), ("text.risky", "1")})
)


def write_key(path: Path) -> Path:
    path.write_text(b64url_encode(private_key_seed(generate_private_key())) + "\n")
    return path


def config_for(
    tmp_path: Path,
    groups: Sequence[str] = ("g-alpha",),
    *,
    slots: int = 1,
    group_configs: Mapping[str, GroupConfig] | None = None,
    **overrides: Any,
) -> WorkerConfig:
    config = WorkerConfig(
        agent_id="w2",
        key_file=write_key(tmp_path / "w2.key"),
        authority_url="http://authority.invalid",
        state_dir=tmp_path / "state",
        agent_card=replace(CARD, max_concurrency=slots),
        groups=dict(group_configs or {group: GroupConfig() for group in groups}),
        handlers={"*": "tests.worker.fake_work:summarise"},
        leases=LeasePolicy(),
        tick_s=0.01,
        shutdown_timeout_s=10.0,
    )
    return replace(config, **overrides)


class Gate:
    """A handler that works in steps, checkpointing after each, until ``release`` is set;
    it records what its slot gave it (tokens, where it resumed from)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.started = threading.Event()
        self.tokens: list[dict[str, str]] = []
        self.resumed_from: list[Any] = []
        self.milestones = 0

    def __call__(self, ctx: SlotContext, progress: Progress) -> TaskResult:
        resume = ctx.resume_from.state if ctx.resume_from is not None else None
        self.resumed_from.append(resume)
        step = int(resume["next"]) if isinstance(resume, dict) else 0
        self.started.set()
        while not self.release.is_set():
            self.tokens.append(ctx.tokens())
            step += 1
            ctx.checkpoint({"next": step})
            time.sleep(0.005)
        return result_for(ctx.mission_context, step)


class World:
    """The fake authority, the clock and one worker under test."""

    def __init__(
        self,
        tmp_path: Path,
        groups: Sequence[str] = ("g-alpha",),
        *,
        handlers: Mapping[str, Handler] | None = None,
        **config: Any,
    ) -> None:
        self.clock = Clock(START)
        self.authority = FakeAuthority(self.clock, groups)
        self.config = config_for(tmp_path, groups, **config)
        self.worker = Worker(
            self.config,
            self.authority,
            handlers=HandlerTable(handlers or {}),
            clock=self.clock,
            follow="poll",
            probe_every_s=0.0,
        )

    def restart(self, handlers: Mapping[str, Handler]) -> Worker:
        """A new runtime on the same state folder and authority (the next run of the
        process; ``authority.replace_session`` makes it a new session, R11.3-10)."""
        return Worker(
            self.config,
            self.authority,
            handlers=HandlerTable(dict(handlers)),
            clock=self.clock,
            follow="poll",
            probe_every_s=0.0,
        )

    def tick(self) -> None:
        self.worker.tick()

    def until(self, condition: Callable[[], bool], timeout_s: float = 10.0) -> None:
        wait_until(self.tick, condition, timeout_s=timeout_s)

    def sent(self, type_: str, group: str | None = None) -> list[Any]:
        return self.authority.of_type(type_, group)

    def state(self, group: str, item: str) -> str:
        return str(self.authority.item(group, item)["state"])

    def close(self) -> None:
        self.worker.stop()
        assert self.worker.shutdown()
        assert self.worker.errors == []


@contextmanager
def world(tmp_path: Path, *args: Any, **kwargs: Any) -> Iterator[World]:
    w = World(tmp_path, *args, **kwargs)
    try:
        yield w
    finally:
        for gate in (kwargs.get("handlers") or {}).values():
            if isinstance(gate, Gate):
                gate.release.set()
        w.close()
