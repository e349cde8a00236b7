"""Whose CPU a timed window used: the load client, the servers, PostgreSQL, Redis, the rest.

On this machine kind everything of a benchmark shares two cores: the client threads that
send the commands, the server processes that answer them, PostgreSQL's backends and Redis.
A rate divided by pgbench's says how far the write path is from PostgreSQL alone, but not
how much of the machine the write path itself had: pgbench's client is C and costs little,
the HTTP figures' client is Python (``http.client``; ``httpx`` cost three times as much)
at ~0.25 ms of CPU per request against the servers' ~1.9 ms. So each closed-loop window
(``load.run_clients``) also reads the CPU time every process used, from ``/proc``, and the
report divides it by the commands accepted (docs/benchmarks.md, section 5b).

Parties, by process: this process (the load client; in process also the write path),
its descendants (the servers it started), PostgreSQL (every process named ``postgres``:
backends, WAL writer, checkpointer, autovacuum), Redis (``redis-server``), and *other*:
the machine's busy time (``/proc/stat``) that none of those used, kernel work for all of
them included. *idle* is the machine's idle time. Where ``/proc`` cannot be read (not
Linux), a snapshot is empty and so is the table.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

PROC = Path("/proc")
#: the parties a window's CPU is split into, in the report's order
PARTIES = ("client", "servers", "postgresql", "redis", "other", "idle")
_TICKS_PER_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class ProcessTimes:
    """One process from ``/proc/<pid>/stat``: its name, parent, start and CPU seconds."""

    pid: int
    name: str
    parent: int
    started: int  # clock ticks after boot: with ``pid``, names the process across snapshots
    cpu_s: float  # user + system


@dataclass(frozen=True)
class Snapshot:
    """Every process's CPU time and the machine's busy and idle time, at one moment."""

    processes: Mapping[tuple[int, int], ProcessTimes] = field(default_factory=dict)
    busy_s: float = 0.0
    idle_s: float = 0.0


def parse_stat(text: str) -> ProcessTimes:
    """``/proc/<pid>/stat``. The name sits in parentheses and may hold spaces or ``)``, so
    the fields after it are split from the last ``)`` (proc(5))."""
    head, _, rest = text.rpartition(")")
    pid, _, name = head.partition(" (")
    fields = rest.split()
    # rest[0] is field 3 (state): ppid is field 4, utime 14, stime 15, starttime 22
    return ProcessTimes(
        pid=int(pid),
        name=name,
        parent=int(fields[1]),
        started=int(fields[19]),
        cpu_s=(int(fields[11]) + int(fields[12])) / _TICKS_PER_S,
    )


def parse_machine(text: str) -> tuple[float, float]:
    """``/proc/stat``'s first line: (busy s, idle s) over all cores since boot; idle counts
    iowait too (a core waiting for the disk ran nothing)."""
    label, *values = text.splitlines()[0].split()
    if label != "cpu":
        raise ValueError("the first line of /proc/stat is not the all-cores line")
    ticks = [int(value) for value in values[:8]]  # user nice system idle iowait irq softirq steal
    idle = ticks[3] + ticks[4]
    return (sum(ticks) - idle) / _TICKS_PER_S, idle / _TICKS_PER_S


def process_times(pid: int | str, proc: Path = PROC) -> ProcessTimes | None:
    """``pid``'s line of ``/proc`` now (``None``: gone, or unreadable)."""
    try:
        return parse_stat((proc / str(pid) / "stat").read_text())
    except (OSError, ValueError, IndexError):
        return None


def every_process(proc: Path = PROC) -> list[ProcessTimes]:
    """Every process ``proc`` lists now (those gone since the listing left out)."""
    found = (process_times(entry.name, proc) for entry in proc.iterdir() if entry.name.isdigit())
    return [times for times in found if times is not None]


def snapshot(proc: Path = PROC) -> Snapshot:
    """Now, or an empty snapshot where ``proc`` cannot be read."""
    try:
        busy, idle = parse_machine((proc / "stat").read_text())
    except (OSError, ValueError):
        return Snapshot()
    processes = {(times.pid, times.started): times for times in every_process(proc)}
    return Snapshot(processes, busy, idle)


def _party(times: ProcessTimes, client: int, descendants: set[int]) -> str | None:
    if times.pid == client:
        return "client"
    if times.pid in descendants:
        return "servers"
    if times.name == "postgres":
        return "postgresql"
    if times.name.startswith("redis-server"):
        return "redis"
    return None


def _descendants(processes: Mapping[tuple[int, int], ProcessTimes], root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for times in processes.values():
        children.setdefault(times.parent, []).append(times.pid)
    found: set[int] = set()
    waiting = [root]
    while waiting:
        for child in children.get(waiting.pop(), ()):
            if child not in found:
                found.add(child)
                waiting.append(child)
    return found


def shares(before: Snapshot, after: Snapshot, *, client: int | None = None) -> dict[str, float]:
    """CPU seconds each party used between ``before`` and ``after`` (``PARTIES``; empty when
    either snapshot is). ``client`` is the load client's pid (default: this process). A
    process started in between counts from zero; one that ended in between is not seen."""
    if not before.processes or not after.processes:
        return {}
    client = os.getpid() if client is None else client
    descendants = _descendants(after.processes, client)
    used = dict.fromkeys(PARTIES, 0.0)
    for key, times in after.processes.items():
        party = _party(times, client, descendants)
        if party is None:
            continue
        earlier = before.processes.get(key)
        used[party] += max(0.0, times.cpu_s - (earlier.cpu_s if earlier else 0.0))
    busy = max(0.0, after.busy_s - before.busy_s)
    used["other"] = max(0.0, busy - sum(used[party] for party in PARTIES[:4]))
    used["idle"] = max(0.0, after.idle_s - before.idle_s)
    return used
