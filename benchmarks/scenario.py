"""One measured scenario of ``mission.create`` commands: clients, groups, warm-up, timed run.

Shared by the in-process and HTTP measurements (single commands and batches alike): each
client gets its own agent and envelope pool; the warm-up rate sizes the pre-signed pools.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable
from typing import Any

from .config import BenchConfig
from .envelopes import EnvelopePool
from .load import Client, run_clients
from .stats import Measurement, summarize
from .world import BenchWorld

# Pre-sign twice what the warm-up rate predicts: the warm-up signs in its loop, so it
# underestimates, and a drained pool only costs in-loop signing (which the notes report).
PRESIGN_MARGIN = 2.0
PRESIGN_FLOOR = 20


def measure_commands(
    name: str,
    *,
    world: BenchWorld,
    clients: int,
    groups: int,
    config: BenchConfig,
    make_client: Callable[[EnvelopePool], Client],
    params: dict[str, Any],
    extra_per_client: int = 0,
) -> Measurement:
    """Run ``clients`` closed-loop clients writing into the first ``groups`` groups."""
    if clients > len(world.agents) or groups > len(world.groups):
        raise ValueError("the world has too few agents or groups for this scenario")
    targets = world.groups[:groups]
    pools = [
        EnvelopePool(agent, targets, seed=zlib.crc32(f"{name}/{clients}/{groups}/{index}".encode()))
        for index, agent in enumerate(world.agents[:clients])
    ]
    workers = [make_client(pool) for pool in pools]

    def prepare(warmup_rate: float) -> None:
        expected = warmup_rate * config.seconds * PRESIGN_MARGIN / clients
        for pool in pools:
            pool.presign(math.ceil(expected) + PRESIGN_FLOOR + extra_per_client)

    result = run_clients(
        workers, warmup_s=config.warmup_seconds, seconds=config.seconds, prepare=prepare
    )
    notes = []
    signed_in_loop = sum(pool.signed_in_loop for pool in pools)
    if signed_in_loop:
        notes.append(f"{signed_in_loop} envelopes were signed inside the client loop")
    first_errors = {getattr(worker, "first_error", "") for worker in workers} - {""}
    notes.extend(sorted(first_errors))
    return summarize(
        name,
        operations=result.accepted,
        elapsed_s=result.elapsed_s,
        latencies_s=result.latencies_s,
        errors=result.refused,
        params={"clients": clients, "groups": groups, **params, "cpu_s": result.cpu_s},
        notes=notes,
    )
