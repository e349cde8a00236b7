"""The ACK cursor's keys lead with the group (issue 15 §6, docs/deploy.md).

- ``cursor_once`` becomes ``(group_id, principal)`` (it was ``(principal, group_id)``). It is
  still the conflict target of the cursor upsert (``apps.stream.cursors``): PostgreSQL and
  SQLite infer an ``ON CONFLICT (principal, group_id)`` target by its set of columns, not
  their order. No query reads cursors by principal alone; the admin's list of a group's
  cursors (``group_cursors``: one group, by principal) now walks this index in order.
- The primary key becomes ``(group_id, id)`` on PostgreSQL; the ORM keeps ``id`` (see
  :mod:`apps.ledger.group_keys`, which also says why SQLite keeps ``PRIMARY KEY (id)``).
"""

from django.db import migrations, models

from apps.ledger.group_keys import LeadPrimaryKeyWithGroup


class Migration(migrations.Migration):
    dependencies = [
        ("registry", "0001_initial"),
        ("stream", "0001_ack_cursors"),
    ]

    operations = [
        migrations.RemoveConstraint(model_name="cursor", name="cursor_once"),
        migrations.AddConstraint(
            model_name="cursor",
            constraint=models.UniqueConstraint(fields=("group", "principal"), name="cursor_once"),
        ),
        LeadPrimaryKeyWithGroup("cursor"),
    ]
