"""Several JSON paths of one ``data`` column, with the column decompressed once per row.

A WorkItem's projection (``data``, a few KB) is stored compressed out of line by PostgreSQL,
and every ``data -> 'key'`` in a query decompresses it again: on a 1,000-item mission, six
paths of every row cost ~80 ms of database time, one path ~15 ms (``EXPLAIN ANALYZE``, issue
37). ``paths_once`` reads the column once in a sub-select that forces it decompressed
(``|| '{}'``, a new in-memory value; ``OFFSET 0`` keeps the planner from folding the
sub-select back in), then takes every path from that value: six paths then cost about what
one did. SQLite (the embedded default) takes each path with its ``->`` operator, which keeps
a JSON null, true and false as JSON: Django's key transform there reads them through
``JSON_TYPE`` as the strings "null", "true", "false", and a mission page on the embedded
default listed every WorkItem as "carries on the work of null". Other databases get the
plain ``JSON_ARRAY`` of the paths.
"""

from __future__ import annotations

from typing import Any

from django.db.models import F, Func, JSONField
from django.db.models.fields.json import KeyTransform
from django.db.models.functions import JSONArray


class PathsOnce(Func):
    """A JSON array of ``data`` at each ``a__b__c`` path (``-1`` indexes an array's last)."""

    output_field = JSONField()

    def __init__(self, column: str, paths: tuple[str, ...]) -> None:
        super().__init__(F(column))
        self.paths = paths

    def _transforms(self) -> list[Any]:
        column = self.source_expressions[0]
        transforms = []
        for path in self.paths:
            expression: Any = column
            for key in path.split("__"):
                expression = KeyTransform(key, expression)
            transforms.append(expression)
        return transforms

    def as_sql(self, compiler: Any, connection: Any, **extra: Any) -> tuple[str, Any]:
        return compiler.compile(JSONArray(*self._transforms()))

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> tuple[str, Any]:
        column, params = compiler.compile(self.source_expressions[0])
        parts, values = [], []
        for path in self.paths:
            parts.append(f"({column} -> %s)")
            values.extend([*params, connection.ops.compile_json_path(path.split("__"))])
        return f"JSON_ARRAY({', '.join(parts)})", tuple(values)

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> tuple[str, Any]:
        column, params = compiler.compile(self.source_expressions[0])
        parts = ", ".join("once.d #> %s" for _ in self.paths)
        arrays = ["{" + ",".join(path.split("__")) + "}" for path in self.paths]
        # the column's SQL is the compiler's; every path goes as a parameter
        sql = (
            f"(SELECT JSONB_BUILD_ARRAY({parts}) "  # noqa: S608
            f"FROM (SELECT ({column} || '{{}}'::jsonb) AS d OFFSET 0) AS once)"
        )
        return sql, (*params, *arrays)


def paths_once(*paths: str) -> PathsOnce:
    """``data`` at each path, as one JSON array per row (see the module's docstring)."""
    return PathsOnce("data", paths)
