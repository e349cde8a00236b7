"""Reads sent together: the write path's lock and the reads under it in one round trip.

A command under the group lock reads its idempotency record, its sender's session epoch and
membership, and the aggregates it decides on. Each is one small statement, and each used to
wait for its own round trip to PostgreSQL: most of a command's wall time was spent waiting,
not computing (docs/benchmarks.md, "Where the time goes"). What they read is known from the
verified envelope before any of them runs, so they are sent together: on PostgreSQL as one
query of several statements, after the statement that locks the head row, which the server
runs first, so every read sees the group as the lock holder does (each statement of a READ
COMMITTED transaction takes its own snapshot). Their parameters are quoted into the text by
psycopg's client-side binding, Django's default, and each answer is read with
``nextset()``: one call through the driver, where a psycopg pipeline of one statement each
cost ~0.1 ms more of CPU per command (docs/benchmarks.md, "Where the time goes"). Elsewhere
(SQLite) they run one after another.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .statements import current, hot_cursor, one_query, opens_its_transaction, quoter

Row = tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Read[T]:
    """One statement and what its rows mean."""

    sql: str
    params: Sequence[Any]
    finish: Callable[[list[Row]], T]


def run_together(reads: Sequence[Read[Any]]) -> list[Any]:
    """Each read's answer, in order: one round trip on PostgreSQL, which also begins the
    transaction when it is a write's first (``statements.opens_its_transaction``)."""
    if not reads:
        return []
    db = current()
    if db.vendor != "postgresql":
        return [run_one(read) for read in reads]
    quote = quoter()
    texts = [quote(read.sql, read.params) for read in reads]
    with hot_cursor() as cursor:
        begins = opens_its_transaction(db)
        cursor.execute(one_query(["BEGIN", *texts] if begins else texts))
        # each answer straight from psycopg's cursor, inside one translation of its errors:
        # Django's wrapper wraps every ``nextset`` and ``fetchall`` call anew
        with db.wrap_database_errors:
            results = _results(cursor.cursor, skip=int(begins))
    return [read.finish(rows) for read, rows in zip(reads, results, strict=True)]


def _results(cursor: Any, *, skip: int) -> list[list[Row]]:
    """The rows of each statement of the query ``cursor`` ran, after the first ``skip``."""
    for _ in range(skip):
        cursor.nextset()
    results = [cursor.fetchall()]
    while cursor.nextset():
        results.append(cursor.fetchall())
    return results


def run_one[T](read: Read[T]) -> T:
    """One read on its own."""
    with hot_cursor() as cursor:
        cursor.execute(read.sql, read.params)
        return read.finish(cursor.fetchall())
