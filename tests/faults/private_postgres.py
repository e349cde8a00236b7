"""A PostgreSQL server of the test's own, to stop and start on purpose.

The suite's PostgreSQL (127.0.0.1:5432) is shared by both xdist workers and every server
process they run: stopping it would break everything else that is running. A fault test
that takes PostgreSQL away gets a cluster of its own instead — ``initdb`` into a temporary
folder, ``pg_ctl start`` on a free port, the test database copied into it with
``pg_dump | pg_restore`` (so the world the test built through the factories is there, schema,
triggers and all) — and stops and starts that one.

The cluster runs with PostgreSQL's defaults that matter here (``fsync``, ``synchronous_commit``
on): what an acknowledged command survives is the deployed configuration's business. As
root (CI), the cluster's programs run as the ``postgres`` user, since PostgreSQL refuses to
run as root.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg
from django.db import connection

#: the database the copy is restored into
DATABASE = "mwp"
START_TIMEOUT_S = 60


def _program(name: str) -> str:
    """A PostgreSQL program: on the PATH, else in Debian's versioned folder."""
    found = shutil.which(name) or next(
        iter(sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)), None
    )
    if found is None:
        raise RuntimeError(f"PostgreSQL's {name} is not installed")
    return found


def _as_cluster_owner(command: Sequence[str]) -> list[str]:
    """``command``, run as ``postgres`` when this process is root (PostgreSQL refuses root)."""
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *command]
    return list(command)


def free_port() -> int:
    """A port nothing listens on now (a server started on it soon after will likely get it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _run(command: Sequence[str], **options: object) -> None:
    subprocess.run(command, check=True, capture_output=True, **options)  # type: ignore[call-overload]


@dataclass
class PrivatePostgres:
    """A running cluster of the test's own, and the means to take it away and back."""

    data_dir: Path
    port: int

    @property
    def url(self) -> str:
        """``DATABASE_URL`` for a server process on this cluster's copy of the database."""
        return f"postgres://postgres@127.0.0.1:{self.port}/{DATABASE}"

    @property
    def log_path(self) -> Path:
        return self.data_dir / "server.log"

    def connect(self) -> psycopg.Connection:
        return psycopg.connect(
            host="127.0.0.1", port=self.port, user="postgres", dbname=DATABASE, autocommit=True
        )

    def start(self) -> None:
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 "
            f"-c unix_socket_directories={self.data_dir} -c max_connections=100"
        )
        _run(
            _as_cluster_owner(
                [
                    _program("pg_ctl"),
                    "start",
                    "-D",
                    str(self.data_dir),
                    "-l",
                    str(self.log_path),
                    "-o",
                    options,
                    "-w",
                    "-t",
                    str(START_TIMEOUT_S),
                ]
            )
        )

    def stop(self, mode: str = "immediate") -> None:
        """Stop the cluster. ``immediate`` is a crash as far as the data is concerned: no
        checkpoint, every session cut; the next start recovers from the write-ahead log."""
        _run(
            _as_cluster_owner(
                [_program("pg_ctl"), "stop", "-D", str(self.data_dir), "-m", mode, "-w"]
            )
        )

    def running(self) -> bool:
        try:
            with self.connect():
                return True
        except psycopg.OperationalError:
            return False

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


def _initdb(data_dir: Path) -> None:
    if os.geteuid() == 0:
        shutil.chown(data_dir, "postgres", "postgres")
    _run(
        _as_cluster_owner(
            [
                _program("initdb"),
                "-D",
                str(data_dir),
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-instructions",
            ]
        )
    )


def copy_test_database(target: PrivatePostgres) -> None:
    """The pytest-django test database, as it is now (what the test committed), into
    ``target``'s database: schema, triggers, rows."""
    params = connection.settings_dict
    source = [
        _program("pg_dump"),
        "--format=custom",
        "--no-owner",
        "-h",
        params["HOST"] or "127.0.0.1",
        "-p",
        str(params["PORT"] or 5432),
        "-U",
        params["USER"] or "postgres",
        params["NAME"],
    ]
    dump = subprocess.run(source, check=True, capture_output=True).stdout
    restore = [
        _program("pg_restore"),
        "--no-owner",
        "--exit-on-error",
        "-h",
        "127.0.0.1",
        "-p",
        str(target.port),
        "-U",
        "postgres",
        "-d",
        DATABASE,
    ]
    subprocess.run(restore, input=dump, check=True, capture_output=True)


@contextmanager
def private_postgres() -> Iterator[PrivatePostgres]:
    """A fresh cluster with an empty database ``mwp``, stopped and removed afterwards."""
    data_dir = Path(tempfile.mkdtemp(prefix="mwp-private-pg-"))
    cluster = PrivatePostgres(data_dir=data_dir, port=free_port())
    try:
        _initdb(data_dir)
        cluster.start()
        with psycopg.connect(
            host="127.0.0.1", port=cluster.port, user="postgres", dbname="postgres", autocommit=True
        ) as admin:
            admin.execute(f"CREATE DATABASE {DATABASE}")
        yield cluster
    finally:
        if (data_dir / "postmaster.pid").exists():
            subprocess.run(
                _as_cluster_owner(
                    [_program("pg_ctl"), "stop", "-D", str(data_dir), "-m", "immediate", "-w"]
                ),
                capture_output=True,
                check=False,  # already stopped, or never started: either way, gone
            )
        shutil.rmtree(data_dir, ignore_errors=True)


def wait_for(cluster: PrivatePostgres, *, up: bool, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while cluster.running() != up:
        if time.monotonic() > deadline:
            raise TimeoutError(f"PostgreSQL on {cluster.port} not {'up' if up else 'down'}")
        time.sleep(0.05)
