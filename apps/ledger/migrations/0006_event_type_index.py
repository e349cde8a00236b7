from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("ledger", "0005_archive"),
        ("registry", "0001_initial"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="event",
            index=models.Index(fields=["group", "type", "sequence"], name="event_group_type"),
        ),
    ]
