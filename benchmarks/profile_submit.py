"""``--only profile``: one client's ``submit_command`` loop on one group, timed and profiled.

What the in-process figure is made of, without the load harness: ``BENCH_PROFILE_COMMANDS``
(2,000) ``mission.create`` commands, signed beforehand, sent one after the other from this
thread after 200 of warm-up, on a freshly reset database. It prints commands/s, wall and
this process's CPU per command, then the same loop again under ``cProfile`` (the functions
with the most cumulative and own time). Nothing is written to the report: the figures go
to the interpretation by hand, with this command (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import time
from typing import Any

from apps.ledger.write_path import submit_command

from .config import BenchConfig
from .envelopes import EnvelopePool
from .fresh import fresh_results, log
from .world import BenchAgent, build_world

WARMUP = 200


def send_all(agent: BenchAgent, documents: list[dict[str, Any]]) -> tuple[float, float]:
    """Submit ``documents`` in order: (wall s, this process's CPU s)."""
    wall, cpu = time.perf_counter(), time.process_time()
    for document in documents:
        submit_command(group_id=document["group"], document=document, caller=agent.caller)
    return time.perf_counter() - wall, time.process_time() - cpu


def run(config: BenchConfig, args: argparse.Namespace) -> int:
    count = int(os.environ.get("BENCH_PROFILE_COMMANDS", "200" if args.quick else "2000"))
    fresh_results(config, "python -m benchmarks.run --only profile")
    world = build_world(groups=1, agents=1)
    agent = world.agents[0]
    pool = EnvelopePool(agent, world.groups, seed=1)
    pool.presign(WARMUP + 2 * count)
    send_all(agent, pool.take(WARMUP))
    wall, cpu = send_all(agent, pool.take(count))
    log(
        f"{count} commands: {count / wall:.0f}/s, wall {wall / count * 1e6:.0f} µs, "
        f"CPU {cpu / count * 1e6:.0f} µs per command"
    )
    profile = cProfile.Profile()
    profile.runcall(send_all, agent, pool.take(count))
    stats = pstats.Stats(profile)
    stats.sort_stats("cumulative").print_stats(40)
    stats.sort_stats("tottime").print_stats(25)
    return 0
