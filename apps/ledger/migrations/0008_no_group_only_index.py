"""The log, its archive, the command records and the snapshots no longer carry an index on
``group_id`` alone (issue 15).

Their keys lead with ``group_id``, which serves every query by group; the foreign key's own
index (and its ``varchar_pattern_ops`` twin on PostgreSQL) only costs index writes. See
``apps.ledger.group_keys.DropGroupOnlyIndex``.
"""

from django.db import migrations

from apps.ledger.group_keys import DropGroupOnlyIndex


class Migration(migrations.Migration):
    dependencies = [("ledger", "0007_group_leading_keys")]

    operations = [
        DropGroupOnlyIndex("event"),
        DropGroupOnlyIndex("archivedevent"),
        DropGroupOnlyIndex("commandrecord"),
        DropGroupOnlyIndex("snapshot"),
    ]
