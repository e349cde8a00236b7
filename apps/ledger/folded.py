"""A run's writes folded into one data-modifying ``WITH`` (issue 38 §1, "the folded form").

What a command writes — its events, its projection rows, its idempotency record and the
advanced head — are independent rows of four tables, each written once in a run (``Stage``),
so they need not be four statements: PostgreSQL runs them as the sub-statements of one
``WITH …``, which it parses, plans and starts once, and psycopg hands back one result where
it read four. A ``WITH``'s sub-statements share one snapshot and do not see each other's
rows; none of these needs to: no row is written twice in a run, and the deferred foreign
keys are checked at ``COMMIT`` as before. A statement that fails fails the whole ``WITH``,
so nothing of the run is written, as before.

It is sent as ``sent_as_one`` sends the statements it does not fold: its parameters quoted
into the text by psycopg's client-side binding, the flush's ``COMMIT`` after it in the same
query, one round trip. Measured paired in one process (one client, one group, blocks of 300
``mission.create`` alternating, 2026-12-07): against the four statements, about 4 % less
CPU in the write path's thread and in the PostgreSQL backend per command. Bound on the
server and prepared, sent with its ``COMMIT`` in a psycopg pipeline, it cost about 4 % more
of both than quoted: a pipeline's enter and exit cost ~40 µs of Python, more than the
quoting of the parameters, and preparing saved no measurable backend CPU.

``Folded`` is what ``statements.hot_cursor`` gives inside ``sent_as_one`` while folding is
on (``MWP_FOLDED_WRITES``, default on; PostgreSQL only): it keeps each statement with its
parameters. A run it cannot fold — a ``COPY``-sized insert of a batch, a set-based
``UPDATE … FROM (VALUES …)``, anything but ``INSERT``/``UPDATE``/``DELETE`` — is handed back
to be sent as before (``replay``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import psycopg
from django.conf import settings
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.utils import CursorDebugWrapper, CursorWrapper

#: a plain ``INSERT INTO t (…) VALUES (%s, …)``: its rows fold into one ``VALUES`` list
_PLAIN_INSERT = re.compile(r"INSERT INTO [\w\"]+ \([\w\", ]+\) VALUES \(%s(?:, %s)*\)")
_DATA_MODIFYING = ("INSERT ", "UPDATE ", "DELETE ")
_COMMIT = "COMMIT"


class Collector(Protocol):
    def execute(self, sql: str, params: Sequence[Any] | None = None) -> None: ...
    def executemany(self, sql: str, param_list: Iterable[Sequence[Any]]) -> None: ...


def enabled(db: BaseDatabaseWrapper) -> bool:
    """Whether ``sent_as_one`` folds the writes (PostgreSQL, ``MWP_FOLDED_WRITES``)."""
    return db.vendor == "postgresql" and getattr(settings, "MWP_FOLDED_WRITES", True)


@dataclass
class Folded:
    """The statements of a run as issued: (``sql``, its parameters) or (``sql``, rows)."""

    #: (sql, parameters, many): ``many`` when the parameters are an ``executemany``'s rows
    calls: list[tuple[str, Any, bool]] = field(default_factory=list)

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> None:
        self.calls.append((sql, params, False))

    def executemany(self, sql: str, param_list: Iterable[Sequence[Any]]) -> None:
        self.calls.append((sql, list(param_list), True))

    def __enter__(self) -> Folded:
        return self

    def __exit__(self, *_exc: object) -> None:
        return None

    def replay(self, into: Collector) -> None:
        """Issue the kept statements again, in order, on ``into``."""
        for sql, params, many in self.calls:
            (into.executemany if many else into.execute)(sql, params)

    def fold(self, *, most_rows: int) -> tuple[str, list[Any], bool] | None:
        """The one statement of the kept ones, its parameters, and whether a ``COMMIT``
        follows it; ``None`` when they do not fold (nothing kept, an ``executemany`` of
        ``most_rows`` rows or more, a statement that modifies no data)."""
        calls, commit = self.calls, False
        if calls and calls[-1][0] == _COMMIT and not calls[-1][1]:
            calls, commit = calls[:-1], True
        parts: list[str] = []
        params: list[Any] = []
        for sql, values, many in calls:
            if not sql.startswith(_DATA_MODIFYING):
                return None
            if not many:
                parts.append(sql)
                params.extend(values or ())
            elif len(values) >= most_rows:
                return None
            elif values and _PLAIN_INSERT.fullmatch(sql):
                head, _values, row = sql.rpartition(" VALUES ")
                parts.append(f"{head} VALUES {', '.join([row] * len(values))}")
                params.extend(value for values_of_row in values for value in values_of_row)
            else:
                for values_of_row in values:
                    parts.append(sql)
                    params.extend(values_of_row)
        if not parts:
            return None
        *subs, last = parts
        ctes = ", ".join(f"w{index} AS ({sub})" for index, sub in enumerate(subs))
        return (f"WITH {ctes} {last}" if subs else last), params, commit


def send(
    db: BaseDatabaseWrapper,
    quote: Callable[[str, Any], str],
    sql: str,
    params: list[Any],
    *,
    commit: bool,
) -> None:
    """``sql`` with ``params`` quoted into its text (``quote``: psycopg's client-side binding,
    as ``sent_as_one`` quotes), then the ``COMMIT`` if ``commit``: one query, one round trip,
    through Django's cursor (its execute wrappers, error translation and query log)."""
    text = quote(sql, params)
    cursor = CursorDebugWrapper if db.queries_logged else CursorWrapper
    with cursor(psycopg.Cursor(db.connection), db) as wrapped:
        wrapped.execute(f"{text};\n{_COMMIT}" if commit else text)
