"""Start the producer at each existing group's head (issue 36): a deployment that gains
notifications is not told about its whole past. Groups made later start at sequence 0."""

from django.db import migrations


def start_at_heads(apps, schema_editor):
    GroupLog = apps.get_model("ledger", "GroupLog")
    Cursor = apps.get_model("notifications", "NotificationCursor")
    Cursor.objects.bulk_create(
        [
            Cursor(group_id=group_id, sequence=head)
            for group_id, head in GroupLog.objects.values_list("group_id", "head_sequence")
        ],
        ignore_conflicts=True,
    )


class Migration(migrations.Migration):
    dependencies = [
        ("notifications", "0001_initial"),
        ("ledger", "0011_signed_heads"),
    ]

    operations = [migrations.RunPython(start_at_heads, migrations.RunPython.noop)]
