"""The benchmark's own PostgreSQL database: dropped, created and migrated at every run.

Only a database whose name contains ``bench`` is ever dropped, so a mistyped
``BENCH_DATABASE_URL`` cannot wipe a real one.
"""

from __future__ import annotations

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo


def database_name(url: str) -> str:
    return str(conninfo_to_dict(url)["dbname"])


def maintenance_conninfo(url: str) -> str:
    """The same server and role, connected to the ``postgres`` database."""
    return make_conninfo(url, dbname="postgres")


def reset_database(url: str) -> None:
    """Drop (closing its connections) and create the benchmark database."""
    name = database_name(url)
    if "bench" not in name:
        raise SystemExit(f"refusing to reset {name!r}: the benchmark database must contain 'bench'")
    with psycopg.connect(maintenance_conninfo(url), autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def server_facts(url: str) -> dict[str, str]:
    """PostgreSQL's version and the settings that shape commit latency."""
    with psycopg.connect(url) as conn:
        version = conn.execute("SHOW server_version").fetchone()
        facts = {"server_version": str(version[0]) if version else "?"}
        for setting in ("synchronous_commit", "fsync", "shared_buffers", "max_connections"):
            row = conn.execute(sql.SQL("SHOW {}").format(sql.Identifier(setting))).fetchone()
            facts[setting] = str(row[0]) if row else "?"
    return facts
