"""The application's own PostgreSQL role: it may write the log, never rewrite, empty or
disable it (issue 16 §4, docs/deploy.md "Database roles").

The schema belongs to the role that runs the migrations. The servers and Celery workers
can connect as another role that owns nothing, granted here what the product needs and no
more:

- every table: ``SELECT, INSERT, UPDATE, DELETE`` (projections, sessions, Django's tables…),
  and the identity sequences their ids come from;
- the online log ``ledger_event``: no ``UPDATE``, no ``DELETE``; the archive
  ``ledger_archivedevent``: no ``INSERT``, ``UPDATE`` or ``DELETE``; the head rows
  ``ledger_grouplog``: no ``DELETE``, and ``UPDATE`` of the head columns only, never of the
  floor ``archived_through``. Archiving moves events through ``ledger_archive_through``, a
  function owned by the schema owner that runs with its rights (migration
  ``0010_archive_floor``): the role may ``EXECUTE`` it, and it moves only events at or below
  the floor it raises, so the role has no way to remove, replace or re-insert an event above
  the floor (issue 33 §1);
- the signed heads ``ledger_signedhead``: no ``UPDATE``, no ``DELETE`` (R16-11: a head once
  signed stays what it was);
- nowhere ``TRUNCATE``, ``TRIGGER`` or ``REFERENCES``; and owning nothing, the role cannot
  ``ALTER TABLE … DISABLE TRIGGER``, drop a trigger, or set ``session_replication_role``
  (a superuser's setting) to skip them.

The grants run after every ``migrate`` when ``MWP_APP_DB_ROLE`` names the role (a
``post_migrate`` handler, so tables added later are covered), or by hand with
``manage.py grant_app_role <role>``. The role itself is created by whoever administers the
database (``CREATE ROLE … LOGIN``); a role that is a superuser, may bypass row security or
owns any table of the schema is refused, since it could undo all of this.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import connections, transaction

#: table → privileges the application role does not get on it (beyond TRUNCATE everywhere)
WITHHELD: dict[str, tuple[str, ...]] = {
    "ledger_event": ("UPDATE", "DELETE"),
    "ledger_archivedevent": ("INSERT", "UPDATE", "DELETE"),
    "ledger_grouplog": ("UPDATE", "DELETE"),
    "ledger_signedhead": ("UPDATE", "DELETE"),
}

#: table → the columns the role may still ``UPDATE`` where the table's ``UPDATE`` is withheld
UPDATABLE_COLUMNS: dict[str, tuple[str, ...]] = {"ledger_grouplog": ("head_sequence", "head_hash")}

#: the functions the role may run, with the rights of their owner (``SECURITY DEFINER``)
EXECUTABLE = ("ledger_archive_through(text, bigint)",)

_ROLE = "SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = %s"
_OWNED = """
SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'v', 'm', 'S')
  AND c.relowner = (SELECT oid FROM pg_roles WHERE rolname = %s)
ORDER BY c.relname
"""


def grant_app_privileges(role: str, *, using: str = "default") -> None:
    """Grant ``role`` exactly the privileges of the module docstring on the current schema
    of the ``using`` database (PostgreSQL only); idempotent."""
    connection = connections[using]
    if connection.vendor != "postgresql":
        raise ImproperlyConfigured("database roles are a PostgreSQL feature")
    role_name = connection.ops.quote_name(role)
    # one transaction: a server already connected as the role never sees the moment between
    # the REVOKE and the GRANTs
    with transaction.atomic(using=using), connection.cursor() as cursor:
        _check_role(cursor, role)
        cursor.execute("SELECT current_schema()")
        (schema,) = cursor.fetchone()
        schema_name = connection.ops.quote_name(schema)
        statements = [
            f"GRANT USAGE ON SCHEMA {schema_name} TO {role_name}",
            f"REVOKE ALL ON ALL TABLES IN SCHEMA {schema_name} FROM {role_name}",
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {schema_name} "
            f"TO {role_name}",
            f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA {schema_name} TO {role_name}",
            *(
                f"REVOKE {', '.join(privileges)} ON {connection.ops.quote_name(table)} "
                f"FROM {role_name}"
                for table, privileges in WITHHELD.items()
            ),
            *(
                f"GRANT UPDATE ({', '.join(columns)}) ON {connection.ops.quote_name(table)} "
                f"TO {role_name}"
                for table, columns in UPDATABLE_COLUMNS.items()
            ),
            *(f"GRANT EXECUTE ON FUNCTION {function} TO {role_name}" for function in EXECUTABLE),
        ]
        for statement in statements:
            cursor.execute(statement)


def _check_role(cursor: Any, role: str) -> None:
    cursor.execute(_ROLE, [role])
    found = cursor.fetchone()
    if found is None:
        raise ImproperlyConfigured(f"no database role {role!r}: create it first (docs/deploy.md)")
    superuser, bypasses_rls = found
    if superuser or bypasses_rls:
        raise ImproperlyConfigured(
            f"{role!r} is a superuser or bypasses row security: it could disable the log's "
            "triggers; the application role must be an ordinary one"
        )
    cursor.execute(_OWNED, [role])
    owned = [name for (name,) in cursor.fetchall()]
    if owned:
        raise ImproperlyConfigured(
            f"{role!r} owns {', '.join(owned[:5])}{'…' if len(owned) > 5 else ''}: an owner can "
            "disable triggers; run the migrations as another role"
        )


def grant_after_migrate(using: str = "default", **_kwargs: Any) -> None:
    """``post_migrate``: re-grant ``MWP_APP_DB_ROLE`` (if set) so new tables are covered."""
    if settings.MWP_APP_DB_ROLE and connections[using].vendor == "postgresql":
        grant_app_privileges(settings.MWP_APP_DB_ROLE, using=using)
