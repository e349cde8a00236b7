"""The membership projection's primary key leads with the group (issue 15 §6).

``registry_membership`` is the one group-scoped table of the registry: its unique key
``membership_once`` is ``(group_id, principal)`` already, and its primary key becomes
``(group_id, id)`` on PostgreSQL while the ORM keeps ``id`` (see
:mod:`apps.ledger.group_keys`, which also says why SQLite keeps ``PRIMARY KEY (id)``). The
registry's other tables (organisations, groups, agents, their keys, cards and sessions) are
not per group: docs/deploy.md makes them reference tables.
"""

from django.db import migrations

from apps.ledger.group_keys import LeadPrimaryKeyWithGroup


class Migration(migrations.Migration):
    dependencies = [("registry", "0001_initial")]

    operations = [LeadPrimaryKeyWithGroup("membership")]
