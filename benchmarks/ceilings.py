"""What PostgreSQL alone can do on this machine, measured in the same run as the server.

* pgbench running the same gapless append as the write path (``pgbench/gapless_append.sql``):
  the ceiling for single commands, per group count and client count.
* psycopg ``executemany`` of ~600-byte JSON event rows in one transaction, under the same
  head-row lock: the ceiling for ``commands:batch``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict

from .stats import Measurement, summarize

HERE = Path(__file__).resolve().parent
SCHEMA = HERE / "pgbench" / "schema.sql"
SCRIPT = HERE / "pgbench" / "gapless_append.sql"
HASH = "sha256:" + "ab" * 32
TPS_LINE = re.compile(r"^tps = ([0-9.]+) \(without initial connection time\)", re.MULTILINE)


def event_document(group: int, sequence: int) -> str:
    """A ~600-byte canonical-looking event, the size the write path stores per command."""
    return json.dumps(
        {
            "actor": "agent:bench-a00",
            "command_id": f"cmd-{uuid.uuid4().hex[:12]}",
            "event_id": f"evt_{uuid.uuid4().hex}",
            "group": f"bench-g{group:02d}",
            "hash": HASH,
            "payload": {
                "budgets": {"money": 5.0, "tokens": 200000},
                "goal": "Summarise the incident reports of November and list the follow-up "
                "actions. Summarise the incident reports of November and list the "
                "follow-up actions.",
                "mission": f"m-{uuid.uuid4().hex[:12]}",
            },
            "prev_hash": HASH,
            "recorded_at": "2026-11-30T10:00:00.000000Z",
            "sequence": sequence,
            "type": "mission.created",
        },
        separators=(",", ":"),
        sort_keys=True,
    )


PAYLOAD = event_document(1, 1)


def connect(url: str, *, attempts: int = 10) -> psycopg.Connection:
    """Connect, waiting out a full server (other work on the machine may hold every slot)."""
    for attempt in range(attempts):
        try:
            return psycopg.connect(url)
        except psycopg.OperationalError as exc:
            if "too many clients" not in str(exc) or attempt == attempts - 1:
                raise
            time.sleep(1.0)
    raise AssertionError("unreachable")


def prepare_tables(url: str, groups: int) -> None:
    """(Re)create the table pair with ``groups`` head rows at sequence 0."""
    with connect(url) as conn:
        conn.execute(SCHEMA.read_text())
        with conn.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO bench_head (g) VALUES (%s)", [(g,) for g in range(1, groups + 1)]
            )


def pgbench(
    url: str,
    arguments: list[str],
    *,
    clients: int,
    groups: int,
    seconds: float,
    name: str,
    params: dict[str, object] | None = None,
) -> Measurement:
    """pgbench with ``arguments`` (mode, scripts, variables) at ``clients`` connections (one
    thread each) for ``seconds`` against ``url``: its rate (without connection set-up) and
    every transaction's latency, its params naming the cell (``clients``, ``groups``)."""
    whole_seconds = max(1, round(seconds))  # pgbench -T takes whole seconds
    info = conninfo_to_dict(url)
    connection_args = [
        arg
        for flag, key in (("-h", "host"), ("-p", "port"), ("-U", "user"))
        if info.get(key)
        for arg in (flag, str(info[key]))
    ]
    env = {"PGPASSWORD": str(info["password"])} if info.get("password") else {}
    with tempfile.TemporaryDirectory(prefix="mw-pgbench-") as tmp:
        command = [
            shutil.which("pgbench") or "pgbench",
            "-n",  # no VACUUM of pgbench's own tables (there are none)
            "-T",
            str(whole_seconds),
            "-c",
            str(clients),
            "-j",
            str(clients),
            *arguments,
            "--log",
            f"--log-prefix={Path(tmp) / 'pgb'}",
            *connection_args,
            str(info["dbname"]),
        ]
        completed = subprocess.run(
            command,
            capture_output=True,
            text=True,
            env={**os.environ, **env},
            cwd=tmp,
            check=False,
        )
        if completed.returncode != 0:
            raise RuntimeError(f"pgbench failed: {completed.stderr.strip() or completed.stdout}")
        latencies = read_pgbench_logs(Path(tmp))
    match = TPS_LINE.search(completed.stdout)
    tps = float(match.group(1)) if match else 0.0
    # Report pgbench's own rate (it excludes connection setup): operations = tps × seconds.
    return summarize(
        name,
        operations=round(tps * whole_seconds),
        elapsed_s=whole_seconds,
        latencies_s=latencies,
        params={"clients": clients, "groups": groups, **(params or {})},
    )


def read_pgbench_logs(directory: Path) -> list[float]:
    """Per-transaction latencies (s) from pgbench ``--log`` files (one per thread).

    Each line is ``client_id transaction_no time_us script_no epoch epoch_us``.
    """
    latencies: list[float] = []
    for path in sorted(directory.glob("pgb*")):
        for line in path.read_text().splitlines():
            fields = line.split()
            if len(fields) >= 3 and fields[2].isdigit():
                latencies.append(int(fields[2]) / 1_000_000)
    return latencies


def run_pgbench(url: str, *, clients: int, groups: int, seconds: float) -> Measurement:
    """pgbench's gapless append at ``clients`` connections over ``groups`` groups."""
    prepare_tables(url, groups)
    arguments = ["-M", "prepared", "-f", str(SCRIPT)]
    for name, value in (("groups", groups), ("payload", PAYLOAD), ("hash", HASH)):
        arguments += ["-D", f"{name}={value}"]
    return pgbench(
        url,
        arguments,
        clients=clients,
        groups=groups,
        seconds=seconds,
        name="pgbench",
        params={"protocol": "prepared"},
    )


def run_executemany(url: str, *, batch_size: int, seconds: float) -> Measurement:
    """Transactions of ``batch_size`` event rows via ``executemany``, back to back, one client.

    Each transaction locks the head row, inserts the rows after it and advances it — what a
    ``commands:batch`` request does around its commands.
    """
    prepare_tables(url, 1)
    # Documents are built once: the ceiling times the database and the driver, not json.dumps.
    documents = [event_document(1, offset) for offset in range(1, batch_size + 1)]
    latencies: list[float] = []
    rows_written = 0
    with connect(url) as conn:
        head = 0
        started = time.perf_counter()
        deadline = started + seconds
        now = started
        while now < deadline:
            rows = [
                (1, head + offset, f"evt_{head + offset:032x}", document)
                for offset, document in enumerate(documents, start=1)
            ]
            with conn.transaction(), conn.cursor() as cursor:
                cursor.execute("SELECT head FROM bench_head WHERE g = 1 FOR UPDATE")
                cursor.executemany(
                    "INSERT INTO bench_event (g, seq, event_id, recorded_at, document) "
                    "VALUES (%s, %s, %s, clock_timestamp(), %s)",
                    rows,
                )
                cursor.execute(
                    "UPDATE bench_head SET head = %s, hash = %s WHERE g = 1",
                    (head + batch_size, HASH),
                )
            head += batch_size
            rows_written += batch_size
            finished = time.perf_counter()
            latencies.append(finished - now)
            now = finished
    return summarize(
        "executemany",
        operations=rows_written,
        elapsed_s=now - started,
        latencies_s=latencies,
        params={"batch_size": batch_size},
    )
