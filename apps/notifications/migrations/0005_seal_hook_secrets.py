"""Hook URLs and signing keys are stored sealed (``apps.notifications.sealed``): the columns
become sealed text, and every hook written before is sealed under the current key."""

from django.db import migrations

import apps.notifications.sealed


def seal_existing(apps, schema_editor):
    """Each hook read (an unsealed value reads as it is) and written back sealed."""
    hooks = apps.get_model("notifications", "GroupHook")
    for hook in hooks.objects.all().only("id", "url", "secret"):
        hook.save(update_fields=["url", "secret"])


class Migration(migrations.Migration):
    dependencies = [("notifications", "0004_group_hooks")]

    operations = [
        migrations.AlterField(
            model_name="grouphook",
            name="url",
            field=apps.notifications.sealed.SealedTextField(),
        ),
        migrations.AlterField(
            model_name="grouphook",
            name="secret",
            field=apps.notifications.sealed.SealedTextField(blank=True, default=""),
        ),
        migrations.RunPython(seal_existing, migrations.RunPython.noop),
    ]
