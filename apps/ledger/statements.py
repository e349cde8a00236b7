"""Projection reads and writes as SQL compiled once per model, for the write path's hot loop.

Each command reads the aggregates it decides on and writes the ones it changed, under the
group lock. Through the ORM each of those statements cost ~0.3–0.8 ms of CPU to build and
compile (docs/benchmarks.md, "Where the time goes") against ~0.05 ms to execute a prepared
text; the SQL never changes, only its parameters. ``ModelStatements`` builds the three
statements of a projection model from its ``_meta`` once per process and runs them on
Django's own connection (same transaction, same adapters), converting values exactly as the
ORM does — ``Field.get_db_prep_save`` on the way in (JSON encoders, defaults, ``pre_save``)
and the backend's and the field's converters on the way out (the projection JSON decoder,
SQLite's booleans and datetimes) — so a row written here is the row ``Model.objects.create``
would write, and ``rebuild_projections --verify`` compares them unchanged.
"""

from __future__ import annotations

import dataclasses
import re
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from functools import cache
from typing import Any

import psycopg
from django.db import DEFAULT_DB_ALIAS, connection, connections, models
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.utils import CursorDebugWrapper, CursorWrapper

from . import folded, jsoncolumns

Converter = Callable[[Any, Any, Any], Any]


def current() -> BaseDatabaseWrapper:
    """This thread's connection itself. Django's ``connection`` is a proxy that looks the
    thread's connection up on each attribute (a context-local read, a few microseconds):
    the write path touches it dozens of times a command, so it looks it up once a step."""
    return connections[DEFAULT_DB_ALIAS]


def hot_cursor() -> CursorWrapper:
    """A cursor of Django's connection for the write path's fixed statements.

    On PostgreSQL it binds parameters on the server (``psycopg.Cursor``), where Django's
    default client-side cursor quotes each value into the SQL text in Python. The
    statements are not prepared: Django turns psycopg's prepared statements off, and
    turning them on measured no gain worth their risk (about 40 µs of PostgreSQL CPU per
    command; a generic plan made while a table was new walked whole groups, and custom
    plans gave back the saving: docs/benchmarks.md). It is wrapped as Django wraps its own
    cursors (same transaction, execute wrappers, query log, error translation). Inside
    ``sent_as_one`` it only collects the statements. Elsewhere it is Django's cursor.
    """
    db = current()
    if db.vendor != "postgresql":
        return db.cursor()
    collecting: _Collected | folded.Folded | None = getattr(_collecting, "statements", None)
    if collecting is not None:
        return collecting  # type: ignore[return-value]
    db.ensure_connection()
    return _wrapped(psycopg.Cursor(db.connection), db)


def _wrapped(cursor: psycopg.Cursor[Any], db: BaseDatabaseWrapper) -> CursorWrapper:
    wrapper = CursorDebugWrapper if db.queries_logged else CursorWrapper
    return wrapper(cursor, db)


_collecting = threading.local()

#: between the statements of one query (``sent_as_one``, ``reads.run_together``)
SEPARATOR = ";\n"


def one_query(texts: Iterable[str]) -> str:
    """Statements already quoted, as the text of one query."""
    return SEPARATOR.join(texts)


def statements_of(query: str) -> list[str]:
    """The statements of a query ``one_query`` made (for the benchmarks' listings)."""
    return [part for part in query.split(SEPARATOR) if part.strip()]


#: an ``INSERT`` of at least this many rows inside ``sent_as_one`` goes by ``COPY`` (a
#: batch's events and records) instead of being quoted into the query's text
COPY_FROM_ROWS = 32
_INSERT_INTO = re.compile(r"INSERT INTO ([\w\"]+) \(([\w\", ]+)\)")
_PLACEHOLDERS = re.compile(r"\(%s(?:, %s)*\)")
#: ``_update_from_values``'s statement: the rows' placeholders, and around them
_FROM_VALUES = re.compile(
    r"(?P<head>UPDATE .* FROM \(VALUES )(?P<row>\(%s(?:, %s)*\))(?P<tail>\) AS v .*)", re.DOTALL
)


@dataclass
class _Collected:
    """What ``hot_cursor`` gives inside ``sent_as_one``: a cursor that runs nothing, but
    quotes each statement into SQL text and keeps it for one query at the end; the rows of
    a large ``INSERT`` it keeps for a ``COPY`` sent before that query."""

    quote: Callable[[str, Any], str]
    texts: list[str] = dataclasses.field(default_factory=list)
    #: (``COPY … FROM STDIN``, its rows)
    copies: list[tuple[str, list[Sequence[Any]]]] = dataclasses.field(default_factory=list)

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> None:
        self.texts.append(self.quote(sql, params))

    def executemany(self, sql: str, param_list: Iterable[Sequence[Any]]) -> None:
        """One statement per row, except a plain ``INSERT INTO t (…) VALUES (%s, …)``: one
        statement of all the rows, which the server parses and plans once, or from
        ``COPY_FROM_ROWS`` rows a ``COPY`` (a batch inserts hundreds); and an ``UPDATE …
        FROM (VALUES (%s, …)) AS v …`` (``_update_from_values``): one statement with every
        row in its ``VALUES``."""
        set_based = _FROM_VALUES.fullmatch(sql)
        if set_based is not None:
            self._one_statement(set_based["head"], set_based["row"], set_based["tail"], param_list)
            return
        head, values, row = sql.rpartition(" VALUES ")
        target = _INSERT_INTO.fullmatch(head) if values else None
        if target is None or not _PLACEHOLDERS.fullmatch(row):
            for params in param_list:
                self.execute(sql, params)
            return
        param_list = list(param_list)
        if len(param_list) >= COPY_FROM_ROWS:
            self.copies.append((f"COPY {target[1]} ({target[2]}) FROM STDIN", param_list))
            return
        self._one_statement(f"{head} VALUES ", row, "", param_list)

    def _one_statement(
        self, head: str, row: str, tail: str, param_list: Iterable[Sequence[Any]]
    ) -> None:
        """``head``, then ``row`` quoted with each row's parameters, comma-separated, then
        ``tail``: one statement of all the rows (none when there are no rows)."""
        rows = [self.quote(row, params) for params in param_list]
        if rows:
            self.texts.append(f"{head}{', '.join(rows)}{tail}")

    def __enter__(self) -> _Collected:
        return self

    def __exit__(self, *_exc: object) -> None:
        return None


@contextmanager
def sent_as_one() -> Iterator[None]:
    """The statements the write path issues inside are sent to PostgreSQL as one query of
    several statements (the simple query protocol): one round trip, and one call through
    the driver where each statement cost a call of its own. Their parameters are quoted
    into the text by psycopg's client-side binding, Django's own default, so the values
    are adapted exactly as the ORM would. Nothing inside may read a result. A statement
    that fails stops the ones after it (the server skips the rest of the query) and raises
    the ``django.db`` exception it would have raised alone. An ``INSERT`` of many rows (a
    batch's events, records and new projection rows: ``COPY_FROM_ROWS``) goes by ``COPY``
    just before that query instead: a round trip more, in which PostgreSQL parses no SQL
    per row and psycopg quotes nothing in Python (a batch of 500: ~15–25 % less time per
    command, docs/benchmarks.md). Unless ``MWP_FOLDED_WRITES`` is off, statements that
    modify data and no ``COPY``-sized insert are folded into one ``WITH`` first
    (``folded``), which the server parses, plans and runs as one statement. Elsewhere
    (SQLite) the statements run one by one."""
    db = current()
    if db.vendor != "postgresql" or getattr(_collecting, "statements", None) is not None:
        yield
        return
    db.ensure_connection()
    kept = folded.Folded() if folded.enabled(db) else None
    collected = _Collected(quoter())
    _collecting.statements = kept if kept is not None else collected
    try:
        yield
    finally:
        _collecting.statements = None
    if kept is not None:  # one data-modifying ``WITH`` where the statements allow it
        one = kept.fold(most_rows=min(COPY_FROM_ROWS, UPDATE_FROM_ROWS))
        if one is not None:
            folded.send(db, collected.quote, one[0], one[1], commit=one[2])
            return
        kept.replay(collected)
    if not (collected.copies or collected.texts):
        return
    with _wrapped(psycopg.Cursor(db.connection), db) as cursor:
        for statement, rows in collected.copies:
            copy_rows(cursor, statement, rows)
        if collected.texts:
            cursor.execute(one_query(collected.texts))


def copy_rows(cursor: CursorWrapper, statement: str, rows: Sequence[Sequence[Any]]) -> None:
    """``COPY … FROM STDIN`` of ``rows`` on Django's cursor: through its execute wrappers
    and, when queries are logged, into the log (``"N times: COPY …"``), as ``executemany``
    would be; psycopg adapts each value as it does a parameter (text format)."""

    def copy(sql: str, params: Sequence[Sequence[Any]], _many: bool, _context: Any) -> None:
        with cursor.db.wrap_database_errors, cursor.cursor.copy(sql) as copying:
            for row in params:
                copying.write_row(row)

    logged = (
        cursor.debug_sql(statement, rows, many=True)
        if isinstance(cursor, CursorDebugWrapper)
        else nullcontext()
    )
    with logged:  # Django's own path for execute() and executemany(), with our executor
        cursor._execute_with_wrappers(statement, rows, many=True, executor=copy)


def opens_its_transaction(db: BaseDatabaseWrapper) -> bool:
    """Whether the query about to be sent may begin the write's transaction itself, with a
    ``BEGIN`` as its first statement: the symmetry of ``Stage.flush``'s ``COMMIT``, so a
    command costs two round trips instead of three (issue 15 §1: "as few round trips as
    the semantics allow").

    Only for the outermost block of a write (``commits_here``) whose transaction has not
    begun yet, with psycopg's plain ``BEGIN`` (no isolation level, read-only or deferrable
    of its own). When it answers yes, psycopg has just been told not to send its own
    ``BEGIN`` before the query (its ``autocommit``, which it lets change only while no
    transaction is open); the caller must send the query next, ``BEGIN`` first. From then
    on the server holds the transaction: psycopg's ``commit()`` and ``rollback()`` act on
    the server's transaction status, not on that flag, so Django's leaving the block —
    ``COMMIT`` already sent by the flush, or a rollback on error — is unchanged, and its
    ``set_autocommit(True)`` on the way out is what it would set anyway."""
    raw = db.connection
    if (
        not commits_here(db)
        or raw is None
        or raw.autocommit
        or raw.info.transaction_status != psycopg.pq.TransactionStatus.IDLE
        or raw.isolation_level is not None
        or raw.read_only is not None
        or raw.deferrable is not None
    ):
        return False
    raw.autocommit = True
    return True


def commits_here(db: BaseDatabaseWrapper) -> bool:
    """Whether a write's query may end (or begin) the transaction: PostgreSQL, inside
    exactly one atomic block (not a test's, not a caller's that writes after it) that is
    not already failing.

    psycopg's ``commit()`` returns without a round trip once the connection is idle, so the
    block's exit stays Django's: its ``on_commit`` callbacks run as before."""
    return (
        db.vendor == "postgresql"
        and len(db.atomic_blocks) == 1
        and not db.atomic_blocks[0]._from_testcase
        and not db.needs_rollback
    )


def quoter() -> Callable[[str, Any], str]:
    """Quotes a statement's parameters into its text as psycopg's client-side binding does
    (Django's default): for the statements sent together as one query."""
    db = current()
    db.ensure_connection()
    return psycopg.ClientCursor(db.connection).mogrify


@dataclass(frozen=True)
class ModelStatements:
    model: type[models.Model]
    id_field: str
    #: every concrete column, in ``_meta`` order (``columns_of``, ``instances_from_rows``)
    select: str
    insert: str
    #: what an insert writes: every concrete field but an auto primary key
    insert_fields: tuple[models.Field[Any, Any], ...]

    def load_sql(self, idents: Collection[str]) -> str:
        """The SELECT of the rows of ``idents`` (parameters: the group, then ``idents``);
        ``instances_from_rows`` reads its rows."""
        return self.select.format(_placeholders(len(idents)))

    def create_many(self, group_id: str, rows: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        """Insert, for each ``(ident, fields)``, the row the ORM's
        ``create(group_id=…, <id_field>=ident, **fields)`` would: one ``executemany``."""
        self.insert_rows([{"group_id": group_id, self.id_field: i, **f} for i, f in rows])

    def insert_rows(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Insert each of ``rows`` (values by field ``attname``) as
        ``Model.objects.create(**row)`` would: a value not given takes the field's default,
        and each goes through ``get_db_prep_save``. Without building a model instance per
        row, which cost a sixth of a batch's CPU, unless a field's ``pre_save`` does more
        than read the value (``auto_now``, files) or a row names something else."""
        if not rows:
            return
        names = _plain_attnames(self.model)
        if names is None or any(not row.keys() <= names for row in rows):
            self.insert_instances([self.model(**row) for row in rows])
            return
        db, fields = current(), self.insert_fields
        preps = _preps(fields)
        values = [
            [
                prep(row[field.attname] if field.attname in row else field.get_default(), db)
                for field, prep in zip(fields, preps, strict=True)
            ]
            for row in rows
        ]
        with hot_cursor() as cursor:
            cursor.executemany(self.insert, values)

    def insert_instances(self, instances: Sequence[models.Model]) -> None:
        """Insert ``instances`` as ``save()`` would (defaults, ``pre_save``, JSON adapters),
        without setting their primary keys: one ``executemany``."""
        if not instances:
            return
        db = current()
        preps = _preps(self.insert_fields)
        values = [
            [
                prep(field.pre_save(instance, True), db)
                for field, prep in zip(self.insert_fields, preps, strict=True)
            ]
            for instance in instances
        ]
        with hot_cursor() as cursor:
            cursor.executemany(self.insert, values)

    def update_many(self, group_id: str, rows: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        """``filter(group_id=…, <id_field>=ident).update(**fields)`` for each
        ``(ident, fields)``: one ``executemany`` per set of column names (a projection's
        ``to_fields`` always gives the same), or on PostgreSQL, from ``UPDATE_FROM_ROWS``
        rows, one ``UPDATE … FROM (VALUES …)`` of them all (``_update_from_values``)."""
        by_names: dict[tuple[str, ...], list[list[Any]]] = {}
        db = current()
        for ident, fields in rows:
            names = tuple(fields)
            _sql, targets = _update(self.model, self.id_field, names, db.vendor)
            values = [
                prep(fields[name], db) for name, prep in zip(names, _preps(targets), strict=True)
            ]
            by_names.setdefault(names, []).append([*values, group_id, ident])
        with hot_cursor() as cursor:
            for names, params in by_names.items():
                if db.vendor == "postgresql" and len(params) >= UPDATE_FROM_ROWS:
                    # inside ``sent_as_one``, one statement of all the rows (``_Collected``)
                    sql = _update_from_values(self.model, self.id_field, names)
                else:
                    sql, _targets = _update(self.model, self.id_field, names, db.vendor)
                cursor.executemany(sql, params)


@cache
def _plain_attnames(model: type[models.Model]) -> frozenset[str] | None:
    """The attnames of ``model``'s concrete fields when saving a new row reads each value
    as given (``Field.pre_save``, or a date without ``auto_now``); ``None`` otherwise."""
    fields = _concrete(model)
    for field in fields:
        plain = type(field).pre_save is models.Field.pre_save or (
            isinstance(field, models.DateField) and not field.auto_now and not field.auto_now_add
        )
        if not plain:
            return None
    return frozenset(field.attname for field in fields)


@cache
def _update(
    model: type[models.Model], id_field: str, names: tuple[str, ...], _vendor: str
) -> tuple[str, tuple[models.Field[Any, Any], ...]]:
    """The UPDATE of the columns ``names`` (a projection's ``to_fields`` keys, always the
    same few per model), and their fields."""
    meta = model._meta
    targets = tuple(meta.get_field(name) for name in names)
    assignments = ", ".join(f"{_q(field.column)} = %s" for field in targets)
    id_column = _q(meta.get_field(id_field).column)
    # identifiers from the model's _meta, quoted; every value is a parameter
    sql = f"UPDATE {_q(meta.db_table)} SET {assignments} WHERE {_q('group_id')} = %s AND {id_column} = %s"  # noqa: E501, S608
    return sql, targets


#: from this many rows of one table, ``update_many`` sends one set-based ``UPDATE`` on
#: PostgreSQL (a sweep's group: one per reassigned WorkItem), which the server parses,
#: plans and starts once, where one statement per row cost each of those per row
UPDATE_FROM_ROWS = 32
#: a type's modifier: ``(16)`` of ``varchar(16)``, ``(10, 2)`` of ``numeric(10, 2)``
_TYPE_MODIFIER = re.compile(r"\(\s*\d+(?:\s*,\s*\d+)?\s*\)")


@cache
def _update_from_values(model: type[models.Model], id_field: str, names: tuple[str, ...]) -> str:
    """``_update``'s statement as one row of a set-based one: ``UPDATE t SET c = v.c, …
    FROM (VALUES (%s, …)) AS v WHERE`` the group and the id match, its parameters in
    ``_update``'s order (the columns ``names``, the group, the id). ``_Collected`` sends
    it with all the rows of an ``executemany`` in its ``VALUES``, each quoted on its own
    (a row's placeholders are few, so psycopg parses them once, where one statement of
    thousands of placeholders it would parse again every time); a plain cursor runs it
    once per row, which updates the same rows.

    Each assigned value is cast to its column's type: a ``VALUES`` column takes its type
    from its values, and one whose values are all ``NULL`` or quoted text would be
    ``text``, which PostgreSQL does not assign to ``jsonb`` or ``timestamptz`` without a
    cast. The cast names the type without its modifier (``varchar``, not ``varchar(16)``):
    an explicit cast to a length truncates, where the assignment refuses a value too long
    as ``_update``'s does. Rows whose keys match no row update nothing, as ``_update``'s
    would; the keys of one run are distinct (one staged aggregate per key)."""
    meta, db = model._meta, current()
    targets = [meta.get_field(name) for name in names]
    keys = [meta.get_field("group_id"), meta.get_field(id_field)]
    columns = [_q(field.column) for field in (*targets, *keys)]
    row = f"({_placeholders(len(columns))})"  # one row: ``_Collected`` adds the others
    assignments = ", ".join(
        f"{column} = v.{column}::{_TYPE_MODIFIER.sub('', field.db_type(db) or 'text')}"
        for column, field in zip(columns, targets, strict=False)
    )
    matches = " AND ".join(f"t.{column} = v.{column}" for column in columns[len(targets) :])
    # identifiers from the model's _meta, quoted; every value is a parameter
    return (
        f"UPDATE {_q(meta.db_table)} AS t SET {assignments} "  # noqa: S608
        f"FROM (VALUES {row}) AS v ({', '.join(columns)}) "
        f"WHERE {matches}"
    )


def _q(name: str) -> str:
    return connection.ops.quote_name(name)


def _placeholders(count: int) -> str:
    return ", ".join(["%s"] * count)


def _convert(
    value: Any, converters: tuple[tuple[Converter, Any], ...], db: BaseDatabaseWrapper
) -> Any:
    for converter, expression in converters:
        value = converter(value, expression, db)
    return value


@cache
def _converters(
    model: type[models.Model], _vendor: str
) -> tuple[tuple[tuple[Converter, Any], ...], ...]:
    """Per column, the converters the ORM's compiler applies (backend first, then field),
    cached per model and backend."""
    table = model._meta.db_table
    out = []
    for field in _concrete(model):
        column = field.get_col(table)
        found = connection.ops.get_db_converters(column) + field.get_db_converters(connection)
        load = jsoncolumns.loader(field)
        if load is not None:  # orjson in place of JSONField.from_db_value (``jsoncolumns``)
            found = [
                *(c for c in found if getattr(c, "__func__", None) is not _JSON_FROM_DB),
                lambda value, _expression, _connection, load=load: load(value),
            ]
        out.append(tuple((converter, column) for converter in found))
    return tuple(out)


_JSON_FROM_DB = models.JSONField.from_db_value


@cache
def _preps(fields: tuple[models.Field[Any, Any], ...]) -> tuple[jsoncolumns.Prep, ...]:
    """Per field, how the hot path prepares a value: ``get_db_prep_save``, through orjson for
    plain JSON columns (``jsoncolumns``)."""
    return tuple(jsoncolumns.prep(field) for field in fields)


def _concrete(model: type[models.Model]) -> tuple[models.Field[Any, Any], ...]:
    return tuple(model._meta.concrete_fields)


def statements_for(model: type[models.Model], id_field: str) -> ModelStatements:
    return _statements(model, id_field, current().vendor)


@cache
def _statements(model: type[models.Model], id_field: str, _vendor: str) -> ModelStatements:
    meta = model._meta
    fields = _concrete(model)
    table = _q(meta.db_table)
    columns = ", ".join(_q(field.column) for field in fields)
    id_column = _q(meta.get_field(id_field).column)
    # identifiers from the model's _meta, quoted; every value is a parameter
    select = f"SELECT {columns} FROM {table} WHERE {_q('group_id')} = %s AND {id_column} IN ({{}})"  # noqa: S608
    insert_fields = tuple(field for field in fields if field is not meta.auto_field)
    names = ", ".join(_q(field.column) for field in insert_fields)
    insert = f"INSERT INTO {table} ({names}) VALUES ({_placeholders(len(insert_fields))})"  # noqa: S608
    return ModelStatements(model, id_field, select, insert, insert_fields)


def columns_of(model: type[models.Model], alias: str) -> str:
    """Every concrete column of ``model`` as ``alias."column"``, in ``_meta`` order: the
    select list ``instances_from_rows`` reads."""
    return ", ".join(f"{alias}.{_q(field.column)}" for field in _concrete(model))


def instances_from_rows(model: type[models.Model], rows: Iterable[Sequence[Any]]) -> list[Any]:
    """Model instances from rows that begin with every concrete column (``columns_of``),
    converted as the ORM converts them; extra trailing values are ignored."""
    db = current()
    converters = _converters(model, db.vendor)
    names = [field.attname for field in _concrete(model)]
    instances = []
    for row in rows:
        values = [
            _convert(value, field_converters, db)
            for value, field_converters in zip(row, converters, strict=False)
        ]
        instances.append(model.from_db(db.alias, names, values))
    return instances


def insert_rows(model: type[models.Model], rows: Sequence[Mapping[str, Any]]) -> None:
    """``model.objects.create(**values)`` for each of ``rows`` through the compiled INSERT,
    in one ``executemany`` (the primary keys of the new rows are not read back)."""
    statements_for(model, model._meta.pk.name).insert_rows(rows)
