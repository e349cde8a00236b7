"""Migration operations for group-scoped tables: lead the primary key with the group column
(``LeadPrimaryKeyWithGroup``), and drop the index on the group column alone
(``DropGroupOnlyIndex``).

Issue 15 §6 asks that every group-scoped table's primary and unique keys lead with
``group_id``, so the log can be sharded by group on a distributed PostgreSQL (Citus enforces a
primary key or unique constraint only when it contains the distribution column; see
docs/deploy.md). The unique constraints are ordinary model constraints. The primary keys are
not, and this operation changes them in the database only, for three reasons:

- Django cannot migrate an existing table to a ``CompositePrimaryKey``, so the ORM form would
  mean creating every such table anew and copying its rows (the event log included).
- The surrogate ``id`` is what the ORM, the admin, the outbox (``PendingFollowUp.pk``) and the
  compiled statements (``apps.ledger.statements``, whose INSERT leaves out the auto field)
  address and order rows by. They keep doing so: only the database's key changes, to
  ``(group_id, id)``. ``id`` is still filled from its identity sequence, so it stays unique in
  practice; the database no longer enforces that on its own, which is exactly what a
  distributed PostgreSQL cannot enforce either. No foreign key points at these tables' ``id``
  (``tests/ledger/test_schema_keys.py`` checks it), so none needs the old key.
- SQLite, the embedded default, is one file on one host with nothing to shard: it keeps its
  ``id`` primary key, which it could only change by rebuilding each table. The operation does
  nothing there.

A later ``AlterField`` of such an ``id`` would have Django drop this key and create
``PRIMARY KEY (id)`` again; the schema test then fails, which is the reminder to run this
operation once more after it.
"""

from __future__ import annotations

from typing import Any

from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.operations.base import Operation
from django.db.migrations.state import ProjectState


class _GroupFieldOperation(Operation):
    """A reversible operation on one model and the field that holds its rows' group
    (``group`` for a foreign key to ``registry.Group``, whose column is ``group_id``)."""

    reversible = True
    reduces_to_sql = True

    def __init__(self, model_name: str, group_field: str = "group") -> None:
        self.model_name = model_name
        self.group_field = group_field

    def deconstruct(self) -> tuple[str, list[Any], dict[str, Any]]:
        return (
            self.__class__.__qualname__,
            [],
            {"model_name": self.model_name, "group_field": self.group_field},
        )

    def _migrated_model(
        self, app_label: str, state: ProjectState, schema_editor: BaseDatabaseSchemaEditor
    ) -> Any | None:
        """The model as of ``state``, or ``None`` where a router keeps it off this database."""
        model = state.apps.get_model(app_label, self.model_name)
        if not self.allow_migrate_model(schema_editor.connection.alias, model):
            return None
        return model


class LeadPrimaryKeyWithGroup(_GroupFieldOperation):
    """``PRIMARY KEY (id)`` → ``PRIMARY KEY (<group column>, id)`` on PostgreSQL; reversible.
    The model state is unchanged.
    """

    def state_forwards(self, app_label: str, state: ProjectState) -> None:
        """Nothing: ``id`` stays the ORM's primary key (see the module docstring)."""

    def database_forwards(
        self,
        app_label: str,
        schema_editor: BaseDatabaseSchemaEditor,
        from_state: ProjectState,
        to_state: ProjectState,
    ) -> None:
        model = to_state.apps.get_model(app_label, self.model_name)
        meta = model._meta
        group_column = meta.get_field(self.group_field).column
        self._set_primary_key(schema_editor, model, [group_column, meta.pk.column])

    def database_backwards(
        self,
        app_label: str,
        schema_editor: BaseDatabaseSchemaEditor,
        from_state: ProjectState,
        to_state: ProjectState,
    ) -> None:
        model = to_state.apps.get_model(app_label, self.model_name)
        self._set_primary_key(schema_editor, model, [model._meta.pk.column])

    def describe(self) -> str:
        return f"Lead the primary key of {self.model_name} with {self.group_field} (PostgreSQL)"

    @property
    def migration_name_fragment(self) -> str:
        return f"{self.model_name.lower()}_group_leading_pk"

    def _set_primary_key(
        self, schema_editor: BaseDatabaseSchemaEditor, model: Any, columns: list[str]
    ) -> None:
        connection = schema_editor.connection
        if connection.vendor != "postgresql":
            return
        if not self.allow_migrate_model(connection.alias, model):
            return
        table = model._meta.db_table
        with connection.cursor() as cursor:
            constraints = connection.introspection.get_constraints(cursor, table)
        [(name, current)] = [
            (name, info["columns"]) for name, info in constraints.items() if info["primary_key"]
        ]
        if current == columns:
            return
        quote = schema_editor.quote_name
        keys = ", ".join(quote(column) for column in columns)
        # One statement: the table is never without a primary key, and the name is kept, so
        # Django's own introspection (``_constraint_names(primary_key=True)``) still finds it.
        schema_editor.execute(
            f"ALTER TABLE {quote(table)} DROP CONSTRAINT {quote(name)}, "
            f"ADD CONSTRAINT {quote(name)} PRIMARY KEY ({keys})"
        )


class DropGroupOnlyIndex(_GroupFieldOperation):
    """Drop the index Django gives a foreign key to the group (``group_id`` alone, and its
    ``varchar_pattern_ops`` twin on PostgreSQL) and record ``db_index=False`` on the field.

    Every group-scoped table's keys lead with ``group_id`` (``LeadPrimaryKeyWithGroup``), so
    the single-column index serves no query the keys do not, and costs every insert two
    index writes on every insert (six indexes on ``ledger_event`` became four). It also
    gave the planner one more wrong choice: with a table's statistics still empty, a generic
    plan may read ``WHERE group_id = $1 AND x = $2`` through any index that leads with
    ``group_id`` and walk the whole group (measured while trying prepared statements; see
    docs/benchmarks.md).

    Unlike ``AlterField``, it never rebuilds the table on SQLite (which would drop the log's
    immutability triggers): ``DROP INDEX`` is enough on both databases.
    """

    def state_forwards(self, app_label: str, state: ProjectState) -> None:
        self._set_db_index(app_label, state, db_index=False)

    def state_backwards(self, app_label: str, state: ProjectState) -> None:
        self._set_db_index(app_label, state, db_index=True)

    def _set_db_index(self, app_label: str, state: ProjectState, *, db_index: bool) -> None:
        model_state = state.models[app_label, self.model_name.lower()]
        field = model_state.fields[self.group_field].clone()
        field.db_index = db_index
        state.alter_field(app_label, self.model_name.lower(), self.group_field, field, True)

    def database_forwards(
        self,
        app_label: str,
        schema_editor: BaseDatabaseSchemaEditor,
        from_state: ProjectState,
        to_state: ProjectState,
    ) -> None:
        model = self._migrated_model(app_label, to_state, schema_editor)
        if model is None:
            return
        column = model._meta.get_field(self.group_field).column
        connection = schema_editor.connection
        with connection.cursor() as cursor:
            constraints = connection.introspection.get_constraints(cursor, model._meta.db_table)
        for name, info in constraints.items():
            if (
                info["index"]
                and info["columns"] == [column]
                and not info["unique"]
                and not info["primary_key"]
            ):
                schema_editor.execute(f"DROP INDEX {schema_editor.quote_name(name)}")

    def database_backwards(
        self,
        app_label: str,
        schema_editor: BaseDatabaseSchemaEditor,
        from_state: ProjectState,
        to_state: ProjectState,
    ) -> None:
        model = self._migrated_model(app_label, to_state, schema_editor)
        if model is None:
            return
        field = model._meta.get_field(self.group_field)
        schema_editor.execute(schema_editor._create_index_sql(model, fields=[field]))
        like = getattr(schema_editor, "_create_like_index_sql", None)
        if like is not None and (statement := like(model, field)) is not None:
            schema_editor.execute(statement)

    def describe(self) -> str:
        return f"Drop the index of {self.model_name}.{self.group_field} alone"

    @property
    def migration_name_fragment(self) -> str:
        return f"{self.model_name.lower()}_no_group_only_index"
