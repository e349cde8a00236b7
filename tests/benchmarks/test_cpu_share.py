"""Section 5b's CPU accounting (``benchmarks/cpu_share.py``): parsing ``/proc``, who is which
party, and the report's table and bound."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from datetime import UTC, datetime

import pytest

from benchmarks import cpu_share
from benchmarks.config import load_config
from benchmarks.cpu_share import PARTIES, ProcessTimes, Snapshot, parse_machine, parse_stat
from benchmarks.load import run_clients
from benchmarks.report import render
from benchmarks.results import Results
from benchmarks.stats import Measurement, summarize

TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int, name: str, parent: int, utime: int, stime: int, started: int) -> str:
    """A ``/proc/<pid>/stat`` line with the fields ``parse_stat`` reads, zeros elsewhere."""
    after_name = ["S", str(parent), *["0"] * 9, str(utime), str(stime), *["0"] * 6, str(started)]
    return f"{pid} ({name}) {' '.join(after_name)} 0 0 0"


def test_a_stat_line_is_split_after_the_last_parenthesis_of_the_name():
    """A process may name itself anything, spaces and parentheses included (proc(5))."""
    times = parse_stat(_stat(42, "odd ) name (x", 7, 3 * TICK, TICK, 900))

    assert times == ProcessTimes(pid=42, name="odd ) name (x", parent=7, started=900, cpu_s=4.0)


def test_the_machine_line_counts_iowait_as_idle():
    busy, idle = parse_machine(f"cpu  {TICK} 0 {TICK} {2 * TICK} {TICK} 0 0 0 0 0\ncpu0 1 2 3\n")

    assert (busy, idle) == (2.0, 3.0)
    with pytest.raises(ValueError):
        parse_machine("cpu0 1 2 3 4\n")


def _snapshot(busy_s: float, idle_s: float, *processes: ProcessTimes) -> Snapshot:
    return Snapshot({(p.pid, p.started): p for p in processes}, busy_s, idle_s)


def _process(pid: int, name: str, parent: int, cpu_s: float, started: int = 1) -> ProcessTimes:
    return ProcessTimes(pid=pid, name=name, parent=parent, started=started, cpu_s=cpu_s)


def test_each_process_is_counted_once_in_its_party_and_the_rest_is_other():
    """The client is the given pid, the servers its descendants at any depth; PostgreSQL and
    Redis by name; the machine's busy time nobody named used is *other*."""
    before = _snapshot(
        10.0,
        50.0,
        _process(100, "python", 1, 1.0),
        _process(101, "uvicorn", 100, 2.0),
        _process(102, "uvicorn", 101, 0.5),
        _process(200, "postgres", 1, 3.0),
        _process(300, "redis-server", 1, 0.1),
        _process(400, "bash", 1, 9.0),
    )
    after = _snapshot(
        20.0,
        52.0,
        _process(100, "python", 1, 2.5),
        _process(101, "uvicorn", 100, 4.0),
        _process(102, "uvicorn", 101, 1.5),
        _process(200, "postgres", 1, 5.0),
        _process(201, "postgres", 1, 0.5),  # a backend started in the window: from zero
        _process(300, "redis-server", 1, 0.3),
        _process(400, "bash", 1, 9.5),
        _process(500, "postgres", 1, 1.0, started=2),  # a pid reused: a new process
    )

    used = cpu_share.shares(before, after, client=100)

    assert used == pytest.approx(
        {
            "client": 1.5,
            "servers": 3.0,
            "postgresql": 3.5,
            "redis": 0.2,
            "other": 10.0 - (1.5 + 3.0 + 3.5 + 0.2),
            "idle": 2.0,
        }
    )


def test_no_figures_without_proc(tmp_path):
    """Where ``/proc`` cannot be read the snapshot is empty, and so are the shares."""
    empty = cpu_share.snapshot(tmp_path / "no-proc")

    assert empty == Snapshot()
    assert cpu_share.shares(empty, cpu_share.snapshot()) == {}


def test_a_child_burning_cpu_is_a_server_on_this_machine():
    """Against the real ``/proc``: a process this one started counts as the servers'."""
    burn = "import time\nend = time.process_time() + 0.4\nwhile time.process_time() < end: pass"
    before = cpu_share.snapshot()
    child = subprocess.Popen([sys.executable, "-c", burn + "\nimport time; time.sleep(5)"])
    try:
        while True:  # until the child has burnt its share (read while it still exists)
            after = cpu_share.snapshot()
            mine = [p for p in after.processes.values() if p.pid == child.pid]
            if mine and mine[0].cpu_s >= 0.35:
                break
            assert child.poll() is None
    finally:
        child.kill()
        child.wait()

    used = cpu_share.shares(before, after)

    assert used["servers"] >= 0.35
    assert set(used) == set(PARTIES)
    assert sum(used.values()) > 0


class _Burner:
    """A load client whose every request is CPU in this process."""

    def send(self) -> tuple[int, int]:
        total = 0
        for value in range(20_000):
            total += value
        return 1, 0

    def close(self) -> None:
        return None


def test_a_timed_window_reports_whose_cpu_it_used():
    result = run_clients([_Burner(), _Burner()], warmup_s=0.05, seconds=0.3)

    assert set(result.cpu_s) == set(PARTIES)
    assert result.cpu_s["client"] > 0.1  # two threads burning for 0.3 s share one GIL


def test_section_5b_divides_each_party_by_the_commands_and_bounds_a_free_server(tmp_path):
    """1,000 commands in 2 s on 2 cores: 1 s of the client, 1.5 s of the servers, 1 s of
    PostgreSQL, 0.5 s idle. Without the servers' CPU the cores would allow
    4 core-s × 1,000 / 2.0 s of the rest = 2,000 commands in the 2 s: 1,000/s."""
    config = dataclasses.replace(load_config(quick=True), output=tmp_path / "b.md")
    results = Results(command="pytest", config=config, started_at=datetime.now(UTC))
    cpu_s = {"client": 1.0, "servers": 1.5, "postgresql": 1.0, "redis": 0.0, "other": 0.0}

    def cell(name: str, operations: int, **params: int) -> Measurement:
        """``operations`` in 2 s, with the CPU above and 0.5 s idle."""
        cell_params = {"groups": 1, "clients": 1, **params, "cpu_s": {**cpu_s, "idle": 0.5}}
        return summarize(
            name, operations=operations, elapsed_s=2.0, latencies_s=[0.01], params=cell_params
        )

    results.http.append(cell("http", 1000, groups=16, clients=16))
    results.batch.append(cell("http_batch", 1000, batch_size=500))
    results.inprocess.append(cell("inprocess", 500))

    document = render(results)

    section = document[document.index("### 5b.") :]
    assert "| HTTP (pool) | 16 | 16 | 500 | 1.00 | 1.50 | 1.00 | 0.00 | 0.00 | 0.50 | 1,000 |" in (
        section
    )
    # in process the client is the write path: no bound without a server
    assert "| in-process | 1 | 1 | 250 | 2.00 | 3.00 | 2.00 | 0.00 | 0.00 | 1.00 | — |" in section
    assert "| HTTP batch of 500 | 1 | 1 | 500 |" in section  # which batch size each row is
