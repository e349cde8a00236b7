"""The artifact references of a group no longer carries an index on ``group_id`` alone (issue 15).

Its keys leads with ``group_id``, which serves every query by group; the foreign key's own
index (and its ``varchar_pattern_ops`` twin on PostgreSQL) only costs index writes. See
``apps.ledger.group_keys.DropGroupOnlyIndex``.
"""

from django.db import migrations

from apps.ledger.group_keys import DropGroupOnlyIndex


class Migration(migrations.Migration):
    dependencies = [("artifacts", "0002_group_leading_keys")]

    operations = [
        DropGroupOnlyIndex("groupartifact"),
    ]
