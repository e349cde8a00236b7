"""A hook remembers the group's head when it was added (``GroupHook.after_sequence``) and is
told only of later events. Hooks added before keep 0: they were already receiving everything."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("notifications", "0005_seal_hook_secrets")]

    operations = [
        migrations.AddField(
            model_name="grouphook",
            name="after_sequence",
            field=models.PositiveBigIntegerField(default=0),
        ),
    ]
