"""Section 7: from a command's acceptance to its EVENT frame on ``/ws/v1/stream``.

**World.** One group; one writer agent and one agent per subscriber, every one registered,
granted a membership through the write path and holding its own session (one session per
agent: opening another replaces it), so each socket authenticates with its own
``Authorization: Bearer`` token as a member, the way real agents would.

**Servers.** ``config.servers`` processes of the benchmark's server (``config.server``)
running ``missionweave.settings`` with ``REDIS_URL`` set, so the channel layer is
``channels_redis``' pub/sub layer; the sockets are spread round-robin over them, the writer
posts to the first.

**Subscribers.** Asyncio ``websockets`` clients, up to :data:`SOCKETS_PER_PROCESS` per
spawned worker process (:mod:`benchmarks.stream_clients`), each ``SUBSCRIBE``-d after the
head as it stands, so they only see live events. A warm-up event that every socket must
receive proves every subscription is live before the clock starts.

**Acceptance** is the moment the writer (this process) has received the ``201`` answer of
``POST /api/v1/groups/{g}/commands``: the command is then committed and its event is in the
log. Latency is per subscriber per event: the wall-clock time (``time.time_ns()``, one clock
for every process of the machine) at which the EVENT frame of that sequence arrived on that
socket, minus the acceptance. The server sends the hint after commit, possibly before the
``201`` reaches the writer, so a frame can arrive *before* acceptance: those samples are
negative and counted. The time from the request being sent is reported next to it.

**Pacing.** Closed loop: the next command is posted once every socket has received the
previous event (or :data:`AWAIT_TIMEOUT_S` passed, counted as missing) and a short gap, so
each figure is the latency of one event fanned out to N sockets, not of a queue of them.
"""

from __future__ import annotations

import dataclasses
import json
import math
import multiprocessing
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from multiprocessing.connection import Connection
from typing import Any

from django.conf import settings

from apps.ledger.models import GroupLog

from . import cpu_share
from .config import BenchConfig
from .envelopes import mission_create
from .facts import _git_revision, load_average
from .http_load import KeepAlive
from .servers import describe_server, running_servers
from .stats import percentile
from .stream_clients import SubscriberSpec, run_worker
from .world import BenchAgent, build_world

SOCKETS_PER_PROCESS = 500
AWAIT_TIMEOUT_S = 30.0
WARMUP_EVENTS = 2
IDLE_S = 3.0  # sockets open, nothing written: what the polling alone costs the servers
PREFIX = "stream"


@dataclass(frozen=True)
class StreamPlan:
    """Subscriber counts and how many timed events each gets."""

    levels: tuple[tuple[int, int], ...]  # (subscribers, events)
    gap_s: float = 0.05  # pause after every socket has an event, before the next command

    @property
    def max_subscribers(self) -> int:
        return max(subscribers for subscribers, _ in self.levels)


def stream_plan(*, quick: bool) -> StreamPlan:
    """``BENCH_STREAM_EVENTS_SCALE`` scales the event counts (default 1: 200, 60, 20)."""
    if quick:
        return StreamPlan(levels=((1, 5), (5, 5)))
    scale = float(os.environ.get("BENCH_STREAM_EVENTS_SCALE", "1"))
    return StreamPlan(
        levels=tuple(
            (subscribers, max(1, round(events * scale)))
            for subscribers, events in ((1, 200), (100, 60), (1000, 20))
        )
    )


@dataclass
class StreamLevel:
    """One subscriber count: latency per (socket, event) and what it cost."""

    subscribers: int
    processes: int  # client worker processes holding the sockets
    events: int  # timed events
    samples: int  # (socket, event) receipts of timed events
    missing: int  # (socket, event) pairs not received within AWAIT_TIMEOUT_S
    before_acceptance: int  # receipts earlier than the writer's 201
    accept_ms: dict[str, float]  # from acceptance (201 received): p50, p99, max, mean
    sent_ms: dict[str, float]  # from the POST being sent: p50, p99
    last_ms: dict[str, float]  # from acceptance to the last socket's receipt, per event
    post_ms: dict[str, float]  # the POST's round trip: p50, p99
    connect_s: float  # opening and subscribing every socket (slowest worker)
    retries: int  # handshakes refused and tried again (CONNECT_ATTEMPTS per socket)
    failed: int  # sockets that never opened: the level runs with the others
    elapsed_s: float  # the timed events, pauses included
    server_cpu_s: float  # CPU of the server processes during the timed events
    idle_server_cpu_s: float  # ... during IDLE_S with the sockets open and nothing written
    idle_s: float
    errors: int = 0  # non-EVENT frames
    out_of_order: int = 0
    first_error: str = ""
    load_after: float = 0.0


@dataclass
class StreamResult:
    levels: list[StreamLevel] = field(default_factory=list)
    servers: int = 0
    server: str = ""  # which server and version (servers.describe_server); "" in older runs
    poll_s: float = 0.0  # MWP_STREAM_POLL_S of the servers
    channel_layer: str = ""
    gap_s: float = 0.0
    world_s: float = 0.0
    started_at: str = ""
    load_before: str = ""
    load_after: str = ""
    git_revision: str = ""

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StreamResult:
        levels = [StreamLevel(**level) for level in data.get("levels", [])]
        names = {f.name for f in dataclasses.fields(cls)} - {"levels"}
        return cls(levels=levels, **{k: v for k, v in data.items() if k in names})


# --- the server processes' CPU -----------------------------------------------------------------


def _children_named(name: str) -> list[int]:
    """Pids of this process's children whose command is ``name``."""
    me = os.getpid()
    return [p.pid for p in cpu_share.every_process() if p.name == name and p.parent == me]


def cpu_seconds(pids: Sequence[int]) -> float:
    """User + system CPU seconds of ``pids`` so far (from ``/proc/<pid>/stat``)."""
    found = (cpu_share.process_times(pid) for pid in pids)
    return sum(times.cpu_s for times in found if times is not None)


#: the commands of the servers :func:`~benchmarks.servers.running_servers` can start
SERVER_COMMANDS = ("uvicorn", "daphne", "granian")


def server_pids() -> list[int]:
    """The server processes :func:`~benchmarks.servers.running_servers` started (children of
    this process; granian's workers, its grandchildren, are not counted)."""
    return [pid for name in SERVER_COMMANDS for pid in _children_named(name)]


# --- one level ---------------------------------------------------------------------------------


def _summary(samples_ns: list[int], *, keys: Sequence[str] = ("p50", "p99")) -> dict[str, float]:
    ordered = sorted(value / 1e6 for value in samples_ns)
    out: dict[str, float] = {}
    for key in keys:
        if key == "max":
            out[key] = ordered[-1] if ordered else math.nan
        elif key == "mean":
            out[key] = sum(ordered) / len(ordered) if ordered else math.nan
        else:
            out[key] = percentile(ordered, int(key[1:]) / 100)
    return out


@contextmanager
def _workers(
    ws_urls: list[str], tokens: list[str], group: str, after: int
) -> Iterator[list[Connection]]:
    """Spawned subscriber processes holding one socket per token; their pipes."""
    context = multiprocessing.get_context("spawn")
    processes, pipes = [], []
    try:
        for start in range(0, len(tokens), SOCKETS_PER_PROCESS):
            ours, theirs = context.Pipe()
            spec = SubscriberSpec(
                tuple(ws_urls), tuple(tokens[start : start + SOCKETS_PER_PROCESS]), group, after
            )
            process = context.Process(target=run_worker, args=(theirs, spec), daemon=True)
            process.start()
            theirs.close()
            processes.append(process)
            pipes.append(ours)
        yield pipes
    finally:
        for process in processes:
            process.join(timeout=30)
            if process.is_alive():
                process.terminate()
                process.join()


class _Writer:
    """The writer agent posting ``mission.create`` commands to one server.

    Each is signed just before it is sent, outside the timed interval: opening 1,000 sockets
    on a busy server can take longer than the authority's 300 s clock-skew window, so
    envelopes signed in advance could be refused as stale.
    """

    def __init__(self, agent: BenchAgent, base_url: str, group: str) -> None:
        # http.client, as the command figures' client: httpx's ~0.75 ms of CPU per request
        # would sit inside the sent-to-accepted interval and on the cores the servers use
        self.http = KeepAlive(base_url, agent.token)
        self.agent = agent
        self.group = group

    def post(self) -> tuple[int, int, int]:
        """(sequence of the event, ns when sent, ns when the 201 was received)."""
        body = json.dumps(mission_create(self.agent, self.group)).encode()
        sent = time.time_ns()
        status, answer = self.http.post(f"/api/v1/groups/{self.group}/commands", body)
        accepted = time.time_ns()
        if status != 201:
            raise RuntimeError(f"command refused: {status} {answer[:300]!r}")
        return int(json.loads(answer)["events"][0]["sequence"]), sent, accepted

    def close(self) -> None:
        self.http.close()


def _await_all(pipes: list[Connection], sequence: int) -> int:
    for pipe in pipes:
        pipe.send(("await", sequence, AWAIT_TIMEOUT_S))
    missing = 0
    for pipe in pipes:
        kind, got, left = pipe.recv()
        assert (kind, got) == ("reached", sequence), (kind, got)
        missing += left
    return missing


def measure_level(
    world_agents: tuple[BenchAgent, ...],
    writer: BenchAgent,
    group: str,
    urls: list[str],
    *,
    subscribers: int,
    events: int,
    gap_s: float,
    log: Callable[[str], None],
) -> StreamLevel:
    """Open ``subscribers`` sockets, warm up, time ``events`` commands; one level's figures."""
    ws_urls = [url.replace("http://", "ws://") + "/ws/v1/stream" for url in urls]
    tokens = [agent.token for agent in world_agents[:subscribers]]
    head = GroupLog.objects.get(group_id=group).head_sequence
    pids = server_pids()
    poster = _Writer(writer, urls[0], group)
    try:
        with _workers(ws_urls, tokens, group, head) as pipes:
            connect_s, failed, retries = 0.0, 0, 0
            for pipe in pipes:
                _, _opened, refused, retried, seconds, detail = pipe.recv()
                connect_s = max(connect_s, seconds)
                failed, retries = failed + refused, retries + retried
                if refused:
                    log(f"stream: {refused} socket(s) failed to open: {detail}")
            if failed == subscribers:
                raise RuntimeError(f"none of {subscribers} sockets opened")
            for _ in range(WARMUP_EVENTS):
                sequence, _, _ = poster.post()
                if left := _await_all(pipes, sequence):
                    raise RuntimeError(f"{left} socket(s) never received warm-up event {sequence}")
            cpu_idle = cpu_seconds(pids)
            time.sleep(IDLE_S)
            idle_cpu = cpu_seconds(pids) - cpu_idle
            timed: dict[int, tuple[int, int]] = {}
            missing = 0
            cpu_before, started = cpu_seconds(pids), time.perf_counter()
            for _ in range(events):
                sequence, sent, accepted = poster.post()
                timed[sequence] = (sent, accepted)
                missing += _await_all(pipes, sequence)
                time.sleep(gap_s)
            elapsed = time.perf_counter() - started
            server_cpu = cpu_seconds(pids) - cpu_before
            receipts: dict[int, list[int]] = {}
            counters = {"errors": 0, "out_of_order": 0, "first_error": ""}
            for pipe in pipes:
                pipe.send(("finish",))
            for pipe in pipes:
                _, theirs, their_counters = pipe.recv()
                for sequence, times in theirs.items():
                    receipts.setdefault(sequence, []).extend(times)
                counters["errors"] += their_counters["errors"]
                counters["out_of_order"] += their_counters["out_of_order"]
                counters["first_error"] = counters["first_error"] or their_counters["first_error"]
            processes = len(pipes)
    finally:
        poster.close()
    from_accept, from_sent, last, post = [], [], [], []
    for sequence, (sent, accepted) in timed.items():
        times = receipts.get(sequence, [])
        from_accept += [t - accepted for t in times]
        from_sent += [t - sent for t in times]
        post.append(accepted - sent)
        if times:
            last.append(max(times) - accepted)
    return StreamLevel(
        subscribers=subscribers,
        processes=processes,
        events=events,
        samples=len(from_accept),
        missing=missing,
        before_acceptance=sum(1 for value in from_accept if value < 0),
        accept_ms=_summary(from_accept, keys=("p50", "p99", "max", "mean")),
        sent_ms=_summary(from_sent),
        last_ms=_summary(last),
        post_ms=_summary(post),
        connect_s=connect_s,
        retries=retries,
        failed=failed,
        elapsed_s=elapsed,
        server_cpu_s=server_cpu,
        idle_server_cpu_s=idle_cpu,
        idle_s=IDLE_S,
        errors=int(counters["errors"]),
        out_of_order=int(counters["out_of_order"]),
        first_error=str(counters["first_error"]),
        load_after=os.getloadavg()[0],
    )


def measure_stream(
    config: BenchConfig, plan: StreamPlan, *, log: Callable[[str], None] = lambda message: None
) -> StreamResult:
    """Build the world, start the servers, measure every level of ``plan``."""
    result = StreamResult(
        servers=config.servers,
        server=describe_server(config.server, processes=config.servers),
        poll_s=float(settings.MWP_STREAM_POLL_S),
        channel_layer=settings.CHANNEL_LAYERS["default"]["BACKEND"],
        gap_s=plan.gap_s,
        started_at=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        load_before=load_average(),
        git_revision=_git_revision(),
    )
    started = time.perf_counter()
    world = build_world(groups=1, agents=plan.max_subscribers + 1, prefix=PREFIX)
    result.world_s = time.perf_counter() - started
    writer, subscribers = world.agents[0], world.agents[1:]
    log(f"stream: {len(subscribers)} subscriber agents with sessions in {result.world_s:.1f} s")
    with running_servers(config) as urls:
        log(f"stream: servers at {', '.join(urls)} ({result.channel_layer})")
        for count, events in plan.levels:
            level = measure_level(
                subscribers,
                writer,
                world.groups[0],
                urls,
                subscribers=count,
                events=events,
                gap_s=plan.gap_s,
                log=log,
            )
            result.levels.append(level)
            log(
                f"stream: {count} subscriber(s), {level.samples} receipts: "
                f"p50 {level.accept_ms['p50']:.1f} ms, p99 {level.accept_ms['p99']:.1f} ms "
                f"from the 201; missing {level.missing}; connect {level.connect_s:.1f} s "
                f"({level.retries} retries, {level.failed} failed); "
                f"server CPU {level.server_cpu_s:.1f} s in {level.elapsed_s:.1f} s "
                f"(idle {level.idle_server_cpu_s:.1f} s in {level.idle_s:.0f} s)"
            )
    result.load_after = load_average()
    return result
