"""Issue 36 §5: the Mission projection keeps ``change_requests`` (``mission.changes_requested``).

No log holds that event yet, so every existing mission has none: an empty list, no replay.
"""

from django.db import migrations, models

import apps.ledger.projections


class Migration(migrations.Migration):
    dependencies = [
        ("work", "0013_attempts_count_fresh_starts"),
    ]

    operations = [
        migrations.AddField(
            model_name="mission",
            name="change_requests",
            field=models.JSONField(
                decoder=apps.ledger.projections.ProjectionJSONDecoder, default=list
            ),
        ),
    ]
