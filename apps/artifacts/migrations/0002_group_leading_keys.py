"""The group artifact projection's primary key leads with the group (issue 15 §6).

``artifacts_groupartifact`` is the store's one group-scoped table: its unique key
``artifact_once_per_group`` is ``(group_id, digest)`` already, and its primary key becomes
``(group_id, id)`` on PostgreSQL while the ORM keeps ``id`` (see
:mod:`apps.ledger.group_keys`, which also says why SQLite keeps ``PRIMARY KEY (id)``). Blobs,
uploads and corruption reports are keyed by digest, not group: docs/deploy.md makes them
reference tables.
"""

from django.db import migrations

from apps.ledger.group_keys import LeadPrimaryKeyWithGroup


class Migration(migrations.Migration):
    dependencies = [("artifacts", "0001_initial")]

    operations = [LeadPrimaryKeyWithGroup("groupartifact")]
