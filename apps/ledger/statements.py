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

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from django.db import connection, models

Converter = Callable[[Any, Any, Any], Any]


@dataclass(frozen=True)
class ModelStatements:
    model: type[models.Model]
    id_field: str
    #: every concrete column, in ``_meta`` order (``columns_of``, ``instances_from_rows``)
    select: str
    insert: str
    #: what an insert writes: every concrete field but an auto primary key
    insert_fields: tuple[models.Field[Any, Any], ...]

    def load(self, group_id: str, idents: Collection[str]) -> list[models.Model]:
        """The rows of ``idents`` in ``group_id`` as model instances (``Model.from_db``)."""
        with connection.cursor() as cursor:
            cursor.execute(self.select.format(_placeholders(len(idents))), [group_id, *idents])
            rows = cursor.fetchall()
        return instances_from_rows(self.model, rows)

    def create(self, group_id: str, ident: str, fields: Mapping[str, Any]) -> None:
        """Insert the row the ORM's ``create(group_id=…, <id_field>=…, **fields)`` would."""
        self.insert_instance(self.model(group_id=group_id, **{self.id_field: ident}, **fields))

    def insert_instance(self, instance: models.Model) -> None:
        """Insert ``instance`` as ``save()`` would (defaults, ``pre_save``, JSON adapters),
        without setting its primary key."""
        values = [
            field.get_db_prep_save(field.pre_save(instance, True), connection)
            for field in self.insert_fields
        ]
        with connection.cursor() as cursor:
            cursor.execute(self.insert, values)

    def update(self, group_id: str, ident: str, fields: Mapping[str, Any]) -> None:
        """``filter(group_id=…, <id_field>=…).update(**fields)``."""
        sql, targets = _update(self.model, self.id_field, tuple(fields), connection.vendor)
        values = [
            field.get_db_prep_save(fields[name], connection)
            for name, field in zip(fields, targets, strict=True)
        ]
        with connection.cursor() as cursor:
            cursor.execute(sql, [*values, group_id, ident])


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


def _q(name: str) -> str:
    return connection.ops.quote_name(name)


def _placeholders(count: int) -> str:
    return ", ".join(["%s"] * count)


def _convert(value: Any, converters: tuple[tuple[Converter, Any], ...]) -> Any:
    for converter, expression in converters:
        value = converter(value, expression, connection)
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
        out.append(tuple((converter, column) for converter in found))
    return tuple(out)


def _concrete(model: type[models.Model]) -> tuple[models.Field[Any, Any], ...]:
    return tuple(model._meta.concrete_fields)


def statements_for(model: type[models.Model], id_field: str) -> ModelStatements:
    return _statements(model, id_field, connection.vendor)


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
    converters = _converters(model, connection.vendor)
    names = [field.attname for field in _concrete(model)]
    instances = []
    for row in rows:
        values = [
            _convert(value, field_converters)
            for value, field_converters in zip(row, converters, strict=False)
        ]
        instances.append(model.from_db(connection.alias, names, values))
    return instances


def insert_row(model: type[models.Model], **values: Any) -> None:
    """``model.objects.create(**values)`` through the compiled INSERT (the primary key of
    the new row is not read back)."""
    statements_for(model, model._meta.pk.name).insert_instance(model(**values))


def rows_by_ident(
    statements: ModelStatements, group_id: str, idents: Iterable[str]
) -> dict[str, models.Model]:
    wanted = sorted(set(idents))
    if not wanted:
        return {}
    return {getattr(row, statements.id_field): row for row in statements.load(group_id, wanted)}
